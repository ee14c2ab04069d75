// The CUDA backend's entry points in a build without CUDA (IOS_ENABLE_CUDA=OFF
// or no toolkit/cuDNN found): nothing can run, so every entry point throws
// NoDeviceError (exit code 3) and probe_device() reports no device.
#include <string>

#include "core/error.h"
#include "cuda/engine.h"
#include "cuda/measured.h"

namespace ios::cuda {
namespace {

[[noreturn]] void no_device(const char* what) {
  throw NoDeviceError(std::string("no CUDA device: this build of ios has no CUDA backend (") + what +
                      " needs one; rebuild with CUDA 12+ and cuDNN 9 and -DIOS_ENABLE_CUDA=ON)");
}

}  // namespace

std::optional<DeviceSummary> probe_device(int /*ordinal*/) { return std::nullopt; }

// A build without CUDA cannot use any GPU; the GPU tests are then skipped
// (reported as such), whatever the machine has.
DeviceStatus device_status(int /*ordinal*/) {
  return {DeviceState::kAbsent, "this build of ios has no CUDA backend", std::nullopt};
}

DeviceSummary require_device(int /*ordinal*/) { no_device("this command"); }

struct Weights::Impl {};

Weights::Weights(const std::vector<Plan>& /*plans*/, const std::vector<EngineOptions>& /*options*/) {
  no_device("uploading weights");
}
Weights::~Weights() = default;
size_t Weights::bytes() const { no_device("weights"); }
size_t Weights::arena_bytes(size_t /*plan*/) const { no_device("weights"); }

struct Engine::Impl {};

Engine::Engine(const sched::UnitGraph& /*graph*/, const exec::ExecPlan& /*plan*/,
               const EngineOptions& /*options*/) {
  no_device("running a plan");
}
Engine::~Engine() = default;
Engine::Engine(Engine&&) noexcept = default;
Engine& Engine::operator=(Engine&&) noexcept = default;

TensorMap Engine::run(const TensorMap& /*inputs*/) { no_device("running a plan"); }
TimingSamples Engine::time(const TimingOptions& /*options*/) { no_device("timing a plan"); }
TraceIteration Engine::trace() { no_device("tracing a plan"); }
void Engine::write_trace(const std::string& /*path*/, const std::string& /*label*/) {
  no_device("tracing a plan");
}
void Engine::enqueue(const std::vector<CallerBuffer>& /*inputs*/,
                     const std::vector<CallerBuffer>& /*outputs*/, void* /*stream*/) {
  no_device("enqueueing a plan");
}
std::vector<std::string> Engine::input_names() const { no_device("an engine"); }
std::vector<std::string> Engine::output_names() const { no_device("an engine"); }
const EngineInfo& Engine::info() const { no_device("an engine"); }
std::string Engine::describe() const { no_device("an engine"); }

std::unique_ptr<MeasuredCostModel> make_measured_cost_model(const sched::UnitGraph& /*graph*/,
                                                            const MeasuredOptions& /*options*/) {
  no_device("the measured cost model");
}

}  // namespace ios::cuda
