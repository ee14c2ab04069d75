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
  return group > 1 && in.size() == 4 && group == in[1];
}

bool is_pointwise(const Graph& g, const Node& n) {
  if (n.op != OpKind::kConv) return false;
  const auto& a = n.attr<ir::ConvAttrs>();
  return a.group == 1 && a.kernel[0] == 1 && a.kernel[1] == 1 && a.stride[0] == 1 &&
         a.stride[1] == 1 && a.pads == std::array<int64_t, 4>{0, 0, 0, 0};
}

}  // namespace

UnitGraph UnitGraph::form(const ir::Graph& graph, const FormationOptions& options) {
  const auto num_nodes = static_cast<NodeId>(graph.num_nodes());
  if (num_nodes == 0) user_error("the model has no operators to schedule");
  const std::vector<NodeId> order = graph.topological_order();

  // owner[n]: the anchor node whose unit n belongs to (kNone: undecided).
  std::vector<NodeId> owner(static_cast<size_t>(num_nodes), ir::kNone);
  std::map<NodeId, UnitKind> kind_of_anchor;
  std::vector<char> prologue(static_cast<size_t>(num_nodes), 0);
  auto producer = [&](TensorId t) { return graph.tensor(t).producer; };
  auto owner_of = [&](NodeId n) { return owner[static_cast<size_t>(n)]; };

  // Rules 1-3, in topological order.
  for (NodeId n : order) {
    const Node& node = graph.node(n);
    if (is_binary_elementwise(graph, node)) continue;  // decided by rules 4-5
    if (!is_unary_elementwise(graph, node)) {
      NodeId anchor = n;
      UnitKind kind = anchor_kind(node.op);
      if (options.fuse_sepconv && is_pointwise(graph, node)) {
        const NodeId p = producer(node.inputs[0]);
        if (p != ir::kNone && is_depthwise(graph, graph.node(p)) &&
            single_internal_use(graph, node.inputs[0]) && owner_of(p) == p) {
          anchor = p;  // join the depthwise conv's unit
          kind = UnitKind::kSepConv;
        }
      }
      owner[static_cast<size_t>(n)] = anchor;
      kind_of_anchor[anchor] = kind;
      continue;
    }
    // Unary element-wise: an epilogue of a compute unit when possible.
    const TensorId in = activation_input(graph, node);
    const NodeId p = in == ir::kNone ? ir::kNone : producer(in);
    if (options.fuse_epilogues && p != ir::kNone && owner_of(p) != ir::kNone &&
        single_internal_use(graph, in)) {
      const UnitKind k = kind_of_anchor.at(owner_of(p));
      if (accepts_epilogue(k) && k != UnitKind::kElementwise) {
        owner[static_cast<size_t>(n)] = owner_of(p);
        continue;
      }
    }
    // Rule 4: a Relu (a prologue operator in the table) whose only use is a
    // Conv becomes that Conv's prologue.
    const TensorId out = node.outputs[0];
    if (options.fuse_sepconv && ir::op_info(node.op).traits.prologue && single_internal_use(graph, out) &&
        graph.node(graph.tensor(out).consumers[0]).op == OpKind::kConv) {
      prologue[static_cast<size_t>(n)] = 1;
    }
  }

  // Rule 4, backwards: attach prologue Relus and the Add trees feeding them.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const NodeId n = *it;
    const Node& node = graph.node(n);
    if (owner_of(n) != ir::kNone) continue;
    const TensorId out = node.outputs[0];
    if (!single_internal_use(graph, out)) {
      if (options.fuse_input_sums && is_binary_elementwise(graph, node) && node.op == OpKind::kAdd) {
        owner[static_cast<size_t>(n)] = n;  // the last Add of a sum chain anchors it
        kind_of_anchor[n] = UnitKind::kElementwise;
      }
      continue;
    }
    const NodeId consumer = graph.tensor(out).consumers[0];
    if (prologue[static_cast<size_t>(n)]) {
      // The consumer Conv's unit (its owner is set: anchors were decided above).
      owner[static_cast<size_t>(n)] = owner_of(consumer);
      continue;
    }
    // An input sum joins when its only use is a prologue node or the data
    // input of the Conv that starts a Conv/SepConv unit.
    const Node& user = graph.node(consumer);
    const bool feeds_conv_unit =
        prologue[static_cast<size_t>(consumer)] ||
        (user.op == OpKind::kConv && user.inputs[0] == out &&
         kind_of_anchor.at(owner_of(consumer)) != UnitKind::kElementwise);
    if (!options.fuse_input_sums || !is_binary_elementwise(graph, node) || node.op != OpKind::kAdd) {
      continue;
    }
    if (owner_of(consumer) != ir::kNone && feeds_conv_unit) {
      owner[static_cast<size_t>(n)] = owner_of(consumer);
      prologue[static_cast<size_t>(n)] = 1;
    } else if (user.op == OpKind::kAdd && owner_of(consumer) != ir::kNone &&
               kind_of_anchor.count(owner_of(consumer)) &&
               kind_of_anchor.at(owner_of(consumer)) == UnitKind::kElementwise) {
      // A chain of Adds (the unweighted sum of a RandWire stage's sinks) is
      // one element-wise unit.
      owner[static_cast<size_t>(n)] = owner_of(consumer);
    } else {
      owner[static_cast<size_t>(n)] = n;
      kind_of_anchor[n] = UnitKind::kElementwise;
    }
  }

  // Rule 5: what is left becomes its own element-wise unit (with epilogues).
  for (NodeId n : order) {
    if (owner_of(n) != ir::kNone) continue;
    const Node& node = graph.node(n);
    if (is_unary_elementwise(graph, node) && options.fuse_epilogues) {
      const TensorId in = activation_input(graph, node);
      const NodeId p = in == ir::kNone ? ir::kNone : producer(in);
      if (p != ir::kNone && owner_of(p) != ir::kNone && single_internal_use(graph, in) &&
          accepts_epilogue(kind_of_anchor.at(owner_of(p))) && !prologue[static_cast<size_t>(p)]) {
        owner[static_cast<size_t>(n)] = owner_of(p);
        continue;
      }
    }
    owner[static_cast<size_t>(n)] = n;
    kind_of_anchor[n] = UnitKind::kElementwise;
  }

  // Collect units; nodes of a unit in topological order.
  std::map<NodeId, std::vector<NodeId>> members;
  for (NodeId n : order) members[owner_of(n)].push_back(n);

  std::vector<Unit> raw;
  std::map<NodeId, int> raw_index;
  for (auto& [anchor, nodes] : members) {
    Unit unit;
    unit.kind = kind_of_anchor.at(anchor);
    unit.nodes = nodes;
    unit.anchor = anchor;
    if (unit.kind == UnitKind::kSepConv) {
      // The anchor of a separable conv is its pointwise (last) convolution.
      for (NodeId n : nodes) {
        if (graph.node(n).op == OpKind::kConv) unit.anchor = n;
      }
    }
    const Node& last = graph.node(nodes.back());
    unit.id = graph.tensor(last.outputs[0]).name;
    raw_index[anchor] = static_cast<int>(raw.size());
    raw.push_back(std::move(unit));
  }
  auto unit_of_node = [&](NodeId n) { return raw_index.at(owner_of(n)); };

  // Inputs, outputs and edges.
  const size_t count = raw.size();
  std::vector<std::vector<int>> succ(count);
  std::vector<int> indegree(count, 0);
  for (size_t u = 0; u < count; ++u) {
    Unit& unit = raw[u];
    for (NodeId n : unit.nodes) {
      for (TensorId t : graph.node(n).inputs) {
        const ir::Tensor& tensor = graph.tensor(t);
        if (tensor.is_constant()) continue;
        if (tensor.producer != ir::kNone && unit_of_node(tensor.producer) == static_cast<int>(u)) {
          continue;
        }
        if (std::find(unit.inputs.begin(), unit.inputs.end(), t) == unit.inputs.end()) {
          unit.inputs.push_back(t);
        }
        if (tensor.producer != ir::kNone) {
          const int from = unit_of_node(tensor.producer);
          if (std::find(succ[static_cast<size_t>(from)].begin(), succ[static_cast<size_t>(from)].end(),
                        static_cast<int>(u)) == succ[static_cast<size_t>(from)].end()) {
            succ[static_cast<size_t>(from)].push_back(static_cast<int>(u));
            ++indegree[u];
          }
        }
      }
      for (TensorId t : graph.node(n).outputs) {
        bool used_outside = graph.is_graph_output(t);
        for (NodeId c : graph.tensor(t).consumers) {
          used_outside |= unit_of_node(c) != static_cast<int>(u);
        }
        if (used_outside) unit.outputs.push_back(t);
      }
    }
  }

  // Topological order of units; ties broken by the first node's position.
  std::vector<int> position(static_cast<size_t>(num_nodes), 0);
  for (size_t i = 0; i < order.size(); ++i) position[static_cast<size_t>(order[i])] = static_cast<int>(i);
  auto later = [&](int a, int b) {
    return position[static_cast<size_t>(raw[static_cast<size_t>(a)].nodes.front())] >
           position[static_cast<size_t>(raw[static_cast<size_t>(b)].nodes.front())];
  };
  std::priority_queue<int, std::vector<int>, decltype(later)> ready(later);
  for (size_t u = 0; u < count; ++u) {
    if (indegree[u] == 0) ready.push(static_cast<int>(u));
  }
  std::vector<int> new_id(count, -1);
  std::vector<int> sorted;
  while (!ready.empty()) {
    const int u = ready.top();
    ready.pop();
    new_id[static_cast<size_t>(u)] = static_cast<int>(sorted.size());
    sorted.push_back(u);
    for (int s : succ[static_cast<size_t>(u)]) {
      if (--indegree[static_cast<size_t>(s)] == 0) ready.push(s);
    }
  }
  IOS_ASSERT(sorted.size() == count, "unit graph has a cycle ({} of {} units ordered)",
             sorted.size(), count);

  UnitGraph result;
  result.ir_ = &graph;
  result.units_.reserve(count);
  for (int u : sorted) result.units_.push_back(std::move(raw[static_cast<size_t>(u)]));
  result.preds_.assign(count, {});
  result.succs_.assign(count, {});
  for (size_t u = 0; u < count; ++u) {
    for (int s : succ[u]) {
      result.succs_[static_cast<size_t>(new_id[u])].push_back(new_id[static_cast<size_t>(s)]);
      result.preds_[static_cast<size_t>(new_id[static_cast<size_t>(s)])].push_back(new_id[u]);
    }
  }
  result.tensor_producer_.assign(graph.num_tensors(), ir::kNone);
  for (size_t u = 0; u < count; ++u) {
    for (NodeId n : result.units_[u].nodes) {
      for (TensorId t : graph.node(n).outputs) {
        result.tensor_producer_[static_cast<size_t>(t)] = static_cast<UnitId>(u);
      }
    }
  }
  result.max_block_units_ = std::clamp(options.max_block_units, 1, 64);
  result.max_block_log10_bound_ = options.max_block_log10_bound;
  result.finish();
  return result;
}

}  // namespace ios::sched
