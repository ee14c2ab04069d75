// The CUDA backend's kernel table: for each ir::OpKind, the function that
// turns one node into GPU operations, defined in the op_<name>.cpp of the
// operation it emits. An operator missing here is refused by name at
// lowering; test/gpu/host_tests.cpp fails when an operator of the IR has no
// entry. Adding an operator: its lowering's declaration and one table line.
#include <map>

#include "cuda/lowering.h"

namespace ios::cuda {

using ir::NodeId;
using ir::OpKind;
using Chain = std::vector<NodeId>;

// The node and its epilogue chain together.
void lower_conv(Lowerer&, Launch&, NodeId, const Chain&);         // op_conv.cpp
void lower_concat(Lowerer&, Launch&, NodeId, const Chain&);       // op_copy.cpp
void lower_split(Lowerer&, Launch&, NodeId, const Chain&);        // op_copy.cpp
void lower_elementwise(Lowerer&, Launch&, NodeId, const Chain&);  // op_elementwise.cpp
void lower_conv_transpose(Lowerer&, Launch&, NodeId, const Chain&);  // op_conv_transpose.cpp
// One output written at value y, where the chain ends; the chain runs after it in place.
void lower_slice(Lowerer&, Launch&, NodeId, int y);         // op_copy.cpp
void lower_tile(Lowerer&, Launch&, NodeId, int y);          // op_copy.cpp
void lower_transpose(Lowerer&, Launch&, NodeId, int y);     // op_copy.cpp
void lower_reshape_node(Lowerer&, Launch&, NodeId, int y);  // op_copy.cpp
void lower_pool(Lowerer&, Launch&, NodeId, int y);          // op_pool.cpp
void lower_reduce(Lowerer&, Launch&, NodeId, int y);        // op_reduce.cpp
void lower_gemm(Lowerer&, Launch&, NodeId, int y);          // op_gemm.cpp
void lower_softmax(Lowerer&, Launch&, NodeId, int y);       // op_softmax.cpp
void lower_pad(Lowerer&, Launch&, NodeId, int y);           // op_pad.cpp
void lower_resize(Lowerer&, Launch&, NodeId, int y);        // op_resize.cpp
void lower_layer_norm(Lowerer&, Launch&, NodeId, int y);    // op_layer_norm.cpp

namespace {

OpLowering whole(LowerWhole fn) { return OpLowering{fn, nullptr}; }
OpLowering into(LowerInto fn) { return OpLowering{nullptr, fn}; }

const std::map<OpKind, OpLowering>& table() {
  static const std::map<OpKind, OpLowering> kTable{
      {OpKind::kConv, whole(lower_conv)},
      {OpKind::kConcat, whole(lower_concat)},
      {OpKind::kSplit, whole(lower_split)},
      {OpKind::kSlice, into(lower_slice)},
      {OpKind::kMaxPool, into(lower_pool)},
      {OpKind::kAveragePool, into(lower_pool)},
      {OpKind::kGlobalAveragePool, into(lower_pool)},
      {OpKind::kReduceMean, into(lower_reduce)},
      {OpKind::kReduceSum, into(lower_reduce)},
      {OpKind::kReduceMax, into(lower_reduce)},
      {OpKind::kReduceMin, into(lower_reduce)},
      {OpKind::kReduceProd, into(lower_reduce)},
      {OpKind::kReduceL1, into(lower_reduce)},
      {OpKind::kReduceL2, into(lower_reduce)},
      {OpKind::kReduceSumSquare, into(lower_reduce)},
      {OpKind::kReduceLogSumExp, into(lower_reduce)},
      {OpKind::kTile, into(lower_tile)},
      {OpKind::kConvTranspose, whole(lower_conv_transpose)},
      {OpKind::kLogSoftmax, into(lower_softmax)},
      {OpKind::kFlatten, into(lower_reshape_node)},
      {OpKind::kReshape, into(lower_reshape_node)},
      {OpKind::kTranspose, into(lower_transpose)},
      {OpKind::kGemm, into(lower_gemm)},
      {OpKind::kMatMul, into(lower_gemm)},
      {OpKind::kSoftmax, into(lower_softmax)},
      {OpKind::kPad, into(lower_pad)},
      {OpKind::kResize, into(lower_resize)},
      {OpKind::kLayerNorm, into(lower_layer_norm)},
  };
  return kTable;
}

}  // namespace

const OpLowering& lowering_for(ir::OpKind op) {
  static const OpLowering kMissing{};
  // Every element-wise operator (the ones epilogues fuse) is a step of the
  // element-wise chain kernel; lower_elementwise() lowers one that no other
  // node's epilogue took, with its own chain after it.
  static const OpLowering kElementwise = whole(lower_elementwise);
  if (exec::is_in_place_elementwise(op)) return kElementwise;
  const auto it = table().find(op);
  return it == table().end() ? kMissing : it->second;
}

bool has_lowering(ir::OpKind op) { return static_cast<bool>(lowering_for(op)); }

}  // namespace ios::cuda
