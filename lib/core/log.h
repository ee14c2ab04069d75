// Logging: one spdlog logger per component ("onnx", "sched", "cost", "exec",
// "cuda", "cli"), all writing to stderr so stdout stays machine-readable.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace ios {

enum class Verbosity { kQuiet, kNormal, kVerbose };

// Sets the level of every ios logger (existing and future).
void set_verbosity(Verbosity verbosity);

// The logger of one component, created on first use.
std::shared_ptr<spdlog::logger> logger(const std::string& component);

// True when stderr is a terminal (progress lines are shown only then).
bool stderr_is_tty();

}  // namespace ios
