#include "sim_backend/sim_backend.h"

#include <fmt/format.h>

#include <algorithm>

#include "cost/device_profile.h"
#include "cost/simulated.h"
#include "sim/simulator.h"

namespace ios::sim_backend {
namespace {

class SimSession : public exec::Session {
 public:
  SimSession(const cost::SimulatedCostModel& model, const exec::ExecPlan& plan,
             std::string label_suffix)
      : plan_(plan),
        timeline_(model.simulate(plan)),
        label_suffix_(std::move(label_suffix)) {
    for (const exec::Kernel& kernel : plan.kernels) {
      std::string name;
      for (sched::UnitId u : kernel.units) name += (name.empty() ? "" : "+") + model.graph().unit(u).id;
      names_.push_back(std::move(name));
    }
  }
  exec::TensorMap run(const exec::TensorMap&) override { return {}; }
  exec::TimingSamples time(int, int iterations) override {
    exec::TimingSamples times;  // deterministic: every iteration is the same prediction
    times.latency_ms.assign(static_cast<size_t>(iterations), timeline_.makespan_us / 1000.0);
    return times;
  }
  exec::TraceIteration trace(const std::string& label) override {
    exec::TraceIteration iteration;
    iteration.label = label + label_suffix_;
    iteration.num_streams = plan_.num_streams;
    iteration.total_us = timeline_.makespan_us;
    for (const sim::KernelSpan& span : timeline_.kernels) {
      const size_t launch = static_cast<size_t>(span.launch);
      exec::TraceEvent event;
      event.name = names_[launch];
      event.stream = span.stream;
      event.start_us = span.begin_us;
      event.duration_us = span.end_us - span.begin_us;
      event.args = {{"launch_us", fmt::format("{:.3f}", span.start_us - span.begin_us)},
                    {"work_us", fmt::format("{:.3f}", span.end_us - span.start_us)},
                    {"kernel", fmt::format("{}", span.part)}};
      iteration.events.push_back(std::move(event));
    }
    return iteration;
  }

 private:
  exec::ExecPlan plan_;
  sim::Timeline timeline_;
  std::vector<std::string> names_;  // per plan launch: its unit ids
  std::string label_suffix_;
};

// The simulated device: --device-profile, else the device the first schedule
// was optimized for when that is a shipped profile (a schedule made with
// --cost simulated names its profile), else h100.
std::string profile_to_use(const exec::BackendOptions& options) {
  if (!options.device_profile.empty()) return options.device_profile;
  const std::vector<std::string> shipped = cost::shipped_device_profiles();
  if (std::find(shipped.begin(), shipped.end(), options.schedule_device) != shipped.end()) {
    return options.schedule_device;
  }
  return "h100";
}

class SimBackend : public exec::Backend {
 public:
  SimBackend(const sched::UnitGraph& units, const exec::BackendOptions& options) {
    cost::SimulatedOptions simulated;
    simulated.math = options.precision.math();
    cost::set_launch(simulated, options.launch);
    model_ = std::make_unique<cost::SimulatedCostModel>(
        units, cost::load_device_profile(profile_to_use(options)), simulated);
    launches_ = options.launch == "graph"    ? "CUDA graph"
                : options.launch == "synced" ? "plain launches, the device synchronized after each stage"
                                             : "plain launches";
  }
  std::string device_name() const override {
    return fmt::format("'{}' device profile (simulated, {})", model_->profile().name, launches_);
  }
  std::string schedule_device_name() const override { return model_->profile().name; }
  std::string prediction_note() const override {
    return fmt::format("predicted by the GPU simulator, '{}' device profile, {}", model_->profile().name,
                       launches_);
  }
  exec::Tolerance default_tolerance() const override { return {}; }  // computes no outputs
  std::unique_ptr<exec::Session> open(const exec::ExecPlan& plan) override {
    return std::make_unique<SimSession>(*model_, plan, " (" + prediction_note() + ")");
  }

 private:
  std::string launches_;
  std::unique_ptr<cost::SimulatedCostModel> model_;
};

}  // namespace

exec::BackendEntry backend_entry() {
  exec::BackendTraits traits;
  traits.description = "predict with the GPU simulator on a device profile; nothing is executed";
  traits.computes_outputs = false;
  traits.traces = true;
  traits.measured = false;
  traits.gpu_compute_time = true;
  traits.default_warmup = 0;
  traits.default_iterations = 1;
  traits.uses_cuda_graph = true;
  traits.uses_precision = true;
  traits.uses_device_profile = true;
  return {"sim", traits, [](const sched::UnitGraph& units, const exec::BackendOptions& options) {
            return std::make_unique<SimBackend>(units, options);
          }};
}

}  // namespace ios::sim_backend
