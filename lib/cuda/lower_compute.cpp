// Pooling, reductions, softmax and GEMM (lowering.h): cuDNN where it applies,
// the backend's own kernels otherwise.
#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "cuda/lowering.h"

namespace ios::cuda {

using ir::NodeId;
using ir::OpKind;
using ir::TensorId;

void Lowerer::lower_pool(Launch& launch, NodeId n, int y) {
  const ir::Node& node = g_.node(n);
  PoolOp op;
  op.x = value_for(node.inputs[0]);
  op.y = y;
  const ir::Shape& xs = val(op.x).shape;
  if (xs.size() != 4) {
    user_error("{} '{}': only 2-D pooling (4-D tensors) is supported by the CUDA backend",
               ir::op_name(node.op), node.name);
  }
  if (node.op == OpKind::kGlobalAveragePool) {
    op.mode = PoolOp::Mode::kAverageIncludePad;
    op.kernel = {xs[2], xs[3]};
    op.stride = {1, 1};
  } else {
    const auto& a = node.attr<ir::PoolAttrs>();
    op.mode = node.op == OpKind::kMaxPool ? PoolOp::Mode::kMax
              : a.count_include_pad       ? PoolOp::Mode::kAverageIncludePad
                                          : PoolOp::Mode::kAverageExcludePad;
    op.kernel = a.kernel;
    op.stride = a.stride;
    op.pads = a.pads;
    op.ceil_mode = a.ceil_mode;
  }
  // cuDNN: symmetric pads smaller than the window and floor-mode sizes.
  const ir::Shape& ys = val(y).shape;
  const bool symmetric = op.pads[0] == op.pads[2] && op.pads[1] == op.pads[3];
  const bool small_pads = op.pads[0] < op.kernel[0] && op.pads[1] < op.kernel[1];
  const bool floor_size =
      ys.size() >= 2 &&
      (xs[2] + 2 * op.pads[0] - op.kernel[0]) / op.stride[0] + 1 == (ys.size() == 4 ? ys[2] : 1) &&
      (xs[3] + 2 * op.pads[1] - op.kernel[1]) / op.stride[1] + 1 == (ys.size() == 4 ? ys[3] : 1);
  op.use_cudnn = symmetric && small_pads && floor_size;
  emit(launch, op);
}

void Lowerer::lower_reduce(Launch& launch, NodeId n, int y) {
  const ir::Node& node = g_.node(n);
  const int x = value_for(node.inputs[0]);
  const ir::Shape& xs = val(x).shape;
  std::vector<int64_t> axes = node.attr<ir::ReduceAttrs>().axes;
  if (axes.empty()) {  // ONNX: no axes means all of them
    axes.resize(xs.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (int64_t& a : axes) a = normalize_axis(a, xs.size());
  std::sort(axes.begin(), axes.end());
  if (xs.size() == 4 && axes == std::vector<int64_t>{2, 3}) {  // a global average pool
    PoolOp op;
    op.x = x;
    op.y = y;
    op.mode = PoolOp::Mode::kAverageIncludePad;
    op.kernel = {xs[2], xs[3]};
    emit(launch, op);
    return;
  }
  emit(launch, ReduceOp{x, y, axes});
}

void Lowerer::lower_softmax(Launch& launch, NodeId n, int y) {
  const ir::Node& node = g_.node(n);
  int x = value_for(node.inputs[0]);
  const int64_t axis = normalize_axis(node.attr<ir::AxisAttrs>().axis, val(x).shape.size());
  if (axis == 1 || (val(x).dense() && val(y).dense())) {
    emit(launch, SoftmaxOp{x, y, axis});
    return;
  }
  x = dense(launch, x);
  if (val(y).dense()) {
    emit(launch, SoftmaxOp{x, y, axis});
    return;
  }
  const int t = p_.add_temp(val(y).name + ":dense", val(y).shape);
  emit(launch, SoftmaxOp{x, t, axis});
  CopyOp copy;
  copy.src = t;
  copy.dst = y;
  copy.dims = val(y).shape;
  copy.src_strides = val(t).strides();
  copy.dst_strides = val(y).strides();
  emit(launch, std::move(copy));
}

void Lowerer::lower_gemm(Launch& launch, NodeId n, int y) {
  const ir::Node& node = g_.node(n);
  GemmOp op;
  op.y = y;
  const ir::Shape& ys = val(y).shape;
  if (node.op == OpKind::kGemm) {
    const auto& a = node.attr<ir::GemmAttrs>();
    op.a = ref_for(node.inputs[0]);
    op.b = ref_for(node.inputs[1]);
    if (node.inputs.size() > 2 && node.inputs[2] != ir::kNone) op.c = ref_for(node.inputs[2]);
    op.alpha = a.alpha;
    op.beta = op.c ? a.beta : 0.0f;
    op.trans_a = a.trans_a;
    op.trans_b = a.trans_b;
    const ir::Shape& as = g_.tensor(node.inputs[0]).shape;
    IOS_ASSERT(as.size() == 2 && ys.size() == 2, "Gemm '{}' operands must be 2-D", node.name);
    op.m = ys[0];
    op.n = ys[1];
    op.k = a.trans_a ? as[0] : as[1];
  } else {
    const ir::Shape& as = g_.tensor(node.inputs[0]).shape;
    const ir::Shape& bs = g_.tensor(node.inputs[1]).shape;
    if (as.size() < 2 || bs.size() < 2) {
      user_error("MatMul '{}': 1-D operands are not supported by the CUDA backend", node.name);
    }
    op.m = as[as.size() - 2];
    op.k = as.back();
    op.n = bs.back();
    op.batch = ir::num_elements(ys) / (op.m * op.n);
    auto batched = [&](const ir::Shape& s) {
      const int64_t b = ir::num_elements(s) / (s[s.size() - 1] * s[s.size() - 2]);
      if (b == op.batch) return true;
      if (b == 1) return false;
      user_error(
          "MatMul '{}': partial broadcasting of batch dimensions ({} with {}) is not supported by "
          "the CUDA backend",
          node.name, ir::to_string(as), ir::to_string(bs));
    };
    op.a_batched = batched(as);
    op.b_batched = batched(bs);
    auto operand = [&](TensorId t, const ir::Shape& s) {
      if (g_.tensor(t).is_constant()) return ref_for(t);
      int v = value_for(t);
      if (s.size() > 2) v = dense(launch, v);  // batch strides must be uniform
      return Ref::value(v);
    };
    op.a = operand(node.inputs[0], as);
    op.b = operand(node.inputs[1], bs);
    if (ys.size() > 2 && !val(y).dense()) {
      user_error("MatMul '{}': a batched output written into a concatenation is not supported",
                 node.name);
    }
  }
  emit(launch, op);
}

}  // namespace ios::cuda
