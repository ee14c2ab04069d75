#include "echo_backend.h"

namespace ios::test {
namespace {

class EchoSession : public exec::Session {
 public:
  EchoSession(const sched::UnitGraph& units, const exec::ExecPlan& plan) : units_(units), plan_(plan) {
    ++echo_counters().sessions;
  }
  exec::TensorMap run(const exec::TensorMap&) override {
    ++echo_counters().runs;
    exec::TensorMap outputs;
    const ir::Graph& graph = *units_.ir();
    for (ir::TensorId t : graph.outputs()) {
      outputs[graph.tensor(t).name] = exec::HostTensor(graph.tensor(t).shape);
    }
    return outputs;
  }
  exec::TimingSamples time(int, int iterations) override {
    echo_counters().timed_iterations += iterations;
    exec::TimingSamples samples;
    samples.latency_ms.assign(static_cast<size_t>(iterations), static_cast<double>(plan_.kernels.size()));
    return samples;
  }
  exec::TraceIteration trace(const std::string& label) override {
    ++echo_counters().traces;
    exec::TraceIteration iteration;
    iteration.label = label;
    iteration.num_streams = plan_.num_streams;
    for (size_t k = 0; k < plan_.kernels.size(); ++k) {
      exec::TraceEvent event;
      event.name = units_.unit(plan_.kernels[k].units.front()).id;
      event.start_us = 1000.0 * static_cast<double>(k);
      event.duration_us = 1000.0;
      iteration.events.push_back(event);
    }
    iteration.total_us = 1000.0 * static_cast<double>(plan_.kernels.size());
    return iteration;
  }

 private:
  const sched::UnitGraph& units_;
  exec::ExecPlan plan_;
};

class EchoBackend : public exec::Backend {
 public:
  explicit EchoBackend(const sched::UnitGraph& units) : units_(units) {}
  std::string device_name() const override { return "echo device"; }
  exec::Tolerance default_tolerance() const override { return {0.5, 0.0}; }
  std::unique_ptr<exec::Session> open(const exec::ExecPlan& plan) override {
    return std::make_unique<EchoSession>(units_, plan);
  }

 private:
  const sched::UnitGraph& units_;
};

}  // namespace

EchoCounters& echo_counters() {
  static EchoCounters counters;
  return counters;
}

exec::BackendEntry echo_backend_entry() {
  exec::BackendTraits traits;
  traits.description = "zeros for outputs, 1 ms per launch (a test backend)";
  traits.traces = true;
  traits.default_warmup = 0;
  traits.default_iterations = 3;
  return {"echo", traits, [](const sched::UnitGraph& units, const exec::BackendOptions&) {
            return std::make_unique<EchoBackend>(units);
          }};
}

}  // namespace ios::test
