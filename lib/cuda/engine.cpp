#include "cuda/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <utility>

#include "core/error.h"
#include "core/file_io.h"
#include "core/log.h"
#include "cost/plan_cache.h"
#include "cost/profile_db.h"
#include "cuda/check.h"
#include "cuda/context.h"
#include "cuda/launch.h"
#include "cuda/runtime.h"

namespace ios::cuda {
namespace {

// Page-locked host memory: what a server stages its requests in, so that
// copies run at full bus speed and asynchronously.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(size_t floats) {
    if (floats > 0) IOS_CUDA_ALLOC(cudaMallocHost(reinterpret_cast<void**>(&data_), floats * sizeof(float)), floats * sizeof(float));
  }
  ~PinnedBuffer() {
    if (data_ != nullptr) IOS_CUDA_CALL_NOTHROW(cudaFreeHost(data_));
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  PinnedBuffer(PinnedBuffer&& other) noexcept : data_(std::exchange(other.data_, nullptr)) {}
  PinnedBuffer& operator=(PinnedBuffer&&) = delete;
  float* get() const { return data_; }

 private:
  float* data_ = nullptr;
};

}  // namespace

namespace {

// The plan cache of the graph-API path, opened on `ctx`; its path.
std::string open_plan_cache(Context& ctx, const EngineOptions& options) {
  if (options.conv_kernels != exec::ConvKernels::kGraph) return {};
  const std::string path = options.plan_cache.empty()
                               ? cost::PlanCache::default_path(cost::ProfileDb::default_path()).string()
                               : options.plan_cache;
  ctx.set_plan_cache(std::make_shared<cost::PlanCache>(path));
  return path;
}

}  // namespace

struct Weights::Impl {
  // Derived constants (zero biases, merged convolutions' weights) by name:
  // the engines' lowerings find theirs here, the same host data the upload
  // used, so the table below knows them. Written only while the weights are
  // built; afterwards every lookup finds its entry and writes nothing.
  mutable DerivedConstants derived;
  DeviceBuffer buffer;
  exec::CountedAllocation counted;
  WeightTable table;
  // The host data the table's keys point to, kept alive with it (so that no
  // other tensor can come to have the address of a key).
  std::vector<Constant> uploaded;
  std::vector<size_t> arena_bytes;
  int device = 0;
};

Weights::Weights(const std::vector<Plan>& plans, const std::vector<EngineOptions>& options)
    : impl_(std::make_unique<Impl>()) {
  IOS_ASSERT(!plans.empty() && plans.size() == options.size(), "weights of {} plans with {} options", plans.size(),
             options.size());
  const detail::CurrentDevice keep;  // the contexts set the device; the caller's comes back
  Impl& w = *impl_;
  w.device = options.front().device;
  std::vector<Constant> constants;  // each (host tensor, type) once
  for (size_t i = 0; i < plans.size(); ++i) {
    // A sizing context per plan, as its engines make theirs (math, kernels;
    // algorithm choices are cached per device, so theirs are the same), with
    // no workspace, arena or graph. First, as an engine's: no device is
    // NoDeviceError before anything else.
    const EngineOptions& o = options[i];
    Context ctx(o.device, o.math, o.workspace_limit_bytes, o.conv_kernels);
    open_plan_cache(ctx, o);
    LowerOptions lower;
    lower.derived = &w.derived;
    Program program = lower_program(*plans[i].first, *plans[i].second, lower);
    for (const Constant& c : program.constants) {
      const bool seen = std::any_of(constants.begin(), constants.end(), [&](const Constant& k) {
        return k.data.get() == c.data.get() && k.type == c.type;
      });
      if (!seen) constants.push_back(c);
    }
    RuntimeMemory sizing;
    sizing.size_only = true;
    const Runtime runtime(ctx, std::move(program), false, nullptr, sizing);
    w.arena_bytes.push_back(runtime.stats().arena_bytes);
  }
  IOS_CUDA_CALL(cudaSetDevice(w.device));
  constexpr int64_t kAlignment = kBufferAlignment;
  std::vector<int64_t> offsets;
  int64_t total = 0;
  for (const Constant& c : constants) {
    offsets.push_back(total);
    total = (total + c.bytes() + kAlignment - 1) / kAlignment * kAlignment;
  }
  w.buffer = DeviceBuffer(static_cast<size_t>(total));
  w.counted = exec::CountedAllocation(options.front().allocations, exec::AllocationKind::kWeights, total);
  // Pageable host memory to the device on the legacy default stream, then
  // synchronized: done once per engine.
  for (size_t i = 0; i < constants.size(); ++i) {
    char* at = static_cast<char*>(w.buffer.get()) + offsets[i];
    upload_constant(at, constants[i], nullptr);
    w.table[{constants[i].data.get(), constants[i].type}] = at;
  }
  IOS_CUDA_CALL(cudaStreamSynchronize(nullptr));
  w.uploaded = std::move(constants);
}

Weights::~Weights() {
  if (!impl_ || impl_->buffer.get() == nullptr) return;
  const detail::CurrentDevice keep;
  IOS_CUDA_CALL_NOTHROW(cudaSetDevice(impl_->device));
  impl_.reset();
}

size_t Weights::bytes() const { return impl_->buffer.bytes(); }
size_t Weights::arena_bytes(size_t plan) const { return impl_->arena_bytes.at(plan); }

namespace {

// A context's workspaces, reported while it lives.
exec::CountedAllocation count_workspaces(const EngineOptions& options, size_t bytes) {
  return bytes > 0 ? exec::CountedAllocation(options.allocations, exec::AllocationKind::kWorkspaces,
                                             static_cast<int64_t>(bytes))
                   : exec::CountedAllocation();
}

}  // namespace

struct Engine::Impl {
  Impl(const sched::UnitGraph& graph, const exec::ExecPlan& plan, const EngineOptions& options)
      : ctx(options.device, options.math, options.workspace_limit_bytes, options.conv_kernels) {
    plan_cache_path = open_plan_cache(ctx, options);
    LowerOptions lower;
    if (options.weights != nullptr) lower.derived = &options.weights->impl().derived;
    Program program = lower_program(graph, plan, lower);
    RuntimeMemory memory;
    if (options.weights != nullptr) memory.weights = &options.weights->impl().table;
    memory.arena = options.arena;
    memory.arena_bytes = options.arena_bytes;
    memory.allocations = options.allocations;
    runtime = std::make_unique<Runtime>(ctx, std::move(program), options.cuda_graph, nullptr, memory);
    workspaces = count_workspaces(options, runtime->stats().workspace_bytes);
    synchronous = std::any_of(plan.steps.begin(), plan.steps.end(),
                              [](const exec::Step& s) { return s.kind == exec::Step::Kind::kSync; });
    const Program& p = runtime->program();
    const RuntimeStats& s = runtime->stats();
    info.num_streams = std::max(p.num_streams, 1);
    info.launches = static_cast<int>(p.launches.size());
    info.gpu_ops = p.num_ops();
    info.convolutions = s.convolutions;
    info.fused_convolutions = s.fused_convolutions;
    info.graph_convolutions = s.graph_convolutions;
    info.legacy_fallbacks = s.legacy_fallbacks;
    info.plans_from_cache = s.plans_from_cache;
    if (options.conv_kernels == exec::ConvKernels::kGraph) {
      logger("cuda")->info("convolutions: {} by graph-API plans ({} from the plan cache{}), {} by the legacy call",
                           s.graph_convolutions, s.plans_from_cache,
                           " " + plan_cache_path,
                           s.convolutions - s.graph_convolutions);
    }
    info.concat_inputs_zero_copy = p.concat_inputs_zero_copy;
    info.concat_inputs_copied = p.concat_inputs_copied;
    info.weights_bytes = s.weights_bytes;
    info.arena_bytes = s.arena_bytes;
    info.arena_unshared_bytes = s.arena_unshared_bytes;
    info.workspace_bytes = s.workspace_bytes;
    info.cuda_graph = runtime->uses_graph();
    info.math = options.math;
    info.conv_kernels = options.conv_kernels;
    info.device = ctx.device().name;
    for (int i = 0; i <= kTimingQueueDepth; ++i) marks.push_back(make_event(true));
    enter = make_event();
    leave = make_event();
  }

  ~Impl() {
    runtime.reset();  // before the context's streams go
  }

  // Queues one untimed iteration, then `n` timed ones with an event after
  // each, and appends their GPU times: consecutive events on stream 0 bound
  // exactly one iteration (stream 0 forks and joins every iteration).
  void queued_iterations(int n, std::vector<double>& out) {
    while (static_cast<int>(marks.size()) < n + 1) marks.push_back(make_event(true));
    cudaStream_t main = ctx.stream(0);
    runtime->execute();  // the GPU works on this while the host queues the timed ones
    IOS_CUDA_CALL(cudaEventRecord(marks[0].get(), main));
    for (int i = 0; i < n; ++i) {
      runtime->execute();
      IOS_CUDA_CALL(cudaEventRecord(marks[static_cast<size_t>(i) + 1].get(), main));
    }
    IOS_CUDA_CALL(cudaEventSynchronize(marks[static_cast<size_t>(n)].get()));
    for (int i = 0; i < n; ++i) {
      float ms = 0.0f;
      IOS_CUDA_CALL(cudaEventElapsedTime(&ms, marks[static_cast<size_t>(i)].get(), marks[static_cast<size_t>(i) + 1].get()));
      out.push_back(ms);
    }
  }

  // Pinned host copies of the inputs (holding what the device's inputs hold
  // now, so that uploading them changes nothing) and room for the outputs.
  void stage_host_buffers() {
    const Program& p = runtime->program();
    if (staged_inputs.empty() && staged_outputs.empty()) {
      for (const auto& [name, v] : p.inputs) staged_inputs.emplace_back(static_cast<size_t>(p.values.at(static_cast<size_t>(v)).size()));
      for (const auto& [name, v] : p.outputs) staged_outputs.emplace_back(static_cast<size_t>(p.values.at(static_cast<size_t>(v)).size()));
    }
    for (size_t i = 0; i < staged_inputs.size(); ++i) runtime->download_input(static_cast<int>(i), staged_inputs[i].get());
    runtime->synchronize();
  }

  // One request on an idle GPU, host clock from the start of the input
  // upload to the host seeing the outputs downloaded: inputs host to device
  // from pinned memory, the iteration, outputs device to host into pinned
  // memory (what trtexec's end-to-end host latency counts).
  double end_to_end_iteration() {
    runtime->synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < staged_inputs.size(); ++i) runtime->upload_input(static_cast<int>(i), staged_inputs[i].get());
    runtime->execute();
    for (size_t i = 0; i < staged_outputs.size(); ++i) runtime->download_output(static_cast<int>(i), staged_outputs[i].get());
    runtime->synchronize();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }

  Context ctx;
  std::unique_ptr<Runtime> runtime;
  exec::CountedAllocation workspaces;
  EngineInfo info;
  std::string plan_cache_path;  // conv_kernels graph: the plan cache opened
  std::vector<Event> marks;  // kTimingQueueDepth + 1 timing events, reused
  std::vector<PinnedBuffer> staged_inputs, staged_outputs;  // end-to-end staging, made once
  Event enter, leave;          // enqueue(): the caller's stream forks into the engine's and joins back
  bool synchronous = false;    // the plan synchronizes the device from the host (kSync)
};

Engine::Engine(const sched::UnitGraph& graph, const exec::ExecPlan& plan, const EngineOptions& options) {
  const detail::CurrentDevice keep;  // the context sets options.device; the caller's comes back
  impl_ = std::make_unique<Impl>(graph, plan, options);
}

Engine::~Engine() {
  if (!impl_) return;  // moved from
  const detail::CurrentDevice keep;
  // The engine's streams, handles and memory are released on its own device.
  IOS_CUDA_CALL_NOTHROW(cudaSetDevice(impl_->ctx.ordinal()));
  impl_.reset();
}
Engine::Engine(Engine&&) noexcept = default;
Engine& Engine::operator=(Engine&&) noexcept = default;

TensorMap Engine::run(const TensorMap& inputs) {
  Runtime& rt = *impl_->runtime;
  const Program& p = rt.program();
  const detail::CurrentDevice keep;
  IOS_CUDA_CALL(cudaSetDevice(impl_->ctx.ordinal()));
  std::string expected;
  for (const auto& [name, v] : p.inputs) expected += (expected.empty() ? "'" : ", '") + name + "'";
  for (const auto& [name, data] : inputs) {
    const bool known = std::any_of(p.inputs.begin(), p.inputs.end(), [&](const auto& io) { return io.first == name; });
    if (!known) user_error("unknown input '{}': the model's inputs are {}", name, expected);
  }
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const auto& [name, v] = p.inputs[i];
    auto it = inputs.find(name);
    if (it == inputs.end()) user_error("input '{}' is missing: the model's inputs are {}", name, expected);
    const Value& value = p.values.at(static_cast<size_t>(v));
    if (static_cast<int64_t>(it->second.size()) != value.size()) {
      user_error("input '{}' has {} elements but the model expects shape {} ({} elements)", name, it->second.size(),
                 ir::to_string(value.shape), value.size());
    }
    rt.upload_input(static_cast<int>(i), it->second.data());
  }
  rt.execute();
  TensorMap outputs;
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    const auto& [name, v] = p.outputs[i];
    std::vector<float>& out = outputs[name];
    out.resize(static_cast<size_t>(p.values.at(static_cast<size_t>(v)).size()));
    rt.download_output(static_cast<int>(i), out.data());
  }
  rt.synchronize();
  return outputs;
}

namespace {

// Where CUDA can tell (cudaPointerGetAttributes), a caller's buffer that the
// engine's device cannot use: host memory CUDA does not know, or another
// device's memory. Managed and registered host memory are accepted.
void check_caller_buffer(const void* data, const char* what, const std::string& name, int ordinal) {
  if (data == nullptr) return;  // an empty tensor; the engine API refuses a null one with elements
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, data) != cudaSuccess) {
    detail::clear_failed_attempt();  // CUDA cannot tell: the copy will say
    return;
  }
  if (attributes.type == cudaMemoryTypeUnregistered) {
    user_error("{} '{}' is host memory that CUDA does not know, and enqueue() takes device memory of "
               "CUDA device {}; copy it to the device first, or use run() for host buffers",
               what, name, ordinal);
  }
  if (attributes.type == cudaMemoryTypeDevice && attributes.device != ordinal) {
    user_error("{} '{}' is memory of CUDA device {} but the engine runs on device {}; give buffers of "
               "device {}, or load an engine with device {}",
               what, name, attributes.device, ordinal, ordinal, attributes.device);
  }
}

// The caller's stream must belong to the engine's device (the legacy and
// per-thread default streams are the current device's, which enqueue sets).
void check_caller_stream(cudaStream_t stream, int ordinal) {
#if CUDART_VERSION >= 12080
  if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread) return;
  int device = -1;
  if (cudaStreamGetDevice(stream, &device) != cudaSuccess) {
    detail::clear_failed_attempt();  // CUDA cannot tell: the first call on it will say
    return;
  }
  if (device != ordinal) {
    user_error("the stream given to enqueue() belongs to CUDA device {} but the engine runs on device "
               "{}; enqueue on a stream of device {}",
               device, ordinal, ordinal);
  }
#else
  (void)stream;
  (void)ordinal;
#endif
}

}  // namespace

void Engine::enqueue(const std::vector<CallerBuffer>& inputs, const std::vector<CallerBuffer>& outputs,
                     void* stream) {
  Runtime& rt = *impl_->runtime;
  const Program& p = rt.program();
  if (impl_->synchronous) {
    user_error("this schedule runs with synced launches (the host synchronizes the device after each "
               "stage, the IOS paper's engine), which enqueue cannot do without a host synchronization; "
               "load it with launch graph or plain, or run it on host buffers");
  }
  IOS_ASSERT(inputs.size() == p.inputs.size() && outputs.size() == p.outputs.size(),
             "enqueue with {} inputs and {} outputs for a program of {} and {}", inputs.size(), outputs.size(),
             p.inputs.size(), p.outputs.size());
  const int ordinal = impl_->ctx.ordinal();
  auto own_type = [&](int value, ir::ElementType type) {
    const ir::ElementType own = p.values.at(static_cast<size_t>(value)).type;
    IOS_ASSERT(type == ir::ElementType::kFloat32 || type == own, "a {} buffer for a {} value",
               ir::type_name(type), ir::type_name(own));
    return type != ir::ElementType::kFloat32;  // float32 data goes the converting way, as before
  };
  for (size_t i = 0; i < inputs.size(); ++i) check_caller_buffer(inputs[i].data, "input", p.inputs[i].first, ordinal);
  for (size_t i = 0; i < outputs.size(); ++i) check_caller_buffer(outputs[i].data, "output", p.outputs[i].first, ordinal);
  const detail::CurrentDevice keep;
  IOS_CUDA_CALL(cudaSetDevice(ordinal));
  auto caller = static_cast<cudaStream_t>(stream);
  check_caller_stream(caller, ordinal);
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  IOS_CUDA_CALL(cudaStreamIsCapturing(caller, &capture));
  // Fork: stream 0 (and through it every stream) after the caller's work.
  IOS_CUDA_CALL(cudaEventRecord(impl_->enter.get(), caller));
  IOS_CUDA_CALL(cudaStreamWaitEvent(impl_->ctx.stream(0), impl_->enter.get(), 0));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (own_type(p.inputs[i].second, inputs[i].type)) {
      rt.copy_input_as_is(static_cast<int>(i), inputs[i].data);
    } else {
      rt.upload_input(static_cast<int>(i), static_cast<const float*>(inputs[i].data), cudaMemcpyDeviceToDevice);
    }
  }
  // The engine's own graph is launched, not nested: under the caller's
  // capture the launches are captured one by one into the caller's graph.
  if (capture == cudaStreamCaptureStatusActive) {
    rt.issue();
  } else {
    rt.execute();
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (own_type(p.outputs[i].second, outputs[i].type)) {
      rt.copy_output_as_is(static_cast<int>(i), outputs[i].data);
    } else {
      rt.download_output(static_cast<int>(i), static_cast<float*>(outputs[i].data), cudaMemcpyDeviceToDevice);
    }
  }
  // Join: the caller's stream continues after the outputs are written.
  IOS_CUDA_CALL(cudaEventRecord(impl_->leave.get(), impl_->ctx.stream(0)));
  IOS_CUDA_CALL(cudaStreamWaitEvent(caller, impl_->leave.get(), 0));
}

std::vector<std::string> Engine::input_names() const {
  std::vector<std::string> names;
  for (const auto& [name, v] : impl_->runtime->program().inputs) names.push_back(name);
  return names;
}

std::vector<std::string> Engine::output_names() const {
  std::vector<std::string> names;
  for (const auto& [name, v] : impl_->runtime->program().outputs) names.push_back(name);
  return names;
}

TimingSamples Engine::time(const TimingOptions& options) {
  const detail::CurrentDevice keep;
  IOS_CUDA_CALL(cudaSetDevice(impl_->ctx.ordinal()));
  using clock = std::chrono::steady_clock;
  const auto warm_start = clock::now();
  for (int i = 0;; ++i) {
    const double elapsed = std::chrono::duration<double, std::milli>(clock::now() - warm_start).count();
    if (i >= options.warmup_iterations && elapsed >= options.warmup_ms) break;
    impl_->runtime->execute();
    impl_->runtime->synchronize();
  }
  TimingSamples samples;
  samples.gpu_compute_ms.reserve(static_cast<size_t>(std::max(options.iterations, 1)) * 2);
  double total = 0.0;
  while (static_cast<int>(samples.gpu_compute_ms.size()) < options.iterations || total < options.min_duration_ms) {
    const int left = options.iterations - static_cast<int>(samples.gpu_compute_ms.size());
    // Past the iteration count (still short of min_duration_ms), full queues.
    const int n = left > 0 ? std::min(left, kTimingQueueDepth) : kTimingQueueDepth;
    const size_t before = samples.gpu_compute_ms.size();
    impl_->queued_iterations(n, samples.gpu_compute_ms);
    for (size_t i = before; i < samples.gpu_compute_ms.size(); ++i) total += samples.gpu_compute_ms[i];
  }
  if (options.end_to_end) {
    impl_->stage_host_buffers();
    samples.end_to_end_ms.reserve(samples.gpu_compute_ms.size());
    for (size_t i = 0; i < samples.gpu_compute_ms.size(); ++i) {
      samples.end_to_end_ms.push_back(impl_->end_to_end_iteration());
    }
  }
  return samples;
}

TraceIteration Engine::trace() {
  const detail::CurrentDevice keep;
  IOS_CUDA_CALL(cudaSetDevice(impl_->ctx.ordinal()));
  Runtime& rt = *impl_->runtime;
  const Program& p = rt.program();
  std::vector<Event> events;
  events.reserve(2 * p.launches.size());
  for (size_t i = 0; i < 2 * p.launches.size(); ++i) events.push_back(make_event(true));
  Event base = make_event(true), end = make_event(true);
  rt.synchronize();
  IOS_CUDA_CALL(cudaEventRecord(base.get(), impl_->ctx.stream(0)));
  rt.issue(&events);
  IOS_CUDA_CALL(cudaEventRecord(end.get(), impl_->ctx.stream(0)));
  IOS_CUDA_CALL(cudaEventSynchronize(end.get()));
  TraceIteration trace;
  trace.num_streams = std::max(p.num_streams, 1);
  float total = 0.0f;
  IOS_CUDA_CALL(cudaEventElapsedTime(&total, base.get(), end.get()));
  trace.total_us = total * 1000.0;
  for (size_t l = 0; l < p.launches.size(); ++l) {
    if (p.launches[l].ops.empty()) continue;  // e.g. a concat whose inputs were all written in place
    float begin = 0.0f, length = 0.0f;
    IOS_CUDA_CALL(cudaEventElapsedTime(&begin, base.get(), events[2 * l].get()));
    IOS_CUDA_CALL(cudaEventElapsedTime(&length, events[2 * l].get(), events[2 * l + 1].get()));
    trace.events.push_back({p.launches[l].name, p.launches[l].stream, begin * 1000.0, length * 1000.0, {}});
  }
  std::sort(trace.events.begin(), trace.events.end(),
            [](const TraceEvent& a, const TraceEvent& b) { return a.start_us < b.start_us; });
  return trace;
}

void Engine::write_trace(const std::string& path, const std::string& label) {
  TraceIteration t = trace();
  t.label = label;
  exec::write_chrome_trace(path, {t});
}

const EngineInfo& Engine::info() const { return impl_->info; }

std::string Engine::describe() const { return impl_->runtime->describe(); }

}  // namespace ios::cuda
