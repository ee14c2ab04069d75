// Data movement (lowering.h): Transpose, Slice, Split, Concat (the inputs the
// storage plan did not place in their slices), Pad, Reshape and Flatten, and
// dense copies of strided values, all as strided copies or pads; Resize, by
// its own kernel.
#include "core/error.h"
#include "cuda/lowering.h"

namespace ios::cuda {

using ir::NodeId;
using ir::OpKind;
using ir::TensorId;

void Lowerer::lower_transpose(Launch& launch, NodeId n, int y) {
  const ir::Node& node = g_.node(n);
  const int x = value_for(node.inputs[0]);
  const auto& perm = node.attr<ir::TransposeAttrs>().perm;
  CopyOp op;
  op.src = x;
  op.dst = y;
  op.dims = val(y).shape;
  const std::vector<int64_t> xs = val(x).strides();
  for (size_t d = 0; d < perm.size(); ++d) {
    op.src_strides.push_back(xs.at(static_cast<size_t>(normalize_axis(perm[d], perm.size()))));
  }
  op.dst_strides = val(y).strides();
  emit(launch, std::move(op));
}

// A copy of `dims` elements from `src` to `dst`, each with its own dense
// strides; callers adjust offsets and source strides for views.
CopyOp Lowerer::strided_copy(int src, int dst, const ir::Shape& dims) {
  CopyOp op;
  op.src = src;
  op.dst = dst;
  op.dims = dims;
  op.src_strides = val(src).strides();
  op.dst_strides = val(dst).strides();
  return op;
}

void Lowerer::lower_slice(Launch& launch, NodeId n, int y) {
  const ir::Node& node = g_.node(n);
  const int x = value_for(node.inputs[0]);
  const auto& a = node.attr<ir::SliceAttrs>();
  CopyOp op = strided_copy(x, y, val(y).shape);
  for (size_t i = 0; i < a.axes.size(); ++i) {
    const auto axis = static_cast<size_t>(normalize_axis(a.axes[i], op.dims.size()));
    const int64_t step = i < a.steps.size() ? a.steps[i] : 1;
    op.src_offset += a.starts.at(i) * op.src_strides[axis];
    op.src_strides[axis] *= step;
  }
  emit(launch, std::move(op));
}

void Lowerer::lower_split(Launch& launch, NodeId n, const std::vector<NodeId>& chain) {
  IOS_ASSERT(chain.empty(), "Split '{}' has an epilogue", g_.node(n).name);
  const ir::Node& node = g_.node(n);
  const int x = value_for(node.inputs[0]);
  const auto& a = node.attr<ir::SplitAttrs>();
  const auto axis = static_cast<size_t>(normalize_axis(a.axis, val(x).shape.size()));
  int64_t offset = 0;
  for (TensorId out : node.outputs) {
    const int y = value_for(out);
    CopyOp op = strided_copy(x, y, val(y).shape);
    op.src_offset = offset * op.src_strides[axis];
    offset += op.dims[axis];
    emit(launch, std::move(op));
  }
}

void Lowerer::lower_concat(Launch& launch, NodeId n, const std::vector<NodeId>& chain) {
  const ir::Node& node = g_.node(n);
  const int y = value_for(node.outputs[0]);
  const auto axis =
      static_cast<size_t>(normalize_axis(node.attr<ir::AxisAttrs>().axis, val(y).shape.size()));
  const std::vector<int64_t> ys = val(y).strides();
  int64_t offset = 0;
  for (TensorId in : node.inputs) {
    const int64_t size = g_.tensor(in).shape.at(axis);
    if (!storage_.zero_copy_concat_input(in)) {
      CopyOp op;
      if (g_.tensor(in).is_constant()) {
        // A constant input: give it a value filled once per run.
        user_error("Concat '{}': constant input '{}' is not supported by the CUDA backend",
                   node.name, g_.tensor(in).name);
      }
      op.src = value_for(in);
      op.dst = y;
      op.dims = g_.tensor(in).shape;
      op.src_strides = val(op.src).strides();
      op.dst_strides = ys;
      op.dst_offset = offset * ys[axis];
      emit(launch, std::move(op));
      ++p_.concat_inputs_copied;
    }
    offset += size;
  }
  in_place_steps(launch, y, n, chain, 0);
}

void Lowerer::lower_pad(Launch& launch, NodeId n, int y) {
  const ir::Node& node = g_.node(n);
  const auto& a = node.attr<ir::PadAttrs>();
  PadOp op;
  op.x = value_for(node.inputs[0]);
  op.y = y;
  const size_t rank = val(op.x).shape.size();
  IOS_ASSERT(a.pads.size() == 2 * rank, "Pad '{}' has {} pads for rank {}", node.name,
             a.pads.size(), rank);
  for (size_t d = 0; d < rank; ++d) {
    if (a.pads[d] < 0 || a.pads[d + rank] < 0) {
      user_error("Pad '{}': negative pads (cropping) are not supported by the CUDA backend",
                 node.name);
    }
  }
  op.begin.assign(a.pads.begin(), a.pads.begin() + static_cast<std::ptrdiff_t>(rank));
  op.mode = a.mode == ir::PadAttrs::Mode::kConstant  ? PadOp::Mode::kConstant
            : a.mode == ir::PadAttrs::Mode::kReflect ? PadOp::Mode::kReflect
                                                     : PadOp::Mode::kEdge;
  op.value = a.value;
  emit(launch, std::move(op));
}

void Lowerer::lower_resize(Launch& launch, NodeId n, int y) {
  const ir::Node& node = g_.node(n);
  emit(launch, ResizeOp{value_for(node.inputs[0]), y, node.attr<ir::ResizeAttrs>()});
}

// A dense copy of value `v` (when it is a strided slice) for operations that need one.
int Lowerer::dense(Launch& launch, int v) {
  if (val(v).dense()) return v;
  const int t = p_.add_temp(val(v).name + ":dense", val(v).shape);
  emit(launch, strided_copy(v, t, val(v).shape));
  return t;
}

// Reshape and Flatten: the same elements, another shape.
void Lowerer::lower_reshape_node(Launch& launch, NodeId n, int y) {
  lower_reshape(launch, value_for(g_.node(n).inputs[0]), y);
}

void Lowerer::lower_reshape(Launch& launch, int x, int y) {
  CopyOp op;
  op.dst = y;
  const Value& X = val(x);
  const Value& Y = val(y);
  if (X.batch() == Y.batch() && X.item_size() == Y.item_size()) {
    op.src = x;
    op.dims = {X.batch(), X.item_size()};
    op.src_strides = {X.batch_stride, 1};
    op.dst_strides = {Y.batch_stride, 1};
  } else if (X.dense() || Y.dense()) {
    const bool by_dst = X.dense();
    const Value& V = by_dst ? Y : X;
    op.src = x;
    op.dims = {V.batch(), V.item_size()};
    op.src_strides = {by_dst ? V.item_size() : X.batch_stride, 1};
    op.dst_strides = {by_dst ? Y.batch_stride : V.item_size(), 1};
  } else {
    lower_reshape(launch, dense(launch, x), y);
    return;
  }
  emit(launch, std::move(op));
}

}  // namespace ios::cuda
