// MaxPool, AveragePool (1-D, 2-D and 3-D windows; MaxPool dilated) and
// GlobalAveragePool.
//
// Its entries in the operator table (ir/op_info.h), with their attribute
// parsers, shape functions and work (docs/architecture.md, "Adding an
// operator").

#include <vector>

#include "ir/op_definition.h"

namespace ios::ir::ops {
namespace {

Attrs pool(const AttributeReader& r, const Shape& x, bool average) {
  const size_t rank = window_rank(r, x, average ? "AveragePool" : "MaxPool");
  PoolAttrs a;
  if (!r.has("kernel_shape")) r.fail("kernel_shape is missing");
  a.kernel = spatial_attr(r, "kernel_shape", rank, filled(rank, 1));
  a.stride = spatial_attr(r, "strides", rank, filled(rank, 1));
  a.dilation = spatial_attr(r, "dilations", rank, filled(rank, 1));
  a.ceil_mode = r.get_int("ceil_mode", 0) != 0;
  a.count_include_pad = average && r.get_int("count_include_pad", 0) != 0;
  a.pads = window_pads(r, x, a.kernel, a.stride, a.dilation);
  // ONNX Runtime and PyTorch refuse a pad as large as the kernel: its first
  // or last windows would lie wholly in the padding (-inf from MaxPool, 0 or
  // a division by zero from AveragePool). The rule is ONNX Runtime's, on the
  // explicit pads (auto_pad's stay below the dilated kernel).
  if (r.get_string("auto_pad", "NOTSET") == "NOTSET") {
    for (size_t i = 0; i < a.pads.size(); ++i) {
      const size_t axis = i % rank;
      if (a.pads[i] >= a.kernel[axis]) {
        r.fail("pads[{}] = {} is not smaller than kernel_shape[{}] = {}: windows would lie wholly in "
               "the padding (ONNX Runtime and PyTorch refuse it); pad less or use a larger kernel",
               i, a.pads[i], axis, a.kernel[axis]);
      }
    }
  }
  if (!average) {
    if (r.get_int("storage_order", 0) != 0) r.fail("storage_order 1 is not supported");
    only_first_output(r);
  }
  return a;
}

Attrs parse_max_pool(const AttributeReader& r, const Shapes& in) {
  return pool(r, in.at(0), false);
}

Attrs parse_average_pool(const AttributeReader& r, const Shapes& in) {
  return pool(r, in.at(0), true);
}

Attrs parse_global_pool(const AttributeReader& r, const Shapes& in) {
  window_rank(r, in.at(0), "GlobalAveragePool");
  return std::monostate{};
}

Shape pool_one(const Node& node, const std::vector<Shape>& in) {
  need_inputs(node, in, 1, 1);
  const auto& a = node.attr<PoolAttrs>();
  need_rank(node, in, 0, a.spatial_rank() + 2);
  return window_op(node, in, in[0][1], a.kernel, a.stride, a.dilation, a.pads, a.ceil_mode);
}

Shapes pool_shapes(const Node& node, const Shapes& in) { return {pool_one(node, in)}; }

Shapes global_pool_shapes(const Node& node, const Shapes& in) {
  need_inputs(node, in, 1, 1);
  if (in[0].size() < 3) fail(node, in, "input must have a spatial axis (rank 3 to 5)");
  Shape out(in[0].size(), 1);
  out[0] = in[0][0], out[1] = in[0][1];
  return {out};
}

double window_reduction(const Graph&, const Node& n) {
  const auto& a = n.attr<PoolAttrs>();
  return static_cast<double>(num_elements(a.kernel));
}

double window_flops(const Graph& g, const Node& n) {
  return output_elements(g, n) * window_reduction(g, n);
}

}  // namespace

OpInfo max_pool_op() {
  return work(
      op(OpKind::kMaxPool, "MaxPool", 1, parse_max_pool, pool_shapes, anchor(OpClass::kPool)), 0,
      window_flops, window_reduction);
}

OpInfo average_pool_op() {
  return work(op(OpKind::kAveragePool, "AveragePool", 1, parse_average_pool, pool_shapes,
                 anchor(OpClass::kPool)),
              0, window_flops, window_reduction);
}

OpInfo global_average_pool_op() {
  return work(op(OpKind::kGlobalAveragePool, "GlobalAveragePool", 1, parse_global_pool,
                 global_pool_shapes, anchor(OpClass::kPool)),
              0, mean_flops, mean_reduction);
}

}  // namespace ios::ir::ops
