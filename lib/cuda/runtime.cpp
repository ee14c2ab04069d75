#include "cuda/runtime.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>

#include "core/error.h"
#include "core/log.h"
#include "cuda/check.h"
#include "cuda/kernels.h"
#include "exec/memory_layout.h"

namespace ios::cuda {
namespace {

constexpr int64_t kAlignment = kBufferAlignment;  // bytes; cuDNN and vector loads like it

int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

}  // namespace

Runtime::Runtime(Context& ctx, Program program, bool cuda_graph, DevicePool* pool, const RuntimeMemory& memory)
    : ctx_(ctx), program_(std::move(program)), pooled_(pool != nullptr) {
  Program& p = program_;
  IOS_CUDA_CALL(cudaSetDevice(ctx_.ordinal()));
  ctx_.ensure_streams(std::max(p.num_streams, 1));
  prepare_operations(pool != nullptr, memory.size_only);
  place_buffers(pool, memory);
  if (memory.size_only) return;
  place_weights(pool, memory);
  fill_inputs(pool != nullptr);

  // Operations, with their pointers: each gets those of the values it declared.
  ops_.resize(p.launches.size());
  for (size_t l = 0; l < p.launches.size(); ++l) {
    for (const std::unique_ptr<Operation>& op : p.launches[l].ops) {
      Uses uses;
      op->uses(uses);
      ops_[l].push_back(op->launch(Binding(p, value_ptrs_, const_ptrs_, std::move(uses))));
    }
  }

  // Events, a validating plain run, and the graph.
  for (int e = 0; e < p.num_events; ++e) events_.push_back(make_event());
  fork_ = make_event();
  for (int s = 0; s < p.num_streams; ++s) joins_.push_back(make_event());
  // A plain run first: every cuDNN handle meets its calls outside capture, and
  // an error is reported with plain-launch context.
  issue();
  synchronize();
  if (cuda_graph) {
    IOS_ASSERT(std::none_of(p.steps.begin(), p.steps.end(),
                            [](const exec::Step& s) { return s.kind == exec::Step::Kind::kSync; }),
               "a plan whose host synchronizes the device cannot be captured as a CUDA graph");
    capture();
  }
}

// Algorithms (which may add staging buffers) and workspace sizes per stream.
void Runtime::prepare_operations(bool pooled, bool size_only) {
  Program& p = program_;
  std::vector<size_t> workspace(static_cast<size_t>(std::max(p.num_streams, 1)), 0);
  for (Launch& launch : p.launches) {
    for (std::unique_ptr<Operation>& op : launch.ops) {
      Preparation prep{ctx_, p, workspace.at(static_cast<size_t>(launch.stream)), stats_};
      op->prepare(prep);
    }
  }
  if (!pooled) ctx_.release_scratch();  // a pool's next stage may search again
  if (size_only) return;                // the workspaces are the engines' own
  for (size_t s = 0; s < workspace.size(); ++s) ctx_.ensure_workspace(static_cast<int>(s), workspace[s]);
  stats_.workspace_bytes = ctx_.total_workspace_bytes();
}

// Memory: buffers placed in one arena by liveness.
void Runtime::place_buffers(DevicePool* pool, const RuntimeMemory& memory) {
  const Program& p = program_;
  const exec::HappensBefore order(static_cast<int>(p.launches.size()), std::max(p.num_streams, 1), p.num_events, p.steps);
  const exec::MemoryLayout layout = exec::plan_memory(p.memory_requests(), order, kAlignment);
  char* arena = nullptr;
  stats_.arena_bytes = static_cast<size_t>(layout.total_bytes);
  stats_.arena_unshared_bytes = static_cast<size_t>(layout.unshared_bytes);
  if (memory.size_only) return;
  if (pool != nullptr) {
    arena = pool->arena(layout.total_bytes);
  } else if (memory.arena != nullptr) {
    if (memory.arena_bytes < static_cast<size_t>(layout.total_bytes)) {
      user_error("the device memory given to the execution context ({} bytes) is smaller than it needs "
                 "({} bytes, Engine::device_memory_size())",
                 memory.arena_bytes, layout.total_bytes);
    }
    if (reinterpret_cast<uintptr_t>(memory.arena) % static_cast<uintptr_t>(kAlignment) != 0) {
      user_error("the device memory given to the execution context is not aligned to {} bytes (as "
                 "cudaMalloc's is)", kAlignment);
    }
    // Where CUDA can tell: memory of the engine's device (or managed memory).
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, memory.arena) != cudaSuccess) {
      detail::clear_failed_attempt();
    } else if (attributes.type == cudaMemoryTypeUnregistered || attributes.type == cudaMemoryTypeHost) {
      user_error("the device memory given to the execution context is host memory; give device memory of "
                 "CUDA device {} (cudaMalloc)", ctx_.ordinal());
    } else if (attributes.type == cudaMemoryTypeDevice && attributes.device != ctx_.ordinal()) {
      user_error("the device memory given to the execution context is memory of CUDA device {} but the "
                 "engine runs on device {}; give memory of device {}",
                 attributes.device, ctx_.ordinal(), ctx_.ordinal());
    }
    arena = static_cast<char*>(memory.arena);
  } else {
    arena_ = DeviceBuffer(static_cast<size_t>(layout.total_bytes));
    arena_counted_ = exec::CountedAllocation(memory.allocations, exec::AllocationKind::kActivations,
                                             layout.total_bytes);
    arena = static_cast<char*>(arena_.get());
  }
  value_ptrs_.resize(p.values.size());
  for (size_t v = 0; v < p.values.size(); ++v) {
    const Value& value = p.values[v];
    char* base = arena + layout.offsets.at(static_cast<size_t>(value.buffer));
    value_ptrs_[v] = base + value.offset * ir::bytes_of(value.type);
  }
  // float32 staging for the 16-bit inputs and outputs (host arrays are float32).
  auto stage = [&](const std::vector<std::pair<std::string, int>>& io, std::vector<DeviceBuffer>& out) {
    out.clear();
    for (const auto& entry : io) {
      const Value& v = p.values.at(static_cast<size_t>(entry.second));
      out.emplace_back(v.type == ir::ElementType::kFloat32 ? 0 : static_cast<size_t>(v.size()) * sizeof(float));
    }
  };
  stage(p.inputs, input_stage_);
  stage(p.outputs, output_stage_);
}

// Weights: uploaded once, each constant aligned (or resident in the pool).
void Runtime::place_weights(DevicePool* pool, const RuntimeMemory& memory) {
  const Program& p = program_;
  int64_t weight_bytes = 0;
  for (const Constant& c : p.constants) {
    weight_bytes = align_up(weight_bytes + c.bytes(), kAlignment);
  }
  stats_.weights_bytes = static_cast<size_t>(weight_bytes);
  if (pool != nullptr) {
    const_ptrs_ = pool->weights(p.constants, ctx_.stream(0));
  } else if (memory.weights != nullptr) {
    const_ptrs_.clear();
    for (const Constant& c : p.constants) {
      const auto it = memory.weights->find({c.data.get(), c.type});
      IOS_ASSERT(it != memory.weights->end(), "constant '{}' is not among the shared device weights", c.name);
      const_ptrs_.push_back(it->second);
    }
  } else {
    weights_ = DeviceBuffer(static_cast<size_t>(weight_bytes));
    weights_counted_ = exec::CountedAllocation(memory.allocations, exec::AllocationKind::kWeights, weight_bytes);
    const_ptrs_.resize(p.constants.size());
    int64_t offset = 0;
    for (size_t c = 0; c < p.constants.size(); ++c) {
      auto* dst = static_cast<char*>(weights_.get()) + offset;
      const_ptrs_[c] = dst;
      const size_t bytes = upload_constant(dst, p.constants[c], ctx_.stream(0));
      offset = align_up(offset + static_cast<int64_t>(bytes), kAlignment);
    }
  }
}

// Inputs start as fixed pseudo-random values so time() works before run():
// made on the device for stage measurement (no host round trip per stage),
// uploaded otherwise.
void Runtime::fill_inputs(bool pooled) {
  const Program& p = program_;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const Value& v = p.values.at(static_cast<size_t>(p.inputs[i].second));
    if (pooled) {
      fill_input_on_device(i);
      continue;
    }
    std::vector<float> data(static_cast<size_t>(v.size()));
    uint64_t state = 0x9E3779B97F4A7C15ULL * (i + 1);
    for (float& f : data) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      f = static_cast<float>((state >> 40) & 0xFFFFFF) / 16777216.0f * 2.0f - 1.0f;
    }
    upload_input(static_cast<int>(i), data.data());
    synchronize();  // `data` dies here
  }
}

void Runtime::fill_input_on_device(size_t index) {
  const Program& p = program_;
  const Value& v = p.values.at(static_cast<size_t>(p.inputs.at(index).second));
  IOS_ASSERT(v.dense(), "stage input '{}' is not dense", v.name);
  IOS_CUDA_CALL(kernels::fill_uniform(value_ptr(p.inputs[index].second), v.type, v.size(),
                                      0x9E3779B97F4A7C15ULL * (index + 1), ctx_.stream(0)));
}

void Runtime::rewrite_inputs() {
  // The same seeds as fill_inputs(): the same values, so the stage's work
  // (and its timing) does not change from one sample to the next.
  IOS_ASSERT(pooled_, "only a pooled runtime fills its inputs on the device");
  for (size_t i = 0; i < program_.inputs.size(); ++i) fill_input_on_device(i);
}

void Runtime::execute_empty() {
  if (!empty_exec_) {
    // Built, not captured: a capture of events alone records no nodes, and
    // a graph without nodes might not be launched like one with work.
    cudaGraph_t graph = nullptr;
    IOS_CUDA_CALL(cudaGraphCreate(&graph, 0));
    empty_graph_ = Graph(graph);
    const int streams = std::max(program_.num_streams, 1);
    std::vector<cudaGraphNode_t> forks(static_cast<size_t>(streams));
    for (cudaGraphNode_t& node : forks) IOS_CUDA_CALL(cudaGraphAddEmptyNode(&node, graph, nullptr, 0));
    if (streams > 1) {
      cudaGraphNode_t join = nullptr;
      IOS_CUDA_CALL(cudaGraphAddEmptyNode(&join, graph, forks.data(), forks.size()));
    }
    cudaGraphExec_t exec = nullptr;
    IOS_CUDA_CALL(cudaGraphInstantiate(&exec, graph, 0));
    empty_exec_ = GraphExec(exec);
    IOS_CUDA_CALL(cudaGraphUpload(exec, ctx_.stream(0)));
  }
  IOS_CUDA_CALL(cudaGraphLaunch(empty_exec_.get(), ctx_.stream(0)));
}

Runtime::~Runtime() {
  // Work may still be in flight when an exception unwinds; never throw here.
  if (ctx_.num_streams() > 0) IOS_CUDA_CALL_NOTHROW(cudaStreamSynchronize(ctx_.stream(0)));
}

// The copy kernel between a 16-bit value (its strides) and a dense float32
// array on the device, converting.
void Runtime::convert_io(int value, const void* src, void* dst, bool to_value) {
  const Value& v = program_.values.at(static_cast<size_t>(value));
  const std::vector<int64_t> dims{v.batch(), v.item_size()};
  kernels::CopyParams cp;
  cp.rank = 2;
  fill_dims(cp.dims, dims, "an input or output");
  cp.total = v.size();
  cp.src = src;
  cp.dst = dst;
  const std::vector<int64_t> value_strides{v.batch_stride, 1}, dense{v.item_size(), 1};
  fill_dims(cp.src_strides, to_value ? dense : value_strides, "an input or output");
  fill_dims(cp.dst_strides, to_value ? value_strides : dense, "an input or output");
  cp.src_type = to_value ? ir::ElementType::kFloat32 : v.type;
  cp.dst_type = to_value ? v.type : ir::ElementType::kFloat32;
  IOS_CUDA_CALL(kernels::copy(cp, ctx_.stream(0)));
}

void Runtime::upload_input(int index, const float* data, cudaMemcpyKind kind) {
  const Value& v = program_.values.at(static_cast<size_t>(program_.inputs.at(static_cast<size_t>(index)).second));
  IOS_ASSERT(v.dense(), "input '{}' is not dense", v.name);
  if (v.type != ir::ElementType::kFloat32) {
    void* stage = input_stage_.at(static_cast<size_t>(index)).get();
    IOS_CUDA_CALL(cudaMemcpyAsync(stage, data, static_cast<size_t>(v.size()) * sizeof(float), kind, ctx_.stream(0)));
    convert_io(program_.inputs[static_cast<size_t>(index)].second, stage,
               value_ptr(program_.inputs[static_cast<size_t>(index)].second), true);
    return;
  }
  IOS_CUDA_CALL(cudaMemcpyAsync(value_ptr(program_.inputs[static_cast<size_t>(index)].second), data,
                                static_cast<size_t>(v.size()) * sizeof(float), kind, ctx_.stream(0)));
}

void Runtime::download_input(int index, float* data) {
  const Value& v = program_.values.at(static_cast<size_t>(program_.inputs.at(static_cast<size_t>(index)).second));
  IOS_ASSERT(v.dense(), "input '{}' is not dense", v.name);
  if (v.type != ir::ElementType::kFloat32) {
    void* stage = input_stage_.at(static_cast<size_t>(index)).get();
    convert_io(program_.inputs[static_cast<size_t>(index)].second,
               value_ptr(program_.inputs[static_cast<size_t>(index)].second), stage, false);
    IOS_CUDA_CALL(cudaMemcpyAsync(data, stage, static_cast<size_t>(v.size()) * sizeof(float), cudaMemcpyDeviceToHost,
                                  ctx_.stream(0)));
    return;
  }
  IOS_CUDA_CALL(cudaMemcpyAsync(data, value_ptr(program_.inputs[static_cast<size_t>(index)].second),
                                static_cast<size_t>(v.size()) * sizeof(float), cudaMemcpyDeviceToHost, ctx_.stream(0)));
}

void Runtime::download_output(int index, float* data, cudaMemcpyKind kind) {
  const int id = program_.outputs.at(static_cast<size_t>(index)).second;
  const Value& v = program_.values.at(static_cast<size_t>(id));
  if (v.type != ir::ElementType::kFloat32) {
    void* stage = output_stage_.at(static_cast<size_t>(index)).get();
    convert_io(id, value_ptr(id), stage, false);
    IOS_CUDA_CALL(
        cudaMemcpyAsync(data, stage, static_cast<size_t>(v.size()) * sizeof(float), kind, ctx_.stream(0)));
    return;
  }
  if (v.dense()) {
    IOS_CUDA_CALL(cudaMemcpyAsync(data, value_ptr(id), static_cast<size_t>(v.size()) * sizeof(float), kind,
                                  ctx_.stream(0)));
  } else {
    const size_t item = static_cast<size_t>(v.item_size()) * sizeof(float);
    IOS_CUDA_CALL(cudaMemcpy2DAsync(data, item, value_ptr(id), static_cast<size_t>(v.batch_stride) * sizeof(float),
                                    item, static_cast<size_t>(v.batch()), kind, ctx_.stream(0)));
  }
}

void Runtime::copy_input_as_is(int index, const void* data) {
  const int id = program_.inputs.at(static_cast<size_t>(index)).second;
  const Value& v = program_.values.at(static_cast<size_t>(id));
  IOS_ASSERT(v.dense(), "input '{}' is not dense", v.name);
  IOS_CUDA_CALL(cudaMemcpyAsync(value_ptr(id), data, static_cast<size_t>(v.size()) * static_cast<size_t>(ir::bytes_of(v.type)),
                                cudaMemcpyDeviceToDevice, ctx_.stream(0)));
}

void Runtime::copy_output_as_is(int index, void* data) {
  const int id = program_.outputs.at(static_cast<size_t>(index)).second;
  const Value& v = program_.values.at(static_cast<size_t>(id));
  const size_t element = static_cast<size_t>(ir::bytes_of(v.type));
  const size_t item = static_cast<size_t>(v.item_size()) * element;
  IOS_CUDA_CALL(cudaMemcpy2DAsync(data, item, value_ptr(id), static_cast<size_t>(v.batch_stride) * element, item,
                                  static_cast<size_t>(v.batch()), cudaMemcpyDeviceToDevice, ctx_.stream(0)));
}

void Runtime::synchronize() { IOS_CUDA_CALL(cudaStreamSynchronize(ctx_.stream(0))); }

void Runtime::issue(const std::vector<Event>* launch_events) {
  const int streams = std::max(program_.num_streams, 1);
  cudaStream_t main = ctx_.stream(0);
  if (streams > 1) {
    // Fork: every stream starts after what stream 0 issued before (inputs).
    IOS_CUDA_CALL(cudaEventRecord(fork_.get(), main));
    for (int s = 1; s < streams; ++s) IOS_CUDA_CALL(cudaStreamWaitEvent(ctx_.stream(s), fork_.get(), 0));
  }
  for (const exec::Step& step : program_.steps) {
    cudaStream_t stream = ctx_.stream(step.stream);
    switch (step.kind) {
      case exec::Step::Kind::kLaunch: {
        const IssueContext c{stream, ctx_.cudnn(step.stream), ctx_.workspace(step.stream),
                             ctx_.workspace_bytes(step.stream)};
        const auto k = static_cast<size_t>(step.kernel);
        if (launch_events) IOS_CUDA_CALL(cudaEventRecord((*launch_events)[2 * k].get(), stream));
        for (const auto& op : ops_.at(k)) op->issue(c);
        if (launch_events) IOS_CUDA_CALL(cudaEventRecord((*launch_events)[2 * k + 1].get(), stream));
        break;
      }
      case exec::Step::Kind::kRecord:
        IOS_CUDA_CALL(cudaEventRecord(events_.at(static_cast<size_t>(step.event)).get(), stream));
        break;
      case exec::Step::Kind::kWait:
        IOS_CUDA_CALL(cudaStreamWaitEvent(stream, events_.at(static_cast<size_t>(step.event)).get(), 0));
        break;
      case exec::Step::Kind::kSync:
        IOS_CUDA_CALL(cudaDeviceSynchronize());
        break;
    }
  }
  if (streams > 1) {
    // Join: stream 0 ends after every stream (required to end a capture).
    for (int s = 1; s < streams; ++s) {
      IOS_CUDA_CALL(cudaEventRecord(joins_.at(static_cast<size_t>(s)).get(), ctx_.stream(s)));
      IOS_CUDA_CALL(cudaStreamWaitEvent(main, joins_[static_cast<size_t>(s)].get(), 0));
    }
  }
}

void Runtime::capture() {
  cudaStream_t main = ctx_.stream(0);
  IOS_CUDA_CALL(cudaStreamBeginCapture(main, cudaStreamCaptureModeThreadLocal));
  try {
    issue();
  } catch (...) {
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(main, &broken);  // leave the stream usable; the error that matters is in flight
    if (broken != nullptr) cudaGraphDestroy(broken);
    cudaGetLastError();
    throw;
  }
  cudaGraph_t graph = nullptr;
  IOS_CUDA_CALL(cudaStreamEndCapture(main, &graph));
  graph_ = Graph(graph);
  cudaGraphExec_t exec = nullptr;
  IOS_CUDA_CALL(cudaGraphInstantiate(&exec, graph, 0));
  graph_exec_ = GraphExec(exec);
  IOS_CUDA_CALL(cudaGraphUpload(exec, main));
}

void Runtime::execute() {
  if (graph_exec_) {
    IOS_CUDA_CALL(cudaGraphLaunch(graph_exec_.get(), ctx_.stream(0)));
  } else {
    issue();
  }
}

std::string Runtime::describe() const {
  std::ostringstream out;
  const Program& p = program_;
  out << fmt::format("{} launches on {} stream(s), {} GPU operations; weights {:.1f} MiB, activation arena {:.1f} MiB "
                     "({:.1f} MiB without reuse), cuDNN/cuBLASLt workspaces {:.1f} MiB; {}\n",
                     p.launches.size(), p.num_streams, p.num_ops(), stats_.weights_bytes / 1048576.0,
                     stats_.arena_bytes / 1048576.0, stats_.arena_unshared_bytes / 1048576.0,
                     stats_.workspace_bytes / 1048576.0, graph_exec_ ? "CUDA graph" : "plain launches");
  for (size_t l = 0; l < p.launches.size(); ++l) {
    out << fmt::format("launch {} [stream {}] {}{}\n", l, p.launches[l].stream, p.launches[l].merged ? "merged " : "",
                       p.launches[l].name);
    for (const auto& op : ops_[l]) out << "    " << op->describe() << '\n';
  }
  return out.str();
}

}  // namespace ios::cuda
