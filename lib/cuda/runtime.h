// Runtime: one lowered Program made executable on a Context. Built once
// (algorithm choice, memory plan, allocation, weight upload, CUDA graph
// capture); afterwards an iteration allocates nothing.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cuda/context.h"
#include "cuda/conv.h"
#include "cuda/device_pool.h"
#include "cuda/launch.h"
#include "cuda/program.h"
#include "cuda/resources.h"
#include "exec/allocations.h"

namespace ios::cuda {

class Runtime;

// Device weights uploaded apart from any runtime (cuda::Weights), by the
// host tensor each constant was uploaded from and the type it was stored in.
using WeightTable = std::map<std::pair<const std::vector<float>*, ir::ElementType>, const void*>;

// With `weights` (outliving the runtime, holding every constant of its
// program) the device weights are looked up there, not uploaded again; with
// `arena` (`arena_bytes`, 256-byte aligned) the activations live in the
// caller's memory (the engine API's execution contexts). With `size_only`
// the runtime only chooses algorithms and plans its memory (stats().arena_bytes),
// allocating and capturing nothing: it cannot run. `allocations` counts
// what it allocates (arena, own weights) while it lives.
struct RuntimeMemory {
  const WeightTable* weights = nullptr;
  void* arena = nullptr;
  size_t arena_bytes = 0;
  bool size_only = false;
  exec::AllocationCounter* allocations = nullptr;
};

class Runtime {
 public:
  // With `pool` (stage measurement), the runtime borrows the pool's arena and
  // resident weights instead of allocating its own, keeps the context's
  // algorithm-search scratch for the next runtime, fills its inputs on the
  // device. The pool must outlive the runtime and serve no other runtime
  // meanwhile.
  // With `memory` (RuntimeMemory), weights or activations that are not the
  // runtime's own.
  Runtime(Context& ctx, Program program, bool cuda_graph, DevicePool* pool = nullptr,
          const RuntimeMemory& memory = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const Program& program() const { return program_; }
  const RuntimeStats& stats() const { return stats_; }
  bool uses_graph() const { return static_cast<bool>(graph_exec_); }

  // Host <-> device for the program's inputs and outputs (by position in
  // Program::inputs / outputs), asynchronous on stream 0, always as float32
  // arrays: a 16-bit input or output goes through a float32 staging buffer
  // of its own on the device (allocated at construction) and the copy
  // kernel converts between it and the tensor (rounding to nearest even).
  // `kind`: cudaMemcpyDeviceToDevice for the caller's device buffers (enqueue).
  void upload_input(int index, const float* data, cudaMemcpyKind kind = cudaMemcpyHostToDevice);
  void download_input(int index, float* data);  // what the input holds now
  void download_output(int index, float* data, cudaMemcpyKind kind = cudaMemcpyDeviceToHost);
  // Device to device in the value's own element type (a 16-bit input or
  // output the caller holds in that type): copied as is, not converted.
  void copy_input_as_is(int index, const void* data);
  void copy_output_as_is(int index, void* data);
  void synchronize();

  // One iteration on stream 0 (the other streams fork from and join into it):
  // a graph replay, or the plain launches when there is no graph.
  void execute();
  // One iteration by plain launches; with `launch_events` (two per launch,
  // timing-enabled) recorded around every launch on its stream.
  void issue(const std::vector<Event>* launch_events = nullptr);

  // Stage measurement (measured.cpp, timing_plan.h). The inputs written
  // again on stream 0 with the values they started with (a pooled runtime
  // only): they end up in L2 as if their producers had just written them.
  void rewrite_inputs();
  // One replay of a graph with this program's fork and join and no work:
  // an empty node per stream, all joined by one more (captured on first use).
  // Its event-timed replay is what a graph launch costs on the device beyond
  // the work, which a stage timed as a graph of its own pays and the whole
  // model's one graph does not.
  void execute_empty();

  std::string describe() const;

 private:
  void* value_ptr(int v) const { return value_ptrs_.at(static_cast<size_t>(v)); }
  // Converts between a 16-bit input or output value and its float32 staging.
  void convert_io(int value, const void* src, void* dst, bool to_value);
  void prepare_operations(bool pooled, bool size_only);
  void place_buffers(DevicePool* pool, const RuntimeMemory& memory);
  void place_weights(DevicePool* pool, const RuntimeMemory& memory);
  void fill_inputs(bool pooled);
  void fill_input_on_device(size_t index);
  void capture();

  Context& ctx_;
  Program program_;
  DeviceBuffer arena_, weights_;
  exec::CountedAllocation arena_counted_, weights_counted_;
  std::vector<void*> value_ptrs_;
  std::vector<const void*> const_ptrs_;
  // float32 staging of each 16-bit input and output (empty for float32 ones).
  std::vector<DeviceBuffer> input_stage_, output_stage_;
  std::vector<std::vector<std::unique_ptr<GpuOp>>> ops_;  // per launch
  std::vector<Event> events_;
  Event fork_;
  std::vector<Event> joins_;
  Graph graph_;
  GraphExec graph_exec_;
  Graph empty_graph_;
  GraphExec empty_exec_;
  RuntimeStats stats_;
  bool pooled_ = false;
};

}  // namespace ios::cuda
