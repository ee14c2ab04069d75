#include "cpu/cpu_backend.h"

#include <chrono>

#include "core/error.h"
#include "cpu/executor.h"

namespace ios::cpu {
namespace {

class CpuSession : public exec::Session {
 public:
  CpuSession(const sched::UnitGraph& units, const exec::ExecPlan& plan, int threads,
             exec::AllocationCounter* allocations)
      : executor_(units, plan, ExecutorOptions{threads, allocations}) {}
  exec::TensorMap run(const exec::TensorMap& inputs) override {
    last_inputs_ = inputs;
    return executor_.run(inputs);
  }
  exec::TimingSamples time(int warmup, int iterations) override {
    for (int i = 0; i < warmup; ++i) executor_.run(last_inputs_);
    exec::TimingSamples times;
    for (int i = 0; i < iterations; ++i) {
      const auto start = std::chrono::steady_clock::now();
      executor_.run(last_inputs_);
      times.latency_ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    return times;
  }
  // The arena (the weights are the model's host tensors, not copies).
  exec::AllocatedMemory allocated() const override {
    exec::AllocatedMemory m;
    m.activations = executor_.memory_stats().buffer_bytes;
    return m;
  }
  exec::TraceIteration trace(const std::string&) override {
    internal_error("the CPU backend records no trace (its traits say so)");
  }

 private:
  CpuExecutor executor_;
  exec::TensorMap last_inputs_;
};

class CpuBackend : public exec::Backend {
 public:
  CpuBackend(const sched::UnitGraph& units, int threads, exec::AllocationCounter* allocations)
      : units_(units), threads_(threads), allocations_(allocations) {}
  std::string device_name() const override { return "CPU reference"; }
  // The same sums in another order (merges, other schedules) differ in the
  // last bits of float32.
  exec::Tolerance default_tolerance() const override { return {1e-5, 1e-4}; }
  std::unique_ptr<exec::Session> open(const exec::ExecPlan& plan) override {
    return std::make_unique<CpuSession>(units_, plan, threads_, allocations_);
  }

 private:
  const sched::UnitGraph& units_;
  int threads_;
  exec::AllocationCounter* allocations_;
};

}  // namespace

exec::BackendEntry backend_entry() {
  exec::BackendTraits traits;
  traits.description = "the CPU reference executor (FP32)";
  traits.default_warmup = 1;
  traits.default_iterations = 5;
  traits.uses_threads = true;
  return {"cpu", traits, [](const sched::UnitGraph& units, const exec::BackendOptions& options) {
            return std::make_unique<CpuBackend>(units, options.threads, options.allocations);
          }};
}

}  // namespace ios::cpu
