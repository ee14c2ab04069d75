// The Lowerer: turns an ExecPlan into a Program (program.h). Internal to the
// CUDA backend; lower_program() is its entry point.
//
// Where tensors live is not decided here: the storage plan
// (exec/storage_plan.h) gives every activation its region and every node
// its in-place epilogue, and the Lowerer turns regions into Values. What it
// decides is which GPU operations compute each launch: lowering.cpp is the
// driver (launches, values from the storage plan, constants, scratch
// buffers requested from it) and dispatches each node through the kernel table
// (lowering_table.cpp) to the lowering function of its operator, which lives
// with the operation it emits in op_<name>.cpp. The element-wise chain that
// every operator's epilogue becomes is the Lowerer's own (op_elementwise.cpp).
#pragma once

#include <array>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cuda/operations.h"
#include "cuda/program.h"
#include "exec/storage_plan.h"

namespace ios::cuda {

class Lowerer;

// A kernel-table lowering: node n with the element-wise chain that runs in
// place after it (`Whole`), or node n's one output written at value y, the
// driver adding the chain after it (`Into`).
using LowerWhole = void (*)(Lowerer& lw, Launch& launch, ir::NodeId n,
                            const std::vector<ir::NodeId>& chain);
using LowerInto = void (*)(Lowerer& lw, Launch& launch, ir::NodeId n, int y);

// An operator's entry in the kernel table.
struct OpLowering {
  LowerWhole whole = nullptr;
  LowerInto into = nullptr;
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

  const ir::Graph& graph() const { return g_; }
  const sched::UnitGraph& units() const { return ug_; }
  const exec::StoragePlan& storage() const { return storage_; }
  Program& program() { return p_; }

  // --- Driver (lowering.cpp) --------------------------------------------------
  void lower_unit(Launch& launch, const sched::Unit& unit);
  void lower_node(Launch& launch, NodeId n, const std::vector<NodeId>& chain);
  // The value of an IR activation, at its region of the storage plan.
  int value_for(TensorId t);
  int add_value(const std::string& name, const ir::Shape& shape, int buffer, int64_t offset,
                int64_t batch_stride);
  // The value of a merged launch's whole output (the storage plan's region).
  int merged_value(int kernel);
  const Value& val(int v) const { return p_.values.at(static_cast<size_t>(v)); }
  // A dense scratch value of `shape` used inside `launch` only, requested
  // from the storage plan (exec::StoragePlan::add_scratch).
  // Its elements are of `type` (that of the tensor it stands for).
  int scratch(Launch& launch, const std::string& name, const ir::Shape& shape, ir::ElementType type);
  TensorId member_output(sched::UnitId u) const;
  int constant(TensorId t, const ir::Shape& shape);
  int constant(TensorId t);
  // A constant the lowering derives, uploaded as `type` (its float values
  // are rounded to it on upload when it is a 16-bit type).
  int new_constant(const std::string& name, ir::Shape shape, std::vector<float> data, ir::ElementType type);
  // The element type of an IR tensor, of a value, of an operand.
  ir::ElementType type_of(TensorId t) const { return g_.tensor(t).type; }
  // A per-channel vector [C] shaped to broadcast along dim 1 of a rank-`rank` tensor.
  static ir::Shape channel_shape(int64_t channels, size_t rank);
  Ref ref_for(TensorId t);

  // --- Element-wise chains (op_elementwise.cpp) -------------------------------
  void append_steps(NodeId m, TensorId cur, std::vector<EwStep>& steps);
  static void push_elementwise(Launch& launch, Ref x, int y, std::vector<EwStep> steps);
  TensorId chain_input(NodeId anchor, const std::vector<NodeId>& chain, size_t i) const;
  int chain_target(NodeId anchor, const std::vector<NodeId>& chain);
  void in_place_steps(Launch& launch, int y, NodeId anchor, const std::vector<NodeId>& chain,
                      size_t from, std::vector<EwStep> steps = {});

  // --- Operations other lowerings emit ------------------------------------------
  // A copy of `dims` elements from `src` to `dst`, each with its own dense
  // strides (op_copy.cpp).
  CopyOp strided_copy(int src, int dst, const ir::Shape& dims);
  // Value `v`, or a dense copy of it when it is a strided slice (op_copy.cpp).
  int dense(Launch& launch, int v);
  // Pads (the begins, then the ends, per spatial axis) made explicit by a
  // PadOp into a scratch tensor when some axis's are asymmetric, which cuDNN
  // cannot express; `pads` is then all zero (op_pad.cpp).
  int explicit_pad(Launch& launch, int x, ir::Dims& pads, const std::string& name);
  // y = the mean of x (N, C and 1 to 3 spatial axes) over its spatial axes,
  // by pooling (op_pool.cpp).
  void global_average_pool(Launch& launch, int x, int y);

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

// Merged launches (IOS operator merge), which the driver lowers itself:
// convolutions (op_conv.cpp) and matrix products (op_gemm.cpp).
void lower_merged_conv(Lowerer& lw, Launch& launch, int kernel);
void lower_merged_product(Lowerer& lw, Launch& launch, int kernel);

// Appends operation `op` to `launch`.
template <typename T>
void emit(Launch& launch, T op) {
  launch.ops.push_back(std::make_unique<T>(std::move(op)));
}

// Shared by the lowering files.
inline int64_t normalize_axis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

}  // namespace ios::cuda
