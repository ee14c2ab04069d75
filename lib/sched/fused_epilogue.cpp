// Comparison of the element-wise work fused after a unit's convolution.
#include "sched/fused_epilogue.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/op_info.h"

namespace ios::sched {

namespace {

bool same_constant(const ir::Tensor& a, const ir::Tensor& b) {
  return a.shape == b.shape && a.data && b.data && *a.data == *b.data;
}

// The element-wise nodes after the unit's convolution.
std::vector<ir::NodeId> epilogue_of(const Unit& unit) {
  auto it = std::find(unit.nodes.begin(), unit.nodes.end(), unit.anchor);
  if (it == unit.nodes.end()) return {};
  return {it + 1, unit.nodes.end()};
}

}  // namespace

bool same_epilogue(const ir::Graph& ir, const Unit& a, const Unit& b, std::string* reason) {
  const std::vector<ir::NodeId> ea = epilogue_of(a);
  const std::vector<ir::NodeId> eb = epilogue_of(b);
  auto fail = [&](std::string why) {
    if (reason) *reason = std::move(why);
    return false;
  };
  if (ea.size() != eb.size()) {
    return fail(fmt::format("units '{}' and '{}' fuse {} and {} operators after the convolution",
                            a.id, b.id, ea.size(), eb.size()));
  }
  // The tensor flowing along each epilogue chain.
  ir::TensorId chain_a = ir.node(a.anchor).outputs.at(0);
  ir::TensorId chain_b = ir.node(b.anchor).outputs.at(0);
  for (size_t i = 0; i < ea.size(); ++i) {
    const ir::Node& na = ir.node(ea[i]);
    const ir::Node& nb = ir.node(eb[i]);
    if (na.op != nb.op || !ir::is_elementwise(na.op) || na.attrs != nb.attrs ||
        na.inputs.size() != nb.inputs.size()) {
      return fail(fmt::format("units '{}' and '{}' differ in fused operator {} ({} vs {})", a.id,
                              b.id, i + 1, ir::op_name(na.op), ir::op_name(nb.op)));
    }
    for (size_t k = 0; k < na.inputs.size(); ++k) {
      const ir::TensorId ta = na.inputs[k];
      const ir::TensorId tb = nb.inputs[k];
      if (ta == chain_a && tb == chain_b) continue;
      const ir::Tensor& xa = ir.tensor(ta);
      const ir::Tensor& xb = ir.tensor(tb);
      if (!xa.is_constant() || !xb.is_constant()) {
        return fail(fmt::format("fused {} of unit '{}' or '{}' reads another activation",
                                ir::op_name(na.op), a.id, b.id));
      }
      if (!same_constant(xa, xb)) {
        return fail(fmt::format("fused {} of units '{}' and '{}' use different constants",
                                ir::op_name(na.op), a.id, b.id));
      }
    }
    chain_a = na.outputs.at(0);
    chain_b = nb.outputs.at(0);
  }
  return true;
}

}  // namespace ios::sched
