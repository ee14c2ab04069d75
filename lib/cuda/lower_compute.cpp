// Pooling, reductions, softmax and GEMM (lowering.h): cuDNN where it applies,
// the backend's own kernels otherwise; merged matrix products (IOS
// operator merge) as one GEMM over the assembled weights.
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

// A merged matrix product (IOS operator merge of products sharing their
// input): one GemmOp of the input with the assembled weights [K, sum N_i]
// and bias (the Gemm members' C) into the merged temporary, then per member
// a copy of its columns into its product's output, where its epilogue runs
// in place as for an unmerged unit (the storage plan placed it so).
void Lowerer::lower_merged_product(Launch& launch, int kernel) {
  const sched::MergeSpec& spec = storage_.merge_spec(kernel);
  const exec::Region& whole = storage_.merged_region(kernel);
  IOS_ASSERT(spec.kind == sched::MergeKind::kMatMul && whole.dense(),
             "kernel {} is not a merged product", kernel);
  const int merged = add_value(storage_.storages().at(static_cast<size_t>(whole.storage)).name,
                               whole.shape, whole.storage, whole.offset, whole.batch_stride);
  const sched::MergedWeights weights = sched::assemble_merged_weights(ug_, spec);
  GemmOp op;
  int a = value_for(spec.input);
  if (val(a).shape.size() > 2) a = dense(launch, a);  // rows of a batched input must be uniform
  op.a = Ref::value(a);
  op.b = Ref::constant(
      new_constant(launch.name + ":weight", {spec.in_channels, spec.out_channels}, weights.weight));
  op.c = Ref::constant(new_constant(launch.name + ":bias", {spec.out_channels}, weights.bias));
  op.beta = 1.0f;
  op.m = spec.rows;
  op.n = spec.out_channels;
  op.k = spec.in_channels;
  op.y = merged;
  emit(launch, op);

  for (const sched::MergeMember& member : spec.members) {
    const sched::Unit& unit = ug_.unit(member.unit);
    IOS_ASSERT(!unit.nodes.empty() && unit.nodes.front() == unit.anchor,
               "merged unit '{}' has a prologue", unit.id);
    const std::vector<NodeId>& chain = storage_.epilogue(unit.anchor);
    const int y = chain_target(unit.anchor, chain);
    const int64_t columns = member.out_channels;
    const int64_t items = val(y).batch();
    const int64_t rows_per_item = val(y).item_size() / columns;
    IOS_ASSERT(val(y).shape.back() == columns && items * rows_per_item == spec.rows,
               "member '{}' output {} in a {} x {} merge", unit.id, ir::to_string(val(y).shape),
               spec.rows, spec.out_channels);
    CopyOp copy;
    copy.src = merged;
    copy.dst = y;
    copy.dims = {items, rows_per_item, columns};
    copy.src_strides = {rows_per_item * spec.out_channels, spec.out_channels, 1};
    copy.dst_strides = {val(y).batch_stride, columns, 1};
    copy.src_offset = member.channel_offset;
    emit(launch, std::move(copy));
    in_place_steps(launch, y, unit.anchor, chain, 0);
    // Nodes after the product that its epilogue did not take.
    for (size_t i = 1; i < unit.nodes.size(); ++i) {
      if (storage_.in_epilogue(unit.nodes[i])) continue;
      lower_node(launch, unit.nodes[i], storage_.epilogue(unit.nodes[i]));
    }
  }
}

}  // namespace ios::cuda
