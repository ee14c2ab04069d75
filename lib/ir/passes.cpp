#include "ir/passes.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <optional>
#include <unordered_set>
#include <utility>

#include "core/error.h"
#include "ir/layer_norm.h"

namespace ios::ir {
namespace {

// Tensor names in use, to give new tensors unique names.
class NameSet {
 public:
  explicit NameSet(const Graph& graph) {
    for (const Tensor& t : graph.tensors()) names_.insert(t.name);
  }
  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int i = 1; names_.count(name); ++i) name = fmt::format("{}_{}", base, i);
    names_.insert(name);
    return name;
  }

 private:
  std::unordered_set<std::string> names_;
};

bool single_private_use(const Graph& graph, TensorId t, NodeId consumer) {
  const Tensor& tensor = graph.tensor(t);
  if (tensor.consumers.size() != 1 || tensor.consumers[0] != consumer) return false;
  if (graph.is_graph_output(t)) return false;
  const Node& c = graph.node(consumer);
  return std::count(c.inputs.begin(), c.inputs.end(), t) == 1;
}

bool is_const(const Graph& graph, TensorId t) { return graph.tensor(t).is_constant(); }

// True when every value of `t` is >= 0 by construction of its producer.
bool known_non_negative(const Graph& graph, TensorId t) {
  const NodeId p = graph.tensor(t).producer;
  if (p == kNone) return false;
  const Node& n = graph.node(p);
  switch (n.op) {
    case OpKind::kRelu:
    case OpKind::kSigmoid:
    case OpKind::kHardSigmoid:
      return true;
    case OpKind::kClip:
      // With max < min the kernel outputs max, so both bounds must be >= 0.
      return n.attr<ClipAttrs>().min >= 0.0f && n.attr<ClipAttrs>().max >= 0.0f;
    default:
      return false;
  }
}

// --- GELU chains ---------------------------------------------------------------

// The value of a one-element constant (a scalar, or [1], [1, 1]...).
std::optional<float> scalar_constant(const Graph& graph, TensorId t) {
  const Tensor& tensor = graph.tensor(t);
  if (!tensor.is_constant() || tensor.data->size() != 1) return std::nullopt;
  return (*tensor.data)[0];
}

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

int fold_batchnorm(Graph& graph) {
  NameSet names(graph);
  std::vector<bool> dead(graph.num_nodes(), false);
  int folded = 0;
  for (size_t b = 0; b < graph.num_nodes(); ++b) {
    const Node& bn = graph.node(static_cast<NodeId>(b));
    if (bn.op != OpKind::kBatchNorm) continue;
    const TensorId x = bn.inputs.at(0);
    const NodeId c = graph.tensor(x).producer;
    if (c == kNone || dead[static_cast<size_t>(c)] || graph.node(c).op != OpKind::kConv) continue;
    if (!single_private_use(graph, x, static_cast<NodeId>(b))) continue;
    const Node& conv = graph.node(c);
    bool constant = is_const(graph, conv.inputs.at(1)) &&
                    (conv.inputs.size() < 3 || is_const(graph, conv.inputs[2]));
    for (size_t i = 1; i < 5; ++i) constant = constant && is_const(graph, bn.inputs.at(i));
    if (!constant) continue;

    const auto& w = *graph.tensor(conv.inputs[1]).data;
    const Shape w_shape = graph.tensor(conv.inputs[1]).shape;
    const auto out_channels = static_cast<size_t>(w_shape.at(0));
    if (out_channels == 0) continue;  // an empty convolution: nothing to fold (and no division by 0)
    const size_t per_channel = w.size() / out_channels;
    const auto& gamma = *graph.tensor(bn.inputs[1]).data;
    const auto& beta = *graph.tensor(bn.inputs[2]).data;
    const auto& mean = *graph.tensor(bn.inputs[3]).data;
    const auto& var = *graph.tensor(bn.inputs[4]).data;
    IOS_ASSERT(gamma.size() == out_channels && beta.size() == out_channels &&
                   mean.size() == out_channels && var.size() == out_channels,
               "BatchNorm '{}' parameters do not match conv '{}' channels", bn.name, conv.name);
    const double eps = bn.attr<BatchNormAttrs>().epsilon;

    auto new_w = std::make_shared<std::vector<float>>(w.size());
    auto new_b = std::make_shared<std::vector<float>>(out_channels);
    const std::vector<float>* old_b =
        conv.inputs.size() == 3 ? graph.tensor(conv.inputs[2]).data.get() : nullptr;
    for (size_t o = 0; o < out_channels; ++o) {
      const double s = gamma[o] / std::sqrt(static_cast<double>(var[o]) + eps);
      for (size_t i = 0; i < per_channel; ++i) {
        (*new_w)[o * per_channel + i] = static_cast<float>(w[o * per_channel + i] * s);
      }
      const double bias = old_b ? (*old_b)[o] : 0.0;
      (*new_b)[o] = static_cast<float>((bias - mean[o]) * s + beta[o]);
    }
    const std::string base = graph.tensor(conv.inputs[1]).name;
    Tensor wt{names.fresh(base + "_bn_folded"), w_shape, kNone, {}, new_w};
    Tensor bt{names.fresh(graph.tensor(bn.outputs[0]).name + "_bn_bias"),
              Shape{static_cast<int64_t>(out_channels)}, kNone, {}, new_b};
    const TensorId bn_out = bn.outputs.at(0);
    const TensorId w_id = graph.add_tensor(std::move(wt));  // invalidates tensor references
    const TensorId b_id = graph.add_tensor(std::move(bt));
    Node& conv_mut = graph.node(c);
    conv_mut.inputs = {conv_mut.inputs[0], w_id, b_id};
    conv_mut.outputs = {bn_out};
    dead[b] = true;
    ++folded;
  }
  if (folded) graph.compact(dead);
  return folded;
}

int fold_pad(Graph& graph) {
  std::vector<bool> dead(graph.num_nodes(), false);
  // A removed all-zero Pad's output reads as its input (links are only
  // rebuilt by compact at the end).
  std::vector<TensorId> alias(graph.num_tensors());
  for (size_t t = 0; t < alias.size(); ++t) alias[t] = static_cast<TensorId>(t);
  int folded = 0;
  for (size_t p = 0; p < graph.num_nodes(); ++p) {
    const Node& pad = graph.node(static_cast<NodeId>(p));
    if (pad.op != OpKind::kPad) continue;
    const auto& a = pad.attr<PadAttrs>();
    const TensorId in = alias[static_cast<size_t>(pad.inputs.at(0))], out = pad.outputs.at(0);
    if (graph.is_graph_output(out)) continue;
    const bool all_zero = std::all_of(a.pads.begin(), a.pads.end(), [](int64_t v) { return v == 0; });
    if (all_zero) {
      for (NodeId c : graph.tensor(out).consumers) {
        for (TensorId& t : graph.node(c).inputs) {
          if (t == out) t = in;
        }
      }
      alias[static_cast<size_t>(out)] = in;
      dead[p] = true;
      ++folded;
      continue;
    }
    if (a.mode != PadAttrs::Mode::kConstant || a.pads.size() != 8) continue;
    if (std::any_of(a.pads.begin(), a.pads.end(), [](int64_t v) { return v < 0; })) continue;
    if (a.pads[0] || a.pads[1] || a.pads[4] || a.pads[5]) continue;  // N or C padded
    const auto& consumers = graph.tensor(out).consumers;
    if (consumers.size() != 1) continue;
    const NodeId c = consumers[0];
    if (dead[static_cast<size_t>(c)] || !single_private_use(graph, out, c)) continue;
    if (graph.node(c).inputs.at(0) != out) continue;
    const std::array<int64_t, 4> extra{a.pads[2], a.pads[3], a.pads[6], a.pads[7]};
    Node& consumer = graph.node(c);
    std::array<int64_t, 4>* target = nullptr;
    if (consumer.op == OpKind::kConv && a.value == 0.0f) {
      target = &consumer.attr<ConvAttrs>().pads;
    } else if (consumer.op == OpKind::kAveragePool && a.value == 0.0f) {
      auto& pool = consumer.attr<PoolAttrs>();
      const bool own_pads = std::any_of(pool.pads.begin(), pool.pads.end(), [](int64_t v) { return v != 0; });
      if (!pool.ceil_mode && (pool.count_include_pad || !own_pads)) {
        pool.count_include_pad = true;
        target = &pool.pads;
      }
    } else if (consumer.op == OpKind::kMaxPool) {
      auto& pool = consumer.attr<PoolAttrs>();
      const bool neg_inf = a.value <= -FLT_MAX;
      const bool zero_ok = a.value == 0.0f && known_non_negative(graph, in);
      bool fits = true;
      for (size_t i = 0; i < 4; ++i) fits = fits && pool.pads[i] + extra[i] < pool.kernel[i % 2];
      if (!pool.ceil_mode && fits && (neg_inf || zero_ok)) target = &pool.pads;
    }
    if (!target) continue;
    for (size_t i = 0; i < 4; ++i) (*target)[i] += extra[i];
    consumer.inputs[0] = in;
    dead[p] = true;
    ++folded;
  }
  if (folded) graph.compact(dead);
  return folded;
}

int flatten_concat(Graph& graph) {
  std::vector<bool> dead(graph.num_nodes(), false);
  int flattened = 0;
  // Outer concats first (NodeId order is topological), so one outer concat
  // absorbs a whole nest.
  for (size_t o = graph.num_nodes(); o-- > 0;) {
    if (dead[o] || graph.node(static_cast<NodeId>(o)).op != OpKind::kConcat) continue;
    const int64_t axis = graph.node(static_cast<NodeId>(o)).attr<AxisAttrs>().axis;
    std::vector<TensorId> inputs;
    // Expands one input recursively.
    auto expand = [&](auto&& self, TensorId t, NodeId reader) -> void {
      const NodeId p = graph.tensor(t).producer;
      if (p != kNone && !dead[static_cast<size_t>(p)] && graph.node(p).op == OpKind::kConcat &&
          graph.node(p).attr<AxisAttrs>().axis == axis && single_private_use(graph, t, reader)) {
        dead[static_cast<size_t>(p)] = true;
        ++flattened;
        for (TensorId inner : graph.node(p).inputs) self(self, inner, p);
      } else {
        inputs.push_back(t);
      }
    };
    for (TensorId t : graph.node(static_cast<NodeId>(o)).inputs) expand(expand, t, static_cast<NodeId>(o));
    graph.node(static_cast<NodeId>(o)).inputs = std::move(inputs);
  }
  if (flattened) graph.compact(dead);
  return flattened;
}

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
      !layer_norm::broadcasts_to(graph.tensor(p).shape, dims)) {
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
    const Shape dims = layer_norm::normalized_dims(xs, *axis);
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

int remove_dead_nodes(Graph& graph) {
  int removed = 0;
  for (;;) {
    std::vector<bool> dead(graph.num_nodes(), false);
    int round = 0;
    for (size_t n = 0; n < graph.num_nodes(); ++n) {
      bool used = false;
      for (TensorId t : graph.node(static_cast<NodeId>(n)).outputs) {
        used = used || !graph.tensor(t).consumers.empty() || graph.is_graph_output(t);
      }
      if (!used) {
        dead[n] = true;
        ++round;
      }
    }
    if (!round) return removed;
    removed += round;
    graph.compact(dead);
  }
}

PassStats run_import_passes(Graph& graph) {
  PassStats stats;
  stats.batchnorm_folded = fold_batchnorm(graph);
  stats.pads_folded = fold_pad(graph);
  stats.concats_flattened = flatten_concat(graph);
  stats.layer_norms_fused = fuse_layer_norm(graph);
  stats.gelus_fused = fuse_gelu(graph);
  stats.dead_removed = remove_dead_nodes(graph);
  return stats;
}

}  // namespace ios::ir
