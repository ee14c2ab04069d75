// Unit formation: which IR nodes make one schedule unit. The rules, in the
// order applied (docs/unit-formation.md explains them with examples):
//
//  1. Anchors. Every node that is not element-wise starts a unit: Conv, Gemm,
//     MatMul, pools, ReduceMean, Softmax, Concat, Split, Slice, Flatten,
//     Reshape, Transpose, Pad, Resize, LayerNormalization. LayerNormalization
//     (a mean reduction per row, then element-wise work) anchors a pool unit,
//     so epilogues (a Mul by a layer scale) join it by rule 3; the importer
//     has already fused PyTorch's decomposition of it (ir::fuse_layer_norm).
//  2. Separable convolution. A pointwise 1x1 Conv (group 1) whose input is the
//     only use of a depthwise Conv's output joins the depthwise conv's unit
//     (kind kSepConv): IOS's "SepConv".
//  3. Epilogues. A unary element-wise node (Relu, Clip, Sigmoid, Tanh, Erf, ...,
//     standalone BatchNorm, Add/Sub/Mul/Div/Pow by a constant on either side:
//     ir::is_epilogue_candidate) joins the unit
//     of its input's producer when that input has no other use, is not a graph
//     output, and the producer is a Conv/SepConv/Pool/MatMul unit
//     (LayerNormalization's unit is a Pool unit).
//  4. Prologues. A Relu not taken by rule 3 whose output's only use is a Conv
//     joins that Conv's unit in front of it (IOS's "ReLU-SepConv" when the
//     Conv starts a separable conv). An Add of two activations whose output's
//     only use is such a prologue (or the Conv itself) joins too, and so do
//     the Adds feeding it: the "sum of predecessors" of a RandWire node.
//     A chain of Adds whose intermediate sums have no other use is one
//     element-wise unit (the sum of a RandWire stage's sinks).
//  5. Everything else is a unit of its own (kElementwise: residual Add, gating
//     Mul, activations after a Concat...), and rule 3 applies to it as well:
//     a Relu after a residual Add joins the Add's unit.
//
// Intermediate tensors of a unit have exactly one use, inside the unit, so the
// unit graph is acyclic whenever the IR is.
#include <algorithm>
#include <map>
#include <queue>

#include "core/error.h"
#include "ir/op_info.h"
#include "sched/unit_graph.h"

namespace ios::sched {
namespace {

using ir::Graph;
using ir::Node;
using ir::NodeId;
using ir::OpKind;
using ir::TensorId;

// Rule 3's candidates: unary element-wise operators, and binary ones with one
// activation operand (the operator table's traits, ir/op_info.h).
bool is_unary_elementwise(const Graph& g, const Node& n) { return ir::is_epilogue_candidate(g, n); }

// Two activations combined element-wise (a residual Add, a gating Mul).
bool is_binary_elementwise(const Graph& g, const Node& n) {
  return ir::op_info(n.op).traits.elementwise == ir::Elementwise::kBinary && !is_unary_elementwise(g, n);
}

UnitKind anchor_kind(OpKind op) {
  switch (ir::op_info(op).traits.op_class) {
    case ir::OpClass::kConv: return UnitKind::kConv;
    case ir::OpClass::kMatMul: return UnitKind::kMatMul;
    case ir::OpClass::kPool: return UnitKind::kPool;
    case ir::OpClass::kSoftmax: return UnitKind::kSoftmax;
    case ir::OpClass::kConcat: return UnitKind::kConcat;
    case ir::OpClass::kLayout: return UnitKind::kLayout;
    case ir::OpClass::kElementwise: return UnitKind::kElementwise;
  }
  return UnitKind::kElementwise;
}

bool accepts_epilogue(UnitKind kind) {
  return kind == UnitKind::kConv || kind == UnitKind::kSepConv || kind == UnitKind::kPool ||
         kind == UnitKind::kMatMul || kind == UnitKind::kElementwise;
}

// The only activation input of a node (the first non-constant input).
TensorId activation_input(const Graph& g, const Node& n) {
  for (TensorId t : n.inputs) {
    if (!g.tensor(t).is_constant()) return t;
  }
  return ir::kNone;
}

bool single_internal_use(const Graph& g, TensorId t) {
  return g.tensor(t).consumers.size() == 1 && !g.is_graph_output(t);
}

bool is_depthwise(const Graph& g, const Node& n) {
  if (n.op != OpKind::kConv) return false;
  const int64_t group = n.attr<ir::ConvAttrs>().group;
  const ir::Shape& in = g.tensor(n.inputs[0]).shape;
  return group > 1 && in.size() >= 3 && group == in[1];
}

bool is_pointwise(const Graph& g, const Node& n) {
  if (n.op != OpKind::kConv) return false;
  const auto& a = n.attr<ir::ConvAttrs>();
  auto all_equal = [](const ir::Dims& v, int64_t x) {
    return std::all_of(v.begin(), v.end(), [x](int64_t e) { return e == x; });
  };
  return a.group == 1 && all_equal(a.kernel, 1) && all_equal(a.stride, 1) && all_equal(a.pads, 0);
}

// The assignment of nodes to units while the rules run: owner[n] is the
// anchor node whose unit n belongs to (kNone: undecided).
class Formation {
 public:
  Formation(const Graph& graph, const FormationOptions& options)
      : graph_(graph),
        options_(options),
        order_(graph.topological_order()),
        owner_(graph.num_nodes(), ir::kNone),
        prologue_(graph.num_nodes(), 0) {}

  // Rules 1-3, in topological order: anchors, separable convolutions,
  // epilogues; marks the Relus that rule 4 makes prologues.
  void anchors_and_epilogues() {
    for (NodeId n : order_) {
      const Node& node = graph_.node(n);
      if (is_binary_elementwise(graph_, node)) continue;  // decided by rules 4-5
      if (!is_unary_elementwise(graph_, node)) {
        anchor(n);
      } else if (!join_as_epilogue(n, /*into_elementwise=*/false)) {
        mark_prologue(n);
      }
    }
  }

  // Rule 4, backwards: attach prologue Relus and the Add trees feeding them.
  void prologues_and_input_sums() {
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      const NodeId n = *it;
      if (owner(n) != ir::kNone) continue;
      const Node& node = graph_.node(n);
      const TensorId out = node.outputs[0];
      const bool sum = options_.fuse_input_sums && is_binary_elementwise(graph_, node) &&
                       node.op == OpKind::kAdd;
      if (!single_internal_use(graph_, out)) {
        if (sum) own(n, UnitKind::kElementwise);  // the last Add of a sum chain anchors it
        continue;
      }
      const NodeId consumer = graph_.tensor(out).consumers[0];
      if (prologue_[index(n)]) {
        // The consumer Conv's unit (its owner is set: anchors were decided above).
        owner_[index(n)] = owner(consumer);
        continue;
      }
      if (sum) join_sum(n, out, consumer);
    }
  }

  // Rule 5: what is left becomes its own element-wise unit (with epilogues).
  void the_rest() {
    for (NodeId n : order_) {
      if (owner(n) != ir::kNone) continue;
      if (!is_unary_elementwise(graph_, graph_.node(n)) || !join_as_epilogue(n, /*into_elementwise=*/true)) {
        own(n, UnitKind::kElementwise);
      }
    }
  }

  // The units, their nodes in topological order, unsorted.
  std::vector<Unit> collect_units() {
    std::map<NodeId, std::vector<NodeId>> members;
    for (NodeId n : order_) members[owner(n)].push_back(n);
    std::vector<Unit> units;
    for (auto& [anchor, nodes] : members) {
      Unit unit;
      unit.kind = kind_of_anchor_.at(anchor);
      unit.nodes = nodes;
      unit.anchor = anchor;
      if (unit.kind == UnitKind::kSepConv) {
        // The anchor of a separable conv is its pointwise (last) convolution.
        for (NodeId n : nodes) {
          if (graph_.node(n).op == OpKind::kConv) unit.anchor = n;
        }
      }
      const Node& last = graph_.node(nodes.back());
      unit.id = graph_.tensor(last.outputs[0]).name;
      unit_index_[anchor] = static_cast<int>(units.size());
      units.push_back(std::move(unit));
    }
    return units;
  }

  int unit_of(NodeId n) const { return unit_index_.at(owner(n)); }
  const std::vector<NodeId>& order() const { return order_; }

 private:
  static size_t index(NodeId n) { return static_cast<size_t>(n); }
  NodeId owner(NodeId n) const { return owner_[index(n)]; }
  NodeId producer(TensorId t) const { return graph_.tensor(t).producer; }
  void own(NodeId n, UnitKind kind) {
    owner_[index(n)] = n;
    kind_of_anchor_[n] = kind;
  }

  // Rules 1-2: a node that is not element-wise anchors a unit, unless it is
  // the pointwise half of a separable convolution.
  void anchor(NodeId n) {
    const Node& node = graph_.node(n);
    NodeId anchor = n;
    UnitKind kind = anchor_kind(node.op);
    if (options_.fuse_sepconv && is_pointwise(graph_, node)) {
      const NodeId p = producer(node.inputs[0]);
      if (p != ir::kNone && is_depthwise(graph_, graph_.node(p)) &&
          single_internal_use(graph_, node.inputs[0]) && owner(p) == p) {
        anchor = p;  // join the depthwise conv's unit
        kind = UnitKind::kSepConv;
      }
    }
    owner_[index(n)] = anchor;
    kind_of_anchor_[anchor] = kind;
  }

  // Rule 3 (and rule 5's epilogues): a unary element-wise node joins its
  // input's unit. Rules 1-3 join compute units only; rule 5 also element-wise
  // units, but not through a prologue.
  bool join_as_epilogue(NodeId n, bool into_elementwise) {
    if (!options_.fuse_epilogues) return false;
    const TensorId in = activation_input(graph_, graph_.node(n));
    const NodeId p = in == ir::kNone ? ir::kNone : producer(in);
    if (p == ir::kNone || owner(p) == ir::kNone || !single_internal_use(graph_, in)) return false;
    const UnitKind k = kind_of_anchor_.at(owner(p));
    if (!accepts_epilogue(k)) return false;
    if (into_elementwise ? prologue_[index(p)] != 0 : k == UnitKind::kElementwise) return false;
    owner_[index(n)] = owner(p);
    return true;
  }

  // Rule 4: a Relu (a prologue operator in the table) whose only use is a
  // Conv becomes that Conv's prologue.
  void mark_prologue(NodeId n) {
    const Node& node = graph_.node(n);
    const TensorId out = node.outputs[0];
    if (options_.fuse_sepconv && ir::op_info(node.op).traits.prologue && single_internal_use(graph_, out) &&
        graph_.node(graph_.tensor(out).consumers[0]).op == OpKind::kConv) {
      prologue_[index(n)] = 1;
    }
  }

  // Rule 4's input sums: an Add whose only use is a prologue node or the
  // data input of the Conv that starts a Conv/SepConv unit joins that unit; a
  // chain of Adds (the unweighted sum of a RandWire stage's sinks) is one
  // element-wise unit; any other Add is its own.
  void join_sum(NodeId n, TensorId out, NodeId consumer) {
    const Node& user = graph_.node(consumer);
    const NodeId unit = owner(consumer);
    const bool feeds_conv_unit =
        prologue_[index(consumer)] ||
        (user.op == OpKind::kConv && user.inputs[0] == out && kind_of_anchor_.at(unit) != UnitKind::kElementwise);
    if (unit != ir::kNone && feeds_conv_unit) {
      owner_[index(n)] = unit;
      prologue_[index(n)] = 1;
    } else if (user.op == OpKind::kAdd && unit != ir::kNone && kind_of_anchor_.count(unit) &&
               kind_of_anchor_.at(unit) == UnitKind::kElementwise) {
      owner_[index(n)] = unit;
    } else {
      own(n, UnitKind::kElementwise);
    }
  }

  const Graph& graph_;
  const FormationOptions& options_;
  const std::vector<NodeId> order_;
  std::vector<NodeId> owner_;
  std::map<NodeId, UnitKind> kind_of_anchor_;
  std::vector<char> prologue_;
  std::map<NodeId, int> unit_index_;  // anchor -> index in collect_units()
};

// Each unit's input and output tensors, and the edges between units.
struct UnitEdges {
  std::vector<std::vector<int>> succ;
  std::vector<int> indegree;
};

UnitEdges connect_units(const Graph& graph, const Formation& formation, std::vector<Unit>& units) {
  const size_t count = units.size();
  UnitEdges edges{std::vector<std::vector<int>>(count), std::vector<int>(count, 0)};
  for (size_t u = 0; u < count; ++u) {
    Unit& unit = units[u];
    for (NodeId n : unit.nodes) {
      for (TensorId t : graph.node(n).inputs) {
        const ir::Tensor& tensor = graph.tensor(t);
        if (tensor.is_constant()) continue;
        if (tensor.producer != ir::kNone && formation.unit_of(tensor.producer) == static_cast<int>(u)) {
          continue;
        }
        if (std::find(unit.inputs.begin(), unit.inputs.end(), t) == unit.inputs.end()) {
          unit.inputs.push_back(t);
        }
        if (tensor.producer != ir::kNone) {
          std::vector<int>& from = edges.succ[static_cast<size_t>(formation.unit_of(tensor.producer))];
          if (std::find(from.begin(), from.end(), static_cast<int>(u)) == from.end()) {
            from.push_back(static_cast<int>(u));
            ++edges.indegree[u];
          }
        }
      }
      for (TensorId t : graph.node(n).outputs) {
        bool used_outside = graph.is_graph_output(t);
        for (NodeId c : graph.tensor(t).consumers) used_outside |= formation.unit_of(c) != static_cast<int>(u);
        if (used_outside) unit.outputs.push_back(t);
      }
    }
  }
  return edges;
}

// A topological order of the units; ties broken by the first node's
// position in the IR's order.
std::vector<int> order_units(const Formation& formation, const std::vector<Unit>& units, UnitEdges edges) {
  std::map<NodeId, size_t> position;
  for (size_t i = 0; i < formation.order().size(); ++i) position[formation.order()[i]] = i;
  auto later = [&](int a, int b) {
    return position.at(units[static_cast<size_t>(a)].nodes.front()) >
           position.at(units[static_cast<size_t>(b)].nodes.front());
  };
  std::priority_queue<int, std::vector<int>, decltype(later)> ready(later);
  for (size_t u = 0; u < units.size(); ++u) {
    if (edges.indegree[u] == 0) ready.push(static_cast<int>(u));
  }
  std::vector<int> sorted;
  while (!ready.empty()) {
    const int u = ready.top();
    ready.pop();
    sorted.push_back(u);
    for (int s : edges.succ[static_cast<size_t>(u)]) {
      if (--edges.indegree[static_cast<size_t>(s)] == 0) ready.push(s);
    }
  }
  IOS_ASSERT(sorted.size() == units.size(), "unit graph has a cycle ({} of {} units ordered)", sorted.size(),
             units.size());
  return sorted;
}

}  // namespace

UnitGraph UnitGraph::form(const ir::Graph& graph, const FormationOptions& options) {
  if (graph.num_nodes() == 0) user_error("the model has no operators to schedule");
  Formation formation(graph, options);
  formation.anchors_and_epilogues();     // rules 1-3
  formation.prologues_and_input_sums();  // rule 4
  formation.the_rest();                  // rule 5
  std::vector<Unit> raw = formation.collect_units();
  const UnitEdges edges = connect_units(graph, formation, raw);
  const std::vector<int> sorted = order_units(formation, raw, edges);

  const size_t count = raw.size();
  std::vector<int> new_id(count, -1);
  for (size_t i = 0; i < sorted.size(); ++i) new_id[static_cast<size_t>(sorted[i])] = static_cast<int>(i);
  UnitGraph result;
  result.ir_ = &graph;
  result.units_.reserve(count);
  for (int u : sorted) result.units_.push_back(std::move(raw[static_cast<size_t>(u)]));
  result.preds_.assign(count, {});
  result.succs_.assign(count, {});
  for (size_t u = 0; u < count; ++u) {
    for (int s : edges.succ[u]) {
      result.succs_[static_cast<size_t>(new_id[u])].push_back(new_id[static_cast<size_t>(s)]);
      result.preds_[static_cast<size_t>(new_id[static_cast<size_t>(s)])].push_back(new_id[u]);
    }
  }
  result.tensor_producer_.assign(graph.num_tensors(), ir::kNone);
  for (size_t u = 0; u < count; ++u) {
    for (NodeId n : result.units_[u].nodes) {
      for (TensorId t : graph.node(n).outputs) result.tensor_producer_[static_cast<size_t>(t)] = static_cast<UnitId>(u);
    }
  }
  result.max_block_units_ = std::clamp(options.max_block_units, 1, 64);
  result.max_block_log10_bound_ = options.max_block_log10_bound;
  result.finish();
  return result;
}

}  // namespace ios::sched
