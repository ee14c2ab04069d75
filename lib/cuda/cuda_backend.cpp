#include "cuda/cuda_backend.h"

#include "core/error.h"
#include "cuda/engine.h"

namespace ios::cuda {
namespace {

class CudaSession : public exec::Session {
 public:
  CudaSession(const sched::UnitGraph& units, const exec::ExecPlan& plan, const EngineOptions& options)
      : engine_(units, plan, options) {
    const ir::Graph& graph = *units.ir();
    for (ir::TensorId t : graph.outputs()) output_shapes_[graph.tensor(t).name] = graph.tensor(t).shape;
  }
  // The CUDA allocations: the arena (the storage plan's storages and the
  // lowering's scratch), the uploaded weights, the per-stream workspaces.
  exec::AllocatedMemory allocated() const override {
    const EngineInfo& info = engine_.info();
    return {static_cast<int64_t>(info.arena_bytes), static_cast<int64_t>(info.weights_bytes),
            static_cast<int64_t>(info.workspace_bytes)};
  }
  exec::TensorMap run(const exec::TensorMap& inputs) override {
    TensorMap flat;
    for (const auto& [name, t] : inputs) flat[name] = t.data;
    exec::TensorMap result;
    for (const auto& [name, data] : engine_.run(flat)) {
      result[name] = exec::HostTensor(output_shapes_.at(name), data);
    }
    return result;
  }
  exec::TimingSamples time(int warmup, int iterations) override {
    TimingOptions timing;
    timing.warmup_iterations = warmup;
    timing.iterations = iterations;
    TimingSamples samples = engine_.time(timing);
    return {std::move(samples.gpu_compute_ms), std::move(samples.end_to_end_ms)};
  }
  exec::TraceIteration trace(const std::string& label) override {
    exec::TraceIteration iteration = engine_.trace();
    iteration.label = label;
    return iteration;
  }

 private:
  Engine engine_;
  std::map<std::string, ir::Shape> output_shapes_;
};

class CudaBackend : public exec::Backend {
 public:
  CudaBackend(const sched::UnitGraph& units, const exec::BackendOptions& options)
      : units_(units), precision_(options.precision) {
    const auto device = probe_device();
    if (!device) {
      throw NoDeviceError(
          "no CUDA device: ios-run needs an NVIDIA GPU to execute schedules; use --dry-run to "
          "validate and print the plans, or --backend cpu to run the CPU reference");
    }
    device_name_ = device->name;
    engine_options_.cuda_graph = options.launch == "graph";
    engine_options_.math = options.precision.math();
    engine_options_.conv_kernels = options.conv_kernels;
    engine_options_.plan_cache = options.plan_cache;
  }
  std::string device_name() const override { return device_name_; }
  std::string schedule_device_name() const override { return device_name_; }
  // cuDNN picks algorithms per launch shape, and TF32 rounds inputs to 10
  // bits: schedules differ from the sequential one beyond float32 noise.
  exec::Tolerance default_tolerance() const override {
    const double tolerance = precision_ == ir::Precision::float32(ir::MathMode::kFp32) ? 1e-3 : 5e-2;
    return {tolerance, tolerance};
  }
  std::unique_ptr<exec::Session> open(const exec::ExecPlan& plan) override {
    return std::make_unique<CudaSession>(units_, plan, engine_options_);
  }

 private:
  const sched::UnitGraph& units_;
  ir::Precision precision_;
  std::string device_name_;
  EngineOptions engine_options_;
};

}  // namespace

exec::BackendEntry backend_entry() {
  exec::BackendTraits traits;
  traits.description = "CUDA streams, events, cuDNN and CUDA graphs (the GPU)";
  traits.traces = true;
  traits.gpu_compute_time = true;
  traits.default_warmup = 20;
  traits.default_iterations = 200;
  traits.uses_cuda_graph = true;
  traits.uses_precision = true;
  traits.uses_conv_kernels = true;
  return {"cuda", traits, [](const sched::UnitGraph& units, const exec::BackendOptions& options) {
            return std::make_unique<CudaBackend>(units, options);
          }};
}

}  // namespace ios::cuda
