// The import pass ir::fuse_layer_norm (declared and described in ir/passes.h).
#include "ir/passes.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <optional>
#include <utility>

#include "core/error.h"
#include "ir/broadcast.h"
#include "ir/pass_util.h"

namespace ios::ir {

using namespace pass_util;

namespace {

// The node that makes `t` if it is an `op` node not yet fused, else null.
const Node* producer_of(const Graph& graph, TensorId t, OpKind op, const std::vector<bool>& dead) {
  const NodeId p = graph.tensor(t).producer;
  if (p == kNone || dead[static_cast<size_t>(p)] || graph.node(p).op != op) return nullptr;
  return &graph.node(p);
}

// Whether `t` is read by exactly the nodes `readers` (each once) and is not a
// graph output: an intermediate the pattern may delete.
bool read_only_by(const Graph& graph, TensorId t, std::vector<NodeId> readers) {
  if (graph.is_graph_output(t)) return false;
  std::vector<NodeId> consumers = graph.tensor(t).consumers;
  std::sort(consumers.begin(), consumers.end());
  std::sort(readers.begin(), readers.end());
  if (consumers != readers) return false;
  for (NodeId r : readers) {
    const auto& in = graph.node(r).inputs;
    if (std::count(in.begin(), in.end(), t) != 1) return false;
  }
  return true;
}

// For a binary node with `t` as one operand: the other operand, or kNone.
TensorId other_operand(const Node& n, TensorId t) {
  if (n.inputs.size() != 2) return kNone;
  if (n.inputs[0] == t && n.inputs[1] != t) return n.inputs[1];
  if (n.inputs[1] == t && n.inputs[0] != t) return n.inputs[0];
  return kNone;
}

// The normalized-dims axis of a ReduceMean node of the pattern: its axes are
// the trailing axes of its input from that axis on, with kept dims.
std::optional<int64_t> trailing_reduction(const Graph& graph, const Node& reduce) {
  const auto& a = reduce.attr<ReduceAttrs>();
  const auto rank = static_cast<int64_t>(graph.tensor(reduce.inputs.at(0)).shape.size());
  if (!a.keepdims || a.axes.empty()) return std::nullopt;
  for (size_t k = 0; k < a.axes.size(); ++k) {
    if (a.axes[k] != rank - static_cast<int64_t>(a.axes.size() - k)) return std::nullopt;
  }
  return a.axes.front();
}

// A node after `tail` that folds into the LayerNormalization: `op` (Mul or
// Add) of tail's output and a constant broadcasting to `dims`, keeping the
// shape. Returns the node and the constant.
std::optional<std::pair<NodeId, TensorId>> affine_step(const Graph& graph, NodeId tail, OpKind op,
                                                       const Shape& dims,
                                                       const std::vector<bool>& dead) {
  const TensorId out = graph.node(tail).outputs.at(0);
  const auto& consumers = graph.tensor(out).consumers;
  if (consumers.size() != 1 || graph.is_graph_output(out)) return std::nullopt;
  const NodeId c = consumers[0];
  const Node& step = graph.node(c);
  if (dead[static_cast<size_t>(c)] || step.op != op) return std::nullopt;
  const TensorId p = other_operand(step, out);
  if (p == kNone || !graph.tensor(p).is_constant() ||
      !broadcasts_to(graph.tensor(p).shape, dims)) {
    return std::nullopt;
  }
  if (graph.tensor(step.outputs.at(0)).shape != graph.tensor(out).shape) return std::nullopt;
  return std::make_pair(c, p);
}

}  // namespace

int fuse_layer_norm(Graph& graph) {
  NameSet names(graph);
  std::vector<bool> dead(graph.num_nodes(), false);
  int fused = 0;
  for (size_t k = 0; k < graph.num_nodes(); ++k) {
    const auto div_id = static_cast<NodeId>(k);
    const Node& div = graph.node(div_id);
    if (dead[k] || div.op != OpKind::kDiv || div.inputs.size() != 2) continue;
    // Walk up from y = Div(d, s): s = Sqrt(ve), ve = Add(v, eps), v = ReduceMean(p), p = Pow(d, 2),
    // d = Sub(x, m), m = ReduceMean(x).
    const TensorId d = div.inputs[0], s = div.inputs[1];
    const Node* sqrt = producer_of(graph, s, OpKind::kSqrt, dead);
    if (!sqrt) continue;
    const TensorId ve = sqrt->inputs.at(0);
    const Node* add_eps = producer_of(graph, ve, OpKind::kAdd, dead);
    if (!add_eps || add_eps->inputs.size() != 2) continue;
    const bool eps_second = scalar_constant(graph, add_eps->inputs[1]).has_value();
    const TensorId v = add_eps->inputs[eps_second ? 0 : 1];
    const std::optional<float> eps = scalar_constant(graph, add_eps->inputs[eps_second ? 1 : 0]);
    if (!eps || !std::isfinite(*eps) || *eps < 0.0f) continue;
    const Node* var = producer_of(graph, v, OpKind::kReduceMean, dead);
    if (!var) continue;
    const TensorId p = var->inputs.at(0);
    const Node* pow = producer_of(graph, p, OpKind::kPow, dead);
    if (!pow || pow->inputs.size() != 2 || pow->inputs[0] != d) continue;
    if (scalar_constant(graph, pow->inputs[1]) != std::optional<float>(2.0f)) continue;
    const Node* sub = producer_of(graph, d, OpKind::kSub, dead);
    if (!sub || sub->inputs.size() != 2) continue;
    const TensorId x = sub->inputs[0], m = sub->inputs[1];
    const Node* mean = producer_of(graph, m, OpKind::kReduceMean, dead);
    if (!mean || mean->inputs.at(0) != x || x == m) continue;
    const std::optional<int64_t> axis = trailing_reduction(graph, *mean);
    if (!axis || trailing_reduction(graph, *var) != axis) continue;
    // Shapes: the pattern never broadcasts x to something larger.
    const Shape& xs = graph.tensor(x).shape;
    const Shape& ms = graph.tensor(m).shape;
    if (graph.tensor(d).shape != xs || graph.tensor(p).shape != xs ||
        graph.tensor(div.outputs.at(0)).shape != xs || graph.tensor(v).shape != ms ||
        graph.tensor(ve).shape != ms || graph.tensor(s).shape != ms) {
      continue;
    }
    const NodeId sqrt_id = graph.tensor(s).producer, add_id = graph.tensor(ve).producer;
    const NodeId var_id = graph.tensor(v).producer, pow_id = graph.tensor(p).producer;
    const NodeId sub_id = graph.tensor(d).producer, mean_id = graph.tensor(m).producer;
    if (!read_only_by(graph, m, {sub_id}) || !read_only_by(graph, d, {pow_id, div_id}) ||
        !read_only_by(graph, p, {var_id}) || !read_only_by(graph, v, {add_id}) ||
        !read_only_by(graph, ve, {sqrt_id}) || !read_only_by(graph, s, {div_id})) {
      continue;
    }
    // The affine part: Mul by gamma, then Add of beta, each optional.
    const Shape dims = LayerNormAttrs{.axis = *axis}.normalized_dims(xs);
    std::vector<NodeId> pattern{mean_id, sub_id, pow_id, var_id, add_id, sqrt_id, div_id};
    TensorId gamma = kNone, beta = kNone;
    if (auto step = affine_step(graph, pattern.back(), OpKind::kMul, dims, dead)) {
      pattern.push_back(step->first);
      gamma = step->second;
    }
    if (auto step = affine_step(graph, pattern.back(), OpKind::kAdd, dims, dead)) {
      pattern.push_back(step->first);
      beta = step->second;
    }
    if (gamma == kNone) {
      Tensor ones{names.fresh(graph.tensor(div.outputs[0]).name + "_layer_norm_scale"),
                  dims,
                  kNone,
                  {},
                  std::make_shared<const std::vector<float>>(
                      static_cast<size_t>(num_elements(dims)), 1.0f)};
      gamma = graph.add_tensor(std::move(ones));  // invalidates tensor references
    }
    // The last node of the pattern becomes the LayerNormalization, writing
    // the pattern's output; compact() deletes the others.
    const NodeId tail = pattern.back();
    for (NodeId n : pattern) dead[static_cast<size_t>(n)] = n != tail;
    Node& ln = graph.node(tail);
    ln.op = OpKind::kLayerNorm;
    ln.inputs =
        beta == kNone ? std::vector<TensorId>{x, gamma} : std::vector<TensorId>{x, gamma, beta};
    LayerNormAttrs attrs;
    attrs.axis = *axis;
    attrs.epsilon = *eps;
    ln.attrs = attrs;
    ++fused;
  }
  if (fused) graph.compact(dead);
  return fused;
}

}  // namespace ios::ir
