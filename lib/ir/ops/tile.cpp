// Tile: the input repeated along each axis (PyTorch's Tensor.repeat).
//
// Its entry in the operator table (ir/op_info.h), with its attribute
// parser, shape function and work (docs/architecture.md, "Adding an
// operator").

#include <vector>

#include <fmt/ranges.h>

#include "ir/op_definition.h"

namespace ios::ir::ops {
namespace {

// The largest output ios makes (elements): repeats are file data, and an
// output of 2^34 floats is no CNN's.
constexpr int64_t kMaxTileElements = int64_t{1} << 34;

Attrs parse_tile(const AttributeReader& r, const Shapes& in) {
  const Shape& x = in.at(0);
  if (r.opset() < 6) r.fail("Tile before opset 6 (tiles and axis inputs) is not supported; re-export with opset 6 or later");
  const auto repeats = r.constant_ints(1, "repeats");
  if (!repeats) r.fail("has no repeats input (input 1)");
  if (repeats->size() != x.size()) {
    r.fail("has {} repeats for an input of rank {} ({}); give one repeat count per axis", repeats->size(), x.size(),
           to_string(x));
  }
  int64_t elements = 1;
  for (size_t d = 0; d < x.size(); ++d) {
    const int64_t k = (*repeats)[d];
    if (k < 1) r.fail("repeats [{}]: each must be at least 1", fmt::join(*repeats, ", "));
    const int64_t dim = x[d];
    if (dim > 0 && k > kMaxTileElements / dim) r.fail("repeats [{}] make an output of more than 2^34 elements", fmt::join(*repeats, ", "));
    const int64_t out = dim * k;
    if (out > 0 && elements > kMaxTileElements / out) {
      r.fail("repeats [{}] make an output of more than 2^34 elements", fmt::join(*repeats, ", "));
    }
    elements *= out;
  }
  return TileAttrs{*repeats};
}

Shapes tile_shapes(const Node& node, const Shapes& in) {
  need_inputs(node, in, 1, 1);
  const auto& repeats = node.attr<TileAttrs>().repeats;
  if (repeats.size() != in[0].size()) fail(node, in, "{} repeats for rank {}", repeats.size(), in[0].size());
  Shape out = in[0];
  for (size_t d = 0; d < out.size(); ++d) out[d] *= repeats[d];
  return {out};
}

}  // namespace

OpInfo tile_op() {
  // A copy: no FLOPs (the cost model counts its bytes).
  return work(op(OpKind::kTile, "Tile", 6, parse_tile, tile_shapes, anchor(OpClass::kLayout)), 0);
}

}  // namespace ios::ir::ops
