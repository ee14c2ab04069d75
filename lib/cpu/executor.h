// CpuExecutor: runs a lowered plan (exec/plan.h) with the reference kernels.
//
// The plan's steps are issued in their global order on the calling thread:
// a launch runs its kernel's units' IR nodes in order (a merged kernel runs
// one convolution with the assembled weights, see below); event records and
// waits are no-ops, since the global order is already a valid sequential
// execution. Kernels parallelize internally (KernelContext::threads).
//
// Memory: the storage plan (exec/storage_plan.h), shared with the CUDA
// backend, decides where every activation lives (zero-copy concat slices,
// merged convolutions' slices, in-place epilogues) and places the storages
// in one arena by the plan's happens-before order; the arena persists
// across run() calls.
//
// Element types: values are held as float whatever the tensor's type; a
// 16-bit tensor holds floats rounded to its type (ir/element_type.h) wherever
// the CUDA backend stores one: every output a kernel writes, after the whole
// of an in-place element-wise chain (one CUDA kernel computes the chain in
// registers), and every graph input. Arithmetic is float32 as on the GPU.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cpu/view.h"
#include "exec/allocations.h"
#include "exec/npy.h"
#include "exec/plan.h"
#include "exec/storage_plan.h"
#include "sched/merge.h"
#include "sched/unit_graph.h"

namespace ios::cpu {

// The memory a run may use (docs/cli.md, *Limits*): physical memory, and
// the address space left under the RLIMIT_AS soft limit (`ulimit -v`).
struct MemoryBudget {
  int64_t physical_bytes = -1;       // -1: unknown
  int64_t address_space_limit = -1;  // the soft limit; -1: unlimited
  int64_t address_space_used = 0;    // what the process maps already
};
MemoryBudget current_memory_budget();

// Refuses (UserError, "not enough memory: ...") a run that would allocate
// `new_bytes` (the arena and the outputs) on top of `resident_bytes` (weights
// and inputs, already allocated) when the total exceeds physical memory, or
// `new_bytes` plus a margin for threads and libraries exceeds the address
// space left under the limit. `what` lists the parts for the message. The
// margin grows with `threads`: each worker thread maps its stack
// (thread_address_space).
void check_memory_budget(int64_t new_bytes, int64_t resident_bytes, const std::string& what,
                         const MemoryBudget& budget, int threads = 1);

// The address space `threads` threads map beyond the first's: a stack each
// (RLIMIT_STACK's soft limit, as glibc sizes them).
int64_t thread_address_space(int threads);

struct ExecutorOptions {
  int threads = 0;  // 0: all hardware threads
  // Where the arena (activations) and the merged kernels' assembled
  // weights are reported while they live (the engine API's
  // Engine::allocations()); null: nowhere. The model's own weights are the
  // IR's tensors, which the executor reads in place and does not count.
  exec::AllocationCounter* allocations = nullptr;
};

// What the memory plan decided (for reports and tests).
struct MemoryPlanStats {
  int storages = 0;               // logical buffers (after aliasing)
  int buffers = 0;                // distinct arena offsets they occupy after liveness reuse
  int64_t buffer_bytes = 0;       // the arena: the activation footprint
  int64_t unshared_bytes = 0;     // what one buffer per storage would take (aligned)
  int zero_copy_concat_inputs = 0;
  int in_place_nodes = 0;
  int merged_kernels = 0;
};

class CpuExecutor {
 public:
  // The unit graph (and the IR behind it) must outlive the executor.
  // Refuses (UserError) a plan whose memory does not fit `budget` (unset:
  // the machine's, current_memory_budget()) before allocating it.
  CpuExecutor(const sched::UnitGraph& graph, const exec::ExecPlan& plan,
              ExecutorOptions options = {}, std::optional<MemoryBudget> budget = std::nullopt);
  ~CpuExecutor();
  CpuExecutor(const CpuExecutor&) = delete;
  CpuExecutor& operator=(const CpuExecutor&) = delete;

  // Runs the plan once. Inputs and outputs are keyed by ONNX tensor name;
  // every graph input must be given with its exact shape (UserError
  // otherwise). Returns every graph output.
  std::map<std::string, exec::HostTensor> run(const std::map<std::string, exec::HostTensor>& inputs);

  // Wall-clock milliseconds of each of `iterations` runs, after `warmup` runs.
  std::vector<double> benchmark(const std::map<std::string, exec::HostTensor>& inputs, int warmup,
                                int iterations);

  const MemoryPlanStats& memory_stats() const { return stats_; }
  int threads() const { return threads_; }

 private:
  struct Merged {
    const sched::MergeSpec* spec = nullptr;  // owned by storage_
    sched::MergedWeights weights;
    // The temporary [N, sum of member channels, H, W], or [..., sum of member columns].
    exec::Region region;
    exec::CountedAllocation counted;  // the assembled weights, per executor
  };
  // One step of the program: an IR node, or a merged convolution or matrix
  // product.
  struct Instr {
    ir::NodeId node = ir::kNone;
    int merged = -1;
    bool rounds = true;  // its outputs are stored: rounded to their types (16-bit models only)
    // An output shares storage with an activation input (an in-place
    // element-wise node, a chain's link): the inputs' finiteness must be
    // read before it runs, since it overwrites them.
    bool in_place = false;
  };

  void build_program(const exec::ExecPlan& plan);
  void check_memory(const MemoryBudget& budget) const;
  void place_storages(const exec::ExecPlan& plan);
  float* data_of(const exec::Region& region);
  View view_of(ir::TensorId tensor);
  ConstView const_view_of(ir::TensorId tensor);
  void execute(const Instr& instr);
  void round_outputs(const Instr& instr, std::optional<bool> inputs_finite);
  bool inputs_finite(const ir::Node& node);
  void check_finite(const ir::Node& node, ir::TensorId output, std::optional<bool> inputs_finite);
  void execute_merged_product(const Merged& merged);

  const sched::UnitGraph& graph_;
  const ir::Graph& ir_;
  int threads_ = 1;
  std::vector<Instr> program_;
  std::vector<Merged> merged_;
  exec::StoragePlan storage_;
  std::vector<int64_t> storage_offsets_;  // elements into arena_, per storage
  // Bytes of the arena layout per float of arena_: 4, or 2 when the model
  // has 16-bit tensors (their storages take 2 bytes per element in the
  // layout, which the device allocates; a float32 storage's byte range then
  // maps to twice the floats it needs, so placements stay disjoint).
  int64_t layout_bytes_per_float_ = 4;
  bool rounds_ = false;  // the model has 16-bit tensors
  int64_t arena_elements_ = 0;
  std::vector<float> arena_;  // allocated on first run
  exec::AllocationCounter* allocations_ = nullptr;
  exec::CountedAllocation arena_counted_;
  MemoryPlanStats stats_;
};

}  // namespace ios::cpu
