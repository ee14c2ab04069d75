// The CUDA backend's kernel table: for each ir::OpKind, the Lowerer function
// that turns one node into GPU operations (lowering.h). An operator missing
// here is refused by name at lowering; test/gpu/host_tests.cpp fails when an
// operator of the IR has no entry.
#include <map>

#include "cuda/lowering.h"

namespace ios::cuda {
namespace {

using ir::OpKind;

// The node and its epilogue chain together.
OpLowering whole(void (Lowerer::*fn)(Launch&, ir::NodeId, const std::vector<ir::NodeId>&)) {
  OpLowering l;
  l.whole = fn;
  return l;
}

// One output written where the chain ends; the chain runs after it in place.
OpLowering into(void (Lowerer::*fn)(Launch&, ir::NodeId, int)) {
  OpLowering l;
  l.into = fn;
  return l;
}

const std::map<OpKind, OpLowering>& table() {
  static const std::map<OpKind, OpLowering> kTable{
      {OpKind::kConv, whole(&Lowerer::lower_conv)},
      {OpKind::kConcat, whole(&Lowerer::lower_concat)},
      {OpKind::kSplit, whole(&Lowerer::lower_split)},
      {OpKind::kSlice, into(&Lowerer::lower_slice)},
      {OpKind::kMaxPool, into(&Lowerer::lower_pool)},
      {OpKind::kAveragePool, into(&Lowerer::lower_pool)},
      {OpKind::kGlobalAveragePool, into(&Lowerer::lower_pool)},
      {OpKind::kReduceMean, into(&Lowerer::lower_reduce)},
      {OpKind::kFlatten, into(&Lowerer::lower_reshape_node)},
      {OpKind::kReshape, into(&Lowerer::lower_reshape_node)},
      {OpKind::kTranspose, into(&Lowerer::lower_transpose)},
      {OpKind::kGemm, into(&Lowerer::lower_gemm)},
      {OpKind::kMatMul, into(&Lowerer::lower_gemm)},
      {OpKind::kSoftmax, into(&Lowerer::lower_softmax)},
      {OpKind::kPad, into(&Lowerer::lower_pad)},
      {OpKind::kResize, into(&Lowerer::lower_resize)},
      {OpKind::kLayerNorm, into(&Lowerer::lower_layer_norm)},
  };
  return kTable;
}

}  // namespace

const OpLowering& lowering_for(ir::OpKind op) {
  static const OpLowering kMissing{};
  // Every element-wise operator (the ones epilogues fuse) is a step of the
  // element-wise chain kernel; lower_elementwise() lowers one that no other
  // node's epilogue took, with its own chain after it.
  static const OpLowering kElementwise = whole(&Lowerer::lower_elementwise);
  if (exec::is_in_place_elementwise(op)) return kElementwise;
  const auto it = table().find(op);
  return it == table().end() ? kMissing : it->second;
}

bool has_lowering(ir::OpKind op) { return static_cast<bool>(lowering_for(op)); }

}  // namespace ios::cuda
