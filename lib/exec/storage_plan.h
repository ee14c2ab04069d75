// StoragePlan: where every activation of a lowered plan lives, decided once
// for both backends (the CPU executor and the CUDA lowering consume it; only
// their kernels differ).
//
// Every activation tensor the plan reads or writes gets a Region (region.h):
// a storage plus an element offset and a batch stride. Several tensors share
// a storage where the plan aliases them:
//  - operator merge: a merged convolution writes one storage of all members'
//    channels; each member's output (and its convolution's output, on which
//    the member's epilogue runs in place) is the channel slice of it. A
//    merged matrix product writes a storage of its own with all members'
//    columns (last axis); its members' tensors are placed as if unmerged,
//    and the launch copies each member's columns into its product's output
//    (a Region has one stride per item, so a column slice is not a region);
//  - zero-copy concat: a Concat on axis 1 owns one storage; an input that only
//    the Concat reads (once), produced by the plan and of the same batch, is
//    the channel slice of it, so its producer writes there and the Concat
//    copies nothing for it (nested concats compose, outermost first);
//  - in-place epilogues: an element-wise chain fused after a node of the same
//    unit (each link the only reader of its input, of the output's shape, its
//    other operands ready) runs in place: the node and every link write the
//    chain's last output (epilogue()).
// Everything else is dense in a storage of its own. Graph inputs and outputs
// (with `partial`, a stage's external inputs and results) are persistent:
// read and written between runs, they never share memory.
//
// Liveness and reuse: memory_requests() lists per storage its bytes, its
// persistence and the launches that use it; plan_memory() (memory_layout.h)
// places the storages in one arena, sharing memory only between storages
// whose uses are ordered by the plan's happens-before relation (stream
// order and event waits), so the placement is valid for every stream
// interleaving, and in particular for the CPU's issue order.
#pragma once

#include <string>
#include <vector>

#include "exec/memory_layout.h"
#include "exec/plan.h"
#include "exec/region.h"
#include "ir/graph.h"
#include "sched/merge.h"
#include "sched/unit_graph.h"

namespace ios::exec {

// The element-wise operators: they fuse into a unit's epilogue, read each
// element before writing it (so their output may take their chained
// input's storage), and the CUDA backend lowers each as a step of its
// element-wise chain kernel.
bool is_in_place_elementwise(ir::OpKind op);

struct StoragePlanOptions {
  // Stage measurement: the plan covers some units only. Activations read but
  // not produced by the plan become inputs; values read by units outside the
  // plan become outputs. (With a full plan both rules give exactly the graph
  // inputs and outputs.)
  bool partial = false;
};

struct Storage {
  std::string name;  // the first tensor placed in it, or "merged:<unit ids>"
  int64_t elements = 0;
  bool persistent = false;
  // Every tensor placed in a storage has its type: an in-place chain never
  // changes the type (a type-changing Cast is no epilogue), Concat's inputs
  // and a merge's members share theirs.
  ir::ElementType type = ir::ElementType::kFloat32;
  int64_t bytes() const { return elements * ir::bytes_of(type); }
};

class StoragePlan {
 public:
  // `graph` must have an IR; neither it nor `plan` is referenced afterwards.
  // Throws UserError when the plan merges units that cannot merge.
  StoragePlan(const sched::UnitGraph& graph, const ExecPlan& plan, StoragePlanOptions options = {});

  const std::vector<Storage>& storages() const { return storages_; }

  // A backend's scratch storage: a temporary of `elements` floats that only
  // launch `kernel` (ExecPlan::kernels index) reads and writes (a dense copy
  // of a strided tensor, an explicit pad). Appended after the plan's own
  // storages and sized and placed with them by memory_requests(); never
  // persistent. Returns its storage index. (The CPU executor requests none.)
  // Its elements are of `type` (the tensor it stands for).
  int add_scratch(std::string name, int64_t elements, int kernel,
                  ir::ElementType type = ir::ElementType::kFloat32);

  // The region of an activation tensor the plan reads or writes.
  bool has_region(ir::TensorId t) const { return regions_.at(static_cast<size_t>(t)).placed(); }
  const Region& region(ir::TensorId t) const;

  // Tensors set from outside before a run and read back after it, in order.
  const std::vector<ir::TensorId>& inputs() const { return inputs_; }
  const std::vector<ir::TensorId>& outputs() const { return outputs_; }
  bool persistent(ir::TensorId t) const { return persistent_.at(static_cast<size_t>(t)) != 0; }

  // Merged kernel `kernel` (ExecPlan::kernels index): its members and the
  // region of its whole output [N, sum of member channels, H, W] (a merged
  // matrix product: [..., sum of member columns], dense).
  const sched::MergeSpec& merge_spec(int kernel) const;
  const Region& merged_region(int kernel) const;

  // The element-wise nodes that run in place after `node`, in order (empty
  // when none). Nodes of merged convolutions' members are not listed: a
  // member's whole epilogue runs in place on its slice. (A merged matrix
  // product's members are listed as if unmerged.)
  const std::vector<ir::NodeId>& epilogue(ir::NodeId node) const {
    return epilogues_.at(static_cast<size_t>(node));
  }
  bool in_epilogue(ir::NodeId node) const {
    return in_epilogue_.at(static_cast<size_t>(node)) != 0;
  }
  // Whether concat input `t` was placed in its slice of the Concat's output.
  bool zero_copy_concat_input(ir::TensorId t) const {
    return zero_copy_.at(static_cast<size_t>(t)) != 0;
  }

  // Per storage: bytes, persistence, and the launches (ExecPlan::kernels
  // indices) whose units read or write a tensor in it.
  std::vector<MemoryRequest> memory_requests() const;

  int zero_copy_concat_inputs() const { return zero_copy_concat_inputs_; }
  int in_place_nodes() const { return in_place_nodes_; }

 private:
  class Builder;
  friend class Builder;

  std::vector<Storage> storages_;
  std::vector<std::vector<int>> users_;  // per storage, sorted
  std::vector<Region> regions_;          // per TensorId
  std::vector<ir::TensorId> inputs_, outputs_;
  std::vector<char> persistent_, zero_copy_, in_epilogue_;
  std::vector<std::vector<ir::NodeId>> epilogues_;  // per NodeId
  std::vector<int> merged_index_;                   // per kernel: index into merges_, or -1
  std::vector<sched::MergeSpec> merges_;
  std::vector<Region> merged_regions_;
  int zero_copy_concat_inputs_ = 0;
  int in_place_nodes_ = 0;
};

}  // namespace ios::exec
