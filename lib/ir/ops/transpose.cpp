// Transpose by a permutation.
//
// Its entries in the operator table (ir/op_info.h), with their attribute
// parsers, shape functions and work (docs/architecture.md, "Adding an
// operator").

#include <vector>

#include "ir/op_definition.h"

namespace ios::ir::ops {
namespace {

Attrs parse_transpose(const AttributeReader& r, const Shapes& in) {
  const auto rank = static_cast<int64_t>(in.at(0).size());
  TransposeAttrs a;
  a.perm = r.get_ints("perm").value_or(std::vector<int64_t>{});
  if (a.perm.empty()) {
    for (int64_t d = rank; d-- > 0;) a.perm.push_back(d);
  }
  if (static_cast<int64_t>(a.perm.size()) != rank) {
    r.fail("attribute 'perm' has {} entries for an input of rank {}", a.perm.size(), rank);
  }
  for (int64_t& p : a.perm) p = normalize_axis(r, p, rank);
  return a;
}

Shapes transpose_shapes(const Node& node, const Shapes& in) {
  need_inputs(node, in, 1, 1);
  const auto& perm = node.attr<TransposeAttrs>().perm;
  if (perm.size() != in[0].size()) fail(node, in, "perm has {} entries", perm.size());
  std::vector<bool> seen(perm.size(), false);
  Shape out;
  for (int64_t p : perm) {
    const auto axis = static_cast<size_t>(checked_axis(node, in, p, perm.size()));
    if (seen[axis]) fail(node, in, "perm repeats axis {}", axis);
    seen[axis] = true;
    out.push_back(in[0][axis]);
  }
  return {out};
}

}  // namespace

OpInfo transpose_op() {
  return op(OpKind::kTranspose, "Transpose", 1, parse_transpose, transpose_shapes,
            anchor(OpClass::kLayout));
}

}  // namespace ios::ir::ops
