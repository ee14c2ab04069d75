// The import pass ir::fuse_gelu (declared and described in ir/passes.h).
#include "ir/passes.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <optional>
#include <utility>

#include "core/error.h"
#include "ir/pass_util.h"

namespace ios::ir {

using namespace pass_util;

namespace {

// Exporters write the chain's constants as float32 roundings of the exact
// values (1.4142135 for sqrt(2)); anything further off is another function.
bool is_scalar(const Graph& graph, TensorId t, double expected) {
  const std::optional<float> v = scalar_constant(graph, t);
  return v && std::abs(static_cast<double>(*v) - expected) <= 1e-6 * std::abs(expected);
}

// Matches GELU's element-wise chains node by node. Every intermediate value
// must be read once, by the next node of the chain, and by nothing else (nor
// be a graph output), so that replacing the chain changes no other value.
class GeluMatcher {
 public:
  GeluMatcher(const Graph& graph, const std::vector<bool>& dead) : graph_(graph), dead_(dead) {}

  struct Match {
    TensorId x = kNone;
    NodeId last = kNone;        // the chain's final Mul; it becomes the Gelu node
    std::vector<NodeId> nodes;  // every node of the chain, `last` included
  };

  // Erf form: 0.5 * x * (1 + erf(x / sqrt(2))), around the Erf node `erf`.
  std::optional<Match> erf_form(NodeId erf) {
    nodes_ = {erf};
    const NodeId scale = private_producer(graph_.node(erf).inputs.at(0), erf);
    if (scale == kNone) return std::nullopt;
    const Node& s = graph_.node(scale);
    TensorId x = kNone;
    if (s.op == OpKind::kDiv && is_scalar(graph_, s.inputs.at(1), std::sqrt(2.0))) {
      x = s.inputs.at(0);
    } else if (s.op == OpKind::kMul) {
      x = other_operand(s, [&](TensorId t) { return is_scalar(graph_, t, std::sqrt(0.5)); });
    }
    if (x == kNone || graph_.tensor(x).is_constant()) return std::nullopt;
    return finish(x, graph_.node(erf).outputs.at(0));
  }

  // Tanh form: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), around
  // the Tanh node `tanh`; x^3 is Pow(x, 3), x * (x * x) or (x * x) * x.
  std::optional<Match> tanh_form(NodeId tanh) {
    nodes_ = {tanh};
    const double sqrt_2_over_pi = std::sqrt(2.0 / std::acos(-1.0));
    const NodeId scale = private_producer(graph_.node(tanh).inputs.at(0), tanh, OpKind::kMul);
    if (scale == kNone) return std::nullopt;
    const TensorId inner = other_operand(graph_.node(scale), [&](TensorId t) { return is_scalar(graph_, t, sqrt_2_over_pi); });
    const NodeId sum = inner == kNone ? kNone : private_producer(inner, scale, OpKind::kAdd);
    if (sum == kNone) return std::nullopt;
    // x + 0.044715 * x^3, in either order.
    const size_t matched = nodes_.size();
    for (int first = 0; first < 2; ++first) {
      nodes_.resize(matched);
      const TensorId x = graph_.node(sum).inputs.at(static_cast<size_t>(first));
      const TensorId term = graph_.node(sum).inputs.at(static_cast<size_t>(1 - first));
      if (graph_.tensor(x).is_constant()) continue;
      const NodeId times = private_producer(term, sum, OpKind::kMul);
      if (times == kNone) continue;
      const TensorId cube = other_operand(graph_.node(times), [&](TensorId t) { return is_scalar(graph_, t, 0.044715); });
      if (cube == kNone || !is_cube_of(cube, times, x)) continue;
      return finish(x, graph_.node(tanh).outputs.at(0));
    }
    return std::nullopt;
  }

 private:
  // The node making `t` when it is of kind `op` (any kind when kCount), read
  // only by `reader`, and not yet claimed by another chain; kNone otherwise.
  NodeId private_producer(TensorId t, NodeId reader, OpKind op = OpKind::kCount) {
    const NodeId p = graph_.tensor(t).producer;
    if (p == kNone || dead_[static_cast<size_t>(p)] || !single_private_use(graph_, t, reader)) return kNone;
    if (op != OpKind::kCount && graph_.node(p).op != op) return kNone;
    nodes_.push_back(p);
    return p;
  }

  // The operand of binary node `n` other than the one `is_constant_operand`
  // accepts (in either position); kNone when neither is accepted.
  template <typename Pred>
  static TensorId other_operand(const Node& n, Pred is_constant_operand) {
    if (n.inputs.size() != 2) return kNone;
    if (is_constant_operand(n.inputs[1])) return n.inputs[0];
    if (is_constant_operand(n.inputs[0])) return n.inputs[1];
    return kNone;
  }

  bool is_cube_of(TensorId cube, NodeId reader, TensorId x) {
    const NodeId p = private_producer(cube, reader);
    if (p == kNone) return false;
    const Node& n = graph_.node(p);
    if (n.op == OpKind::kPow) return n.inputs.at(0) == x && is_scalar(graph_, n.inputs.at(1), 3.0);
    if (n.op != OpKind::kMul || n.inputs.size() != 2) return false;
    for (int first = 0; first < 2; ++first) {
      if (n.inputs[static_cast<size_t>(first)] != x) continue;
      const NodeId sq = private_producer(n.inputs[static_cast<size_t>(1 - first)], p, OpKind::kMul);
      if (sq == kNone) continue;
      if (graph_.node(sq).inputs == std::vector<TensorId>{x, x}) return true;
      nodes_.pop_back();
    }
    return false;
  }

  // From h = 1 + core(x) (an Add with the constant 1) on: the product of x, h
  // and 0.5 in any order and grouping (x * h * 0.5, 0.5 * (x * h),
  // x * (h * 0.5), (x * 0.5) * h).
  std::optional<Match> finish(TensorId x, TensorId core_out) {
    const NodeId plus_one = sole_private_reader(core_out, OpKind::kAdd);
    if (plus_one == kNone ||
        other_operand(graph_.node(plus_one), [&](TensorId t) { return is_scalar(graph_, t, 1.0); }) != core_out) {
      return std::nullopt;
    }
    const TensorId h = graph_.node(plus_one).outputs.at(0);
    const NodeId m1 = sole_private_reader(h, OpKind::kMul);
    if (m1 == kNone) return std::nullopt;
    const Node& first = graph_.node(m1);
    const TensorId other = first.inputs.at(0) == h ? first.inputs.at(1) : first.inputs.at(0);
    const auto is_half = [&](TensorId t) { return is_scalar(graph_, t, 0.5); };
    NodeId last = kNone;
    if (other == x || is_half(other)) {
      // (x * h) * 0.5 or (h * 0.5) * x: one more Mul by the missing factor.
      last = sole_private_reader(first.outputs.at(0), OpKind::kMul);
      if (last == kNone) return std::nullopt;
      const Node& second = graph_.node(last);
      const TensorId missing = second.inputs.at(0) == first.outputs.at(0) ? second.inputs.at(1) : second.inputs.at(0);
      if (!(other == x ? is_half(missing) : missing == x)) return std::nullopt;
    } else {
      // h * (x * 0.5).
      const NodeId half_x = private_producer(other, m1, OpKind::kMul);
      if (half_x == kNone || other_operand(graph_.node(half_x), is_half) != x) return std::nullopt;
      last = m1;
    }
    // A broadcast constant of higher rank would change the output's shape.
    if (graph_.tensor(graph_.node(last).outputs.at(0)).shape != graph_.tensor(x).shape) return std::nullopt;
    return Match{x, last, nodes_};
  }

  // The one node reading `t` (once), of kind `op`, when `t` is no graph output.
  NodeId sole_private_reader(TensorId t, OpKind op) {
    const Tensor& tensor = graph_.tensor(t);
    if (tensor.consumers.size() != 1) return kNone;
    const NodeId reader = tensor.consumers[0];
    if (dead_[static_cast<size_t>(reader)] || graph_.node(reader).op != op) return kNone;
    if (!single_private_use(graph_, t, reader)) return kNone;
    nodes_.push_back(reader);
    return reader;
  }

  const Graph& graph_;
  const std::vector<bool>& dead_;
  std::vector<NodeId> nodes_;  // of the chain being matched
};

}  // namespace

int fuse_gelu(Graph& graph) {
  std::vector<bool> dead(graph.num_nodes(), false);
  int fused = 0;
  for (size_t n = 0; n < graph.num_nodes(); ++n) {
    const NodeId id = static_cast<NodeId>(n);
    if (dead[n]) continue;
    const OpKind op = graph.node(id).op;
    if (op != OpKind::kErf && op != OpKind::kTanh) continue;
    GeluMatcher matcher(graph, dead);
    const std::optional<GeluMatcher::Match> match = op == OpKind::kErf ? matcher.erf_form(id) : matcher.tanh_form(id);
    if (!match) continue;
    for (NodeId k : match->nodes) dead[static_cast<size_t>(k)] = true;
    dead[static_cast<size_t>(match->last)] = false;
    Node& gelu = graph.node(match->last);  // keeps its name and output tensor
    gelu.op = OpKind::kGelu;
    gelu.inputs = {match->x};
    gelu.attrs = GeluAttrs{op == OpKind::kTanh};
    ++fused;
  }
  if (fused) graph.compact(dead);
  return fused;
}

}  // namespace ios::ir
