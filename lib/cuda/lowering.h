// The Lowerer: turns an ExecPlan into a Program (program.h). Internal to the
// CUDA backend; lower_program() is its entry point.
//
// Where tensors live is not decided here: the storage plan
// (exec/storage_plan.h) gives every activation its region and every node
// its in-place epilogue, and the Lowerer turns regions into Values. What it
// decides is which GPU operations compute each launch:
//  - lowering.cpp: the driver (launches, values from the storage plan,
//    constants) and the dispatch through the kernel table;
//  - lowering_table.cpp: the kernel table, the lowering of each ir::OpKind;
//  - lower_elementwise.cpp: element-wise chains fused into one operation;
//  - lower_conv.cpp: convolutions (cuDNN, fused epilogues) and merges;
//  - lower_compute.cpp: pooling, reductions, softmax, GEMM;
//  - lower_norm.cpp: layer normalization;
//  - lower_data.cpp: data movement (slices, splits, concats, pads, copies).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cuda/program.h"
#include "exec/storage_plan.h"

namespace ios::cuda {

class Lowerer;

// An operator's entry in the kernel table. `whole` lowers node n with the
// element-wise chain that runs in place after it; `into` writes node n's
// one output at value y, and the driver adds the chain after it.
struct OpLowering {
  void (Lowerer::*whole)(Launch& launch, ir::NodeId n,
                         const std::vector<ir::NodeId>& chain) = nullptr;
  void (Lowerer::*into)(Launch& launch, ir::NodeId n, int y) = nullptr;
  explicit operator bool() const { return whole != nullptr || into != nullptr; }
};

// The kernel table's entry for `op` (empty when the backend lacks it).
const OpLowering& lowering_for(ir::OpKind op);

class Lowerer {
 public:
  using NodeId = ir::NodeId;
  using TensorId = ir::TensorId;

  Lowerer(const sched::UnitGraph& units, const exec::ExecPlan& plan, const LowerOptions& options);
  Program run();

  // --- Driver (lowering.cpp) --------------------------------------------------
  void lower_unit(Launch& launch, const sched::Unit& unit);
  void lower_node(Launch& launch, NodeId n, const std::vector<NodeId>& chain);
  // The value of an IR activation, at its region of the storage plan.
  int value_for(TensorId t);
  int add_value(const std::string& name, const ir::Shape& shape, int buffer, int64_t offset,
                int64_t batch_stride);
  const Value& val(int v) const { return p_.values.at(static_cast<size_t>(v)); }
  TensorId member_output(sched::UnitId u) const;
  int constant(TensorId t, const ir::Shape& shape);
  int constant(TensorId t);
  int new_constant(const std::string& name, ir::Shape shape, std::vector<float> data);
  // A per-channel vector [C] shaped to broadcast along dim 1 of a rank-`rank` tensor.
  static ir::Shape channel_shape(int64_t channels, size_t rank);
  Ref ref_for(TensorId t);

  // --- Element-wise chains (lower_elementwise.cpp) ----------------------------
  void append_steps(NodeId m, TensorId cur, std::vector<EwStep>& steps);
  static void push_elementwise(Launch& launch, Ref x, int y, std::vector<EwStep> steps);
  TensorId chain_input(NodeId anchor, const std::vector<NodeId>& chain, size_t i) const;
  int chain_target(NodeId anchor, const std::vector<NodeId>& chain);
  void in_place_steps(Launch& launch, int y, NodeId anchor, const std::vector<NodeId>& chain,
                      size_t from, std::vector<EwStep> steps = {});
  void lower_elementwise(Launch& launch, NodeId n, const std::vector<NodeId>& chain);

  // --- Convolutions (lower_conv.cpp) --------------------------------------------
  int explicit_pad(Launch& launch, int x, std::array<int64_t, 4>& pads, const std::string& name);
  void lower_conv(Launch& launch, NodeId n, const std::vector<NodeId>& chain);
  void lower_merged(Launch& launch, int kernel);

  // --- Pooling, reductions, softmax, GEMM (lower_compute.cpp) -----------------
  void lower_pool(Launch& launch, NodeId n, int y);
  void lower_reduce(Launch& launch, NodeId n, int y);
  void lower_softmax(Launch& launch, NodeId n, int y);
  void lower_gemm(Launch& launch, NodeId n, int y);
  void lower_merged_product(Launch& launch, int kernel);

  // --- Normalization (lower_norm.cpp) -------------------------------------------
  void lower_layer_norm(Launch& launch, NodeId n, int y);

  // --- Data movement (lower_data.cpp) ----------------------------------------------
  void lower_transpose(Launch& launch, NodeId n, int y);
  CopyOp strided_copy(int src, int dst, const ir::Shape& dims);
  void lower_slice(Launch& launch, NodeId n, int y);
  void lower_split(Launch& launch, NodeId n, const std::vector<NodeId>& chain);
  void lower_concat(Launch& launch, NodeId n, const std::vector<NodeId>& chain);
  void lower_pad(Launch& launch, NodeId n, int y);
  void lower_resize(Launch& launch, NodeId n, int y);
  int dense(Launch& launch, int v);
  void lower_reshape_node(Launch& launch, NodeId n, int y);
  void lower_reshape(Launch& launch, int x, int y);

 private:
  const sched::UnitGraph& ug_;
  const ir::Graph& g_;
  const exec::ExecPlan& plan_;
  LowerOptions options_;
  exec::StoragePlan storage_;
  Program p_;
  std::vector<int> value_of_;  // per TensorId: its Value, once used
  std::map<std::pair<TensorId, ir::Shape>, int> const_of_;
};

// Appends operation `op` to `launch`, constructed in place: with no
// temporary Op to move, GCC's -Wmaybe-uninitialized cannot misread the
// temporary's inactive alternatives (it does at -O3 when these small
// functions are inlined).
template <typename T>
void emit(Launch& launch, T op) {
  launch.ops.emplace_back(std::in_place_type<T>, std::move(op));
}

// Shared by the lowering files.
inline int64_t normalize_axis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

}  // namespace ios::cuda
