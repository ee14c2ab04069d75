// The CUDA execution engine: runs an ExecPlan on CUDA streams with cuDNN and
// the backend's own kernels, from one memory plan, optionally replayed as a
// CUDA graph. Design and verification status: docs/cuda-backend.md.
//
// This header is plain C++ (no CUDA types) so that lib/cuda_stub can provide
// the same entry points in builds without CUDA: there every constructor and
// function throws NoDeviceError ("no CUDA device: ...", exit code 3) and
// probe_device() returns nullopt.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"
#include "exec/allocations.h"
#include "exec/kernel_selection.h"
#include "exec/plan.h"
#include "exec/trace.h"
#include "ir/precision.h"
#include "sched/unit_graph.h"

namespace ios::cuda {

struct DeviceSummary {
  int ordinal = 0;
  std::string name;                // "NVIDIA H100 80GB HBM3"
  std::string compute_capability;  // "9.0"
  std::string driver;              // kernel driver version ("570.86.15"), else "cuda <driver API version>"
  std::string runtime;             // CUDA runtime version, "13.0"
  std::string cudnn;               // "9.19.0"
  int sm_count = 0;
  size_t memory_bytes = 0;
};

// The device `ordinal` when it is usable (a device is present, the driver is
// recent enough, cuDNN loads); nullopt otherwise. Never throws for a missing
// device; the reason is logged on the "cuda" logger at debug level.
std::optional<DeviceSummary> probe_device(int ordinal = 0);

// Like probe_device(), but throws NoDeviceError("no CUDA device: <reason>").
DeviceSummary require_device(int ordinal = 0);

// Whether a GPU is there at all, and whether ios can use it. A machine with no
// NVIDIA device and no NVIDIA kernel driver is kAbsent (GPU tests are skipped
// there); a device or driver that is present but unusable (driver older than
// the CUDA runtime, cuDNN not loadable, compute capability too old) is
// kUnusable, which GPU tests must report as a failure, not as a skip.
enum class DeviceState { kUsable, kAbsent, kUnusable };
struct DeviceStatus {
  DeviceState state = DeviceState::kAbsent;
  std::string reason;  // empty when usable
  std::optional<DeviceSummary> summary;
};
DeviceStatus device_status(int ordinal = 0);

// The rule behind device_status(), on plain facts (unit-tested without a GPU):
// `device_count` is what cudaGetDeviceCount reported (0 also for
// cudaErrorNoDevice, e.g. every GPU hidden by CUDA_VISIBLE_DEVICES; -1 when it
// failed otherwise), `kernel_driver_present` whether /proc/driver/nvidia or
// /dev/nvidiactl exist, `problem` why the device cannot be used (empty when
// it can). Inline: the CUDA build and lib/cuda_stub share it.
inline DeviceState classify_device(int device_count, bool kernel_driver_present, const std::string& problem) {
  if (problem.empty()) return DeviceState::kUsable;
  if (device_count == 0) return DeviceState::kAbsent;  // the driver answers: no device (visible)
  if (device_count > 0 || kernel_driver_present) return DeviceState::kUnusable;
  return DeviceState::kAbsent;  // no device and no driver
}

struct EngineOptions {
  // Float32 convolutions and matrix products (cuBLASLt) may use TF32 tensor
  // cores (kTf32, the default) or must use strict FP32 kernels (kFp32); every
  // other float32 operator is FP32 either way (ir::Precision::math: a
  // half-precision graph's float32 regions compute in strict FP32).
  ir::MathMode math = ir::MathMode::kTf32;
  bool cuda_graph = true;  // capture the plan once and replay it; false: plain launches
  int device = 0;
  // Upper bound on the workspace one convolution (cuDNN) or matrix product
  // (cuBLASLt, at most 32 MiB) may use; the engine allocates, per stream, the
  // largest workspace its chosen algorithms need.
  size_t workspace_limit_bytes = size_t{256} << 20;
  // How convolutions run (exec/kernel_selection.h): cuDNN's legacy calls (the
  // default) or its graph API's execution plans, timed, the fastest kept.
  exec::ConvKernels conv_kernels = exec::ConvKernels::kLegacy;
  // The persistent plan cache of the graph-API path (cost/plan_cache.h),
  // opened when conv_kernels is kGraph; empty: plans.sqlite beside the
  // profile database (cost::PlanCache::default_path).
  std::string plan_cache;
  // The execution contexts of one model (the engine API, include/ios/engine.h)
  // share its weights: with `weights` (made from this engine's plan among
  // others, on the same device, outliving this engine) the engine uploads
  // none and holds no weight memory.
  const class Weights* weights = nullptr;
  // Where the engine reports its device allocations (weights, activation
  // arena, workspaces) while they live; null: nowhere. Must outlive it.
  exec::AllocationCounter* allocations = nullptr;
  // Activation memory the caller provides (TensorRT's setDeviceMemory): at
  // least EngineInfo::arena_bytes of the same plan, 256-byte aligned, on the
  // engine's device; null: the engine allocates its own.
  void* arena = nullptr;
  size_t arena_bytes = 0;
};

// What the engine built, for -v output and tests.
struct EngineInfo {
  int num_streams = 1;
  int launches = 0;          // plan launches (units or merged groups)
  int gpu_ops = 0;           // cuDNN calls and own kernels per iteration
  int convolutions = 0;
  int fused_convolutions = 0;      // bias (+ residual) + ReLU fused by cuDNN
  int graph_convolutions = 0;      // run by a graph-API execution plan (conv_kernels graph)
  int legacy_fallbacks = 0;        // conv_kernels graph, but no plan built: the legacy call runs them
  int plans_from_cache = 0;        // graph plans whose choice came from the plan cache (not timed)
  int concat_inputs_zero_copy = 0; // concat inputs written in place by their producer
  int concat_inputs_copied = 0;
  size_t weights_bytes = 0;
  size_t arena_bytes = 0;          // activations, after reuse by liveness
  size_t arena_unshared_bytes = 0; // what they would take without reuse
  size_t workspace_bytes = 0;      // cuDNN and cuBLASLt workspaces, all streams
  bool cuda_graph = true;
  ir::MathMode math = ir::MathMode::kTf32;
  exec::ConvKernels conv_kernels = exec::ConvKernels::kLegacy;
  std::string device;
};

// Host tensors by ONNX name, dense row-major float32 in the IR's shapes.
using TensorMap = std::map<std::string, std::vector<float>>;

struct TimingOptions {
  int warmup_iterations = 10;  // untimed iterations first
  double warmup_ms = 0.0;      // ... and keep warming up at least this long
  int iterations = 100;        // at least this many timed iterations
  double min_duration_ms = 0.0;  // ... and keep timing until this much GPU time
  bool end_to_end = true;      // also measure end-to-end latency (as many samples)
};

// The two latencies trtexec reports, per inference (ms).
struct TimingSamples {
  // GPU compute time: CUDA events recorded on stream 0 between iterations
  // queued back to back (up to kTimingQueueDepth at once, behind one untimed
  // iteration), so the GPU never waits for the host between two samples while
  // the host keeps ahead of it. This is what schedules are compared by: it
  // excludes the host's launch latency, which grows with the number of
  // streams and would otherwise count against concurrent schedules. With
  // plain launches (no CUDA graph) a host slower than the GPU still shows, as
  // it does in a real server loop.
  std::vector<double> gpu_compute_ms;
  // End-to-end latency: host wall time of one request on an idle GPU, from
  // the upload of its inputs (host to device, from pinned host memory) until
  // the host sees its outputs downloaded (device to host, into pinned
  // memory): copies + launch + GPU + synchronisation, what one request alone
  // waits, as trtexec's "end-to-end host latency" counts it. The inputs
  // uploaded are those the device holds (last run()'s, or the random ones).
  // Empty when not measured.
  std::vector<double> end_to_end_ms;
};
constexpr int kTimingQueueDepth = 32;

// One traced iteration: every launch with its stream and its GPU interval
// (the format lib/exec/trace.h writes, shared with the simulator).
using TraceEvent = exec::TraceEvent;
using TraceIteration = exec::TraceIteration;

// The device weights of one model for one or more of its plans (the engine
// API's batch sizes), apart from any engine's activations, streams and
// graphs: every constant their lowerings use, uploaded once into one device
// buffer (a host tensor that several plans use, once), and the activation
// memory each plan needs (what an engine of it allocates for its arena),
// found without building an engine: algorithms chosen as an engine chooses
// them (cached per device), memory planned, nothing else allocated. Ends
// with the device synchronized; restores the caller's current device.
// Errors as Engine's constructor. Immutable afterwards: engines made from
// several threads may share it.
class Weights {
 public:
  using Plan = std::pair<const sched::UnitGraph*, const exec::ExecPlan*>;
  // `options`, one per plan: what its engines will be made with (device,
  // math, kernels, workspace limit; `weights` and `arena` are ignored). The
  // first's device holds the buffer, its `allocations` counts it.
  Weights(const std::vector<Plan>& plans, const std::vector<EngineOptions>& options);
  ~Weights();
  Weights(const Weights&) = delete;
  Weights& operator=(const Weights&) = delete;

  size_t bytes() const;                   // the weight buffer
  size_t arena_bytes(size_t plan) const;  // activations of plans[plan], as EngineInfo::arena_bytes

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

class Engine {
 public:
  // Builds everything once: lowers units to GPU operations, chooses a cuDNN
  // algorithm per convolution (cached per device), plans and allocates
  // memory, uploads weights, and captures the CUDA graph; ends with the
  // device synchronized (a validating run). Throws NoDeviceError without a
  // usable device, UserError for operators or shapes the backend cannot run,
  // DeviceError (OutOfMemoryError) where CUDA fails. Every call that uses
  // the device (this constructor, the destructor, run, enqueue, time, trace)
  // sets options.device as the calling thread's current device and restores
  // the caller's before it returns. The destructor waits for the engine's
  // work to finish (it frees memory).
  Engine(const sched::UnitGraph& graph, const exec::ExecPlan& plan, const EngineOptions& options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  Engine(Engine&&) noexcept;
  Engine& operator=(Engine&&) noexcept;

  // Graph inputs by ONNX name (every input required, sizes must match) to
  // graph outputs by ONNX name. The inputs stay on the device for time().
  TensorMap run(const TensorMap& inputs);

  // Queues one iteration on the caller's `stream` (a cudaStream_t; null: the
  // legacy default stream): the engine's streams start after the work the
  // caller's stream holds, the inputs are copied from the caller's device
  // buffers and the outputs to them (by position: input_names(),
  // output_names(); dense, of the program's shapes, float32 or the value's
  // own 16-bit type: CallerBuffer), and the caller's stream continues after
  // the outputs are written. No host synchronization: capturable into the
  // caller's CUDA graph (under capture the launches themselves are captured,
  // not the engine's own graph). UserError for a plan whose host
  // synchronizes the device (--launch synced), and where CUDA can tell, for
  // a buffer that is host memory or another device's, or a stream of
  // another device.
  struct CallerBuffer {
    void* data = nullptr;  // device memory; an input's is only read
    // kFloat32 (converted on the device where the value is 16-bit) or the
    // value's own type (copied as is); another is an InternalError (the
    // engine API refuses it first, by name).
    ir::ElementType type = ir::ElementType::kFloat32;
  };
  void enqueue(const std::vector<CallerBuffer>& inputs, const std::vector<CallerBuffer>& outputs,
               void* stream);
  std::vector<std::string> input_names() const;
  std::vector<std::string> output_names() const;

  // GPU compute time and end-to-end latency per iteration (TimingSamples).
  // Inputs are those of the last run(), or fixed random values before the
  // first run(). No allocation happens inside the timed loops (the pinned
  // staging buffers of end-to-end are made at the first call).
  TimingSamples time(const TimingOptions& options);

  // One iteration issued with plain launches and an event pair around every
  // launch (so the times include the instrumentation, slightly).
  TraceIteration trace();
  // trace() written as a Chrome/Perfetto trace.
  void write_trace(const std::string& path, const std::string& label = "");

  const EngineInfo& info() const;
  // Per-launch GPU operations, memory plan and algorithm choices (ios-run -v).
  std::string describe() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ios::cuda
