// MaxPool, AveragePool (2-D windows) and GlobalAveragePool.
//
// Its entries in the operator table (ir/op_info.h), with their attribute
// parsers, shape functions and work (docs/architecture.md, "Adding an
// operator").

#include <array>
#include <vector>

#include "ir/op_definition.h"

namespace ios::ir::ops {
namespace {

Attrs pool(const AttributeReader& r, const Shape& x, bool average) {
  need_rank(r, x, 4, "only 2-D pooling (4-D NCHW input) is supported");
  PoolAttrs a;
  if (!r.has("kernel_shape")) r.fail("kernel_shape is missing");
  a.kernel = pair_attr(r, "kernel_shape", {1, 1});
  a.stride = pair_attr(r, "strides", {1, 1});
  const auto dilation = pair_attr(r, "dilations", {1, 1});
  if (dilation != std::array<int64_t, 2>{1, 1}) r.fail("dilated pooling is not supported");
  a.ceil_mode = r.get_int("ceil_mode", 0) != 0;
  a.count_include_pad = average && r.get_int("count_include_pad", 0) != 0;
  a.pads = window_pads(r, x, a.kernel, a.stride, {1, 1});
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
  need_rank(r, in.at(0), 4, "only 4-D NCHW input is supported");
  return std::monostate{};
}

Shape pool_one(const Node& node, const std::vector<Shape>& in) {
  need_inputs(node, in, 1, 1);
  need_rank(node, in, 0, 4);
  const auto& a = node.attr<PoolAttrs>();
  return window_op(node, in, in[0][1], a.kernel, a.stride, {1, 1}, a.pads, a.ceil_mode);
}

Shapes pool_shapes(const Node& node, const Shapes& in) { return {pool_one(node, in)}; }

Shapes global_pool_shapes(const Node& node, const Shapes& in) {
  need_inputs(node, in, 1, 1);
  need_rank(node, in, 0, 4);
  return {Shape{in[0][0], in[0][1], 1, 1}};
}

double window_reduction(const Graph&, const Node& n) {
  const auto& a = n.attr<PoolAttrs>();
  return static_cast<double>(a.kernel[0] * a.kernel[1]);
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
