// Pad with a constant (zero) value on H and W.
//
// Its entries in the operator table (ir/op_info.h), with their attribute
// parsers, shape functions and work (docs/architecture.md, "Adding an
// operator").

#include <algorithm>
#include <string>
#include <vector>

#include "ir/op_definition.h"

namespace ios::ir::ops {
namespace {

Attrs parse_pad(const AttributeReader& r, const Shapes& in) {
  const Shape& x = in.at(0);
  PadAttrs a;
  const std::string mode = r.get_string("mode", "constant");
  if (mode == "constant")
    a.mode = PadAttrs::Mode::kConstant;
  else if (mode == "reflect")
    a.mode = PadAttrs::Mode::kReflect;
  else if (mode == "edge")
    a.mode = PadAttrs::Mode::kEdge;
  else
    r.fail("pad mode '{}' is not supported", mode);
  if (r.opset() < 11) {
    a.pads = r.get_ints("pads").value_or(std::vector<int64_t>{});
    a.value = r.get_float("value", 0.0f);
  } else {
    a.pads = r.constant_ints(1, "pads").value();
    if (auto v = r.constant_values(2, "constant value"); v && !v->empty()) {
      a.value = static_cast<float>((*v)[0]);
    }
    if (r.has_input(3)) r.fail("the axes input of Pad is not supported");
  }
  if (a.pads.size() != 2 * x.size()) r.fail("has {} pads for rank {}", a.pads.size(), x.size());
  if (std::any_of(a.pads.begin(), a.pads.end(), [](int64_t p) { return p < 0; })) {
    r.fail("negative pads (cropping) are not supported");
  }
  return a;
}

Shapes pad_shapes(const Node& node, const Shapes& in) {
  need_inputs(node, in, 1, 1);
  const auto& pads = node.attr<PadAttrs>().pads;
  const size_t rank = in[0].size();
  if (pads.size() != 2 * rank) fail(node, in, "has {} pads for rank {}", pads.size(), rank);
  Shape out = in[0];
  for (size_t d = 0; d < rank; ++d) {
    out[d] += pads[d] + pads[d + rank];
    if (out[d] < 0) fail(node, in, "pads crop axis {} below zero", d);
  }
  return {out};
}

}  // namespace

OpInfo pad_op() {
  return op(OpKind::kPad, "Pad", 2, parse_pad, pad_shapes, anchor(OpClass::kLayout));
}

}  // namespace ios::ir::ops
