#include "core/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <unistd.h>

#include <mutex>

namespace ios {
namespace {

std::mutex g_mutex;
spdlog::level::level_enum g_level = spdlog::level::info;

}  // namespace

void set_verbosity(Verbosity verbosity) {
  std::lock_guard lock(g_mutex);
  switch (verbosity) {
    case Verbosity::kQuiet: g_level = spdlog::level::err; break;
    case Verbosity::kNormal: g_level = spdlog::level::info; break;
    case Verbosity::kVerbose: g_level = spdlog::level::debug; break;
  }
  spdlog::apply_all([](const std::shared_ptr<spdlog::logger>& l) { l->set_level(g_level); });
}

std::shared_ptr<spdlog::logger> logger(const std::string& component) {
  std::lock_guard lock(g_mutex);
  if (auto existing = spdlog::get(component)) return existing;
  auto created = spdlog::stderr_color_mt(component);
  created->set_pattern("[%n] %^%l%$: %v");
  created->set_level(g_level);
  return created;
}

bool stderr_is_tty() { return isatty(STDERR_FILENO) != 0; }

}  // namespace ios
