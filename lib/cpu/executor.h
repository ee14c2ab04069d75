// CpuExecutor: runs a lowered plan (exec/plan.h) with the reference kernels.
//
// The plan's steps are issued in their global order on the calling thread:
// a launch runs its kernel's units' IR nodes in order (a merged kernel runs
// one convolution with the assembled weights, see below); event records and
// waits are no-ops, since the global order is already a valid sequential
// execution. Kernels parallelize internally (KernelContext::threads).
//
// Memory plan, made once at construction:
//  - every activation tensor gets a location: a storage plus a channel
//    offset and a batch stride (a view, cpu/view.h);
//  - zero-copy concat: a 4-D tensor whose only use is a channel Concat is a
//    view into its slice of the Concat's output, so its producer writes there
//    and the Concat copies nothing for it;
//  - in-place epilogues: the input of an element-wise operator (Relu, Clip,
//    BatchNorm, Add of a constant...) that nothing else reads shares the
//    operator's output location;
//  - merged convolutions (IOS operator merge) write one temporary buffer of
//    all members' channels; each member's convolution output is the view of
//    its channel slice in it, read in place by the member's epilogue and
//    consumers;
//  - storages are packed into reusable buffers by liveness (first write to
//    last read in issue order); buffers persist across run() calls.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cpu/view.h"
#include "exec/npy.h"
#include "exec/plan.h"
#include "sched/merge.h"
#include "sched/unit_graph.h"

namespace ios::cpu {

struct ExecutorOptions {
  int threads = 0;  // 0: all hardware threads
};

// What the memory plan decided (for reports and tests).
struct MemoryPlanStats {
  int storages = 0;               // logical buffers (after aliasing)
  int buffers = 0;                // physical buffers after liveness reuse
  int64_t buffer_bytes = 0;       // sum of the physical buffers: the activation footprint
  int64_t unshared_bytes = 0;     // what one buffer per storage would take
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
  struct Location {
    int storage = -1;
    int64_t offset = 0;        // elements from the storage's start
    int64_t batch_stride = 0;  // elements between items of dim 0
  };
  struct Storage {
    int64_t size = 0;  // elements
    int buffer = -1;   // physical buffer
  };
  struct Merged {
    sched::MergeSpec spec;
    sched::MergedWeights weights;
    int storage = -1;  // the temporary [N, sum of member channels, H, W]
    ir::Shape shape;
  };
  // One step of the program: an IR node, or a merged convolution.
  struct Instr {
    ir::NodeId node = ir::kNone;
    int merged = -1;
  };

  void build_program(const exec::ExecPlan& plan);
  void assign_locations();
  void plan_buffers();
  View view_of(ir::TensorId tensor);
  ConstView const_view_of(ir::TensorId tensor);
  void execute(const Instr& instr);

  const sched::UnitGraph& graph_;
  const ir::Graph& ir_;
  int threads_ = 1;
  std::vector<Instr> program_;
  std::vector<Merged> merged_;
  std::vector<Location> locations_;  // per TensorId (activations only)
  std::vector<Storage> storages_;
  std::vector<int64_t> buffer_sizes_;
  std::vector<std::vector<float>> buffers_;  // allocated on first run
  MemoryPlanStats stats_;
};

}  // namespace ios::cpu
