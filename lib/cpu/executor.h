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
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cpu/view.h"
#include "exec/npy.h"
#include "exec/plan.h"
#include "exec/storage_plan.h"
#include "sched/merge.h"
#include "sched/unit_graph.h"

namespace ios::cpu {

struct ExecutorOptions {
  int threads = 0;  // 0: all hardware threads
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
  CpuExecutor(const sched::UnitGraph& graph, const exec::ExecPlan& plan, ExecutorOptions options = {});
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
  };
  // One step of the program: an IR node, or a merged convolution or matrix
  // product.
  struct Instr {
    ir::NodeId node = ir::kNone;
    int merged = -1;
  };

  void build_program(const exec::ExecPlan& plan);
  void place_storages(const exec::ExecPlan& plan);
  float* data_of(const exec::Region& region);
  View view_of(ir::TensorId tensor);
  ConstView const_view_of(ir::TensorId tensor);
  void execute(const Instr& instr);
  void execute_merged_product(const Merged& merged);

  const sched::UnitGraph& graph_;
  const ir::Graph& ir_;
  int threads_ = 1;
  std::vector<Instr> program_;
  std::vector<Merged> merged_;
  exec::StoragePlan storage_;
  std::vector<int64_t> storage_offsets_;  // elements into arena_, per storage
  int64_t arena_elements_ = 0;
  std::vector<float> arena_;  // allocated on first run
  MemoryPlanStats stats_;
};

}  // namespace ios::cpu
