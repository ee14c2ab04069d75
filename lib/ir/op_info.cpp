// The operator table (ir/op_info.h): one entry per line of IOS_OPERATORS
// (ir/op_kind.h), in OpKind order, checked against it at first use.
#include "ir/op_info.h"

#include <algorithm>

#include "core/error.h"
#include "ir/op_definition.h"

namespace ios::ir {
namespace {

// The entries, one per line of IOS_OPERATORS, each made by its definition
// in lib/ir/ops.
std::vector<OpInfo> make_table() {
#define IOS_OPERATOR_ENTRY(kind, definition) ops::definition(),
  return {IOS_OPERATORS(IOS_OPERATOR_ENTRY)};
#undef IOS_OPERATOR_ENTRY
}

const std::vector<OpInfo>& table() {
  static const std::vector<OpInfo> entries = [] {
    std::vector<OpInfo> t = make_table();
    IOS_ASSERT(t.size() == static_cast<size_t>(kNumOpKinds),
               "the operator table has {} entries for {} operators", t.size(), kNumOpKinds);
    for (size_t i = 0; i < t.size(); ++i) {
      IOS_ASSERT(static_cast<size_t>(t[i].kind) == i && t[i].shape != nullptr,
                 "operator table entry {} ({}) is out of OpKind order or has no shape function", i,
                 t[i].onnx_name);
    }
    return t;
  }();
  return entries;
}

}  // namespace

const OpInfo& op_info(OpKind op) {
  const auto index = static_cast<size_t>(op);
  IOS_ASSERT(index < table().size(), "no operator table entry for operator {}",
             static_cast<int>(op));
  return table()[index];
}

const std::vector<OpInfo>& all_ops() { return table(); }

const OpInfo* find_onnx_op(std::string_view onnx_name) {
  for (const OpInfo& info : table()) {
    if (info.onnx_name == onnx_name || (!info.legacy_name.empty() && info.legacy_name == onnx_name))
      return &info;
  }
  return nullptr;
}

std::string_view op_name(OpKind op) {
  const auto index = static_cast<size_t>(op);
  return index < table().size() ? table()[index].onnx_name : std::string_view("?");
}

bool is_epilogue_candidate(const Graph& graph, const Node& node) {
  if (node.op == OpKind::kCast && !node.inputs.empty() && !node.outputs.empty() &&
      graph.tensor(node.inputs[0]).type != graph.tensor(node.outputs[0]).type) {
    return false;
  }
  switch (op_info(node.op).traits.elementwise) {
    case Elementwise::kUnary:
      return true;
    case Elementwise::kBinary: {
      int activations = 0;
      for (TensorId t : node.inputs) activations += graph.tensor(t).is_constant() ? 0 : 1;
      return activations == 1;
    }
    case Elementwise::kNone:
      return false;
  }
  return false;
}

ew::Params elementwise_params(const Node& node) {
  return std::visit(
      [](const auto& a) -> ew::Params {
        if constexpr (requires { a.ew_params(); }) {
          return a.ew_params();
        } else {
          return {};
        }
      },
      node.attrs);
}

std::vector<Shape> node_output_shapes(const Node& node, const std::vector<Shape>& in) {
  return op_info(node.op).shape(node, in);
}

double node_flops(const Graph& graph, NodeId id) {
  const Node& n = graph.node(id);
  if (n.outputs.empty()) return 0.0;
  const OpInfo& info = op_info(n.op);
  if (info.flops) return info.flops(graph, n);
  return info.flops_per_output * ops::output_elements(graph, n);
}

double node_reduction(const Graph& graph, const Node& node) {
  const OpInfo& info = op_info(node.op);
  return info.reduction ? info.reduction(graph, node) : 1.0;
}

}  // namespace ios::ir
