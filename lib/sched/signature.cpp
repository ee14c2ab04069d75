#include "sched/signature.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>
#include <ranges>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>

#include "core/error.h"
#include "ir/op_info.h"

namespace ios::sched {
namespace {

// One attribute value as stage signatures print it (ir::FieldText).
template <typename T>
std::string field_text(const T& value, ir::FieldText text) {
  if constexpr (std::is_enum_v<T>) {
    return fmt::format("{}", static_cast<int>(value));
  } else if constexpr (std::ranges::range<T>) {
    if (text == ir::FieldText::kList) return fmt::format("{}", fmt::join(value, ","));
    return std::ranges::empty(value) ? std::string("scalar")
                                     : fmt::format("{}", fmt::join(value, "x"));
  } else {
    return fmt::format("{}", value);
  }
}

// "name=value,..." over the fields of a node's attribute struct. Gelu keeps
// the text of the signatures written before the field lists existed: its
// form alone ("tanh" or "erf"), not "tanh=true".
std::string attrs_text(const ir::Attrs& attrs) {
  return std::visit(
      []<typename A>(const A& a) {
        std::string out;
        if constexpr (std::is_same_v<A, ir::GeluAttrs>) {
          out = a.tanh ? "tanh" : "erf";
        } else if constexpr (!std::is_same_v<A, std::monostate>) {
          ir::for_each_field(a, [&](std::string_view name, const auto& value, ir::FieldText text) {
            out += fmt::format("{}{}={}", out.empty() ? "" : ",", name, field_text(value, text));
          });
        }
        return out;
      },
      attrs);
}

// A tensor's shape, and its element type when that is not float32
// ("1x64x56x56:fp16", "64x64x3x3:bf16"): float32 tensors read as they did
// before the IR had other types, so the profile databases of float32 models
// stay valid, and a 16-bit stage never shares a key with its float32 twin.
std::string tensor_text(const ir::Tensor& tensor) {
  std::string out = ir::to_string(tensor.shape);
  if (ir::is_half(tensor.type)) out += std::string(":") + ir::short_name(tensor.type);
  return out;
}

// A group rendered as text pieces and references to tensors from outside the
// group. External tensors are numbered only after the groups are sorted, so
// the sort key must not depend on their identity.
struct GroupText {
  std::vector<std::string> pieces;  // pieces.size() == externals.size() + 1
  std::vector<ir::TensorId> externals;
  std::string key;  // pieces joined with "x" for each external

  void text(const std::string& s) { pieces.back() += s; }
  void external(ir::TensorId t) {
    externals.push_back(t);
    pieces.emplace_back();
  }
};

GroupText render_group(const UnitGraph& graph, const std::vector<UnitId>& group) {
  const ir::Graph& g = *graph.ir();
  GroupText out;
  out.pieces.emplace_back();
  // Where each tensor made inside the group comes from: "u<unit>.n<node>.<output>".
  // A map, not a list: one unit may hold a chain of 100,000 element-wise nodes.
  std::unordered_map<ir::TensorId, std::string> local;
  auto local_name = [&](ir::TensorId t) -> const std::string* {
    const auto it = local.find(t);
    return it == local.end() ? nullptr : &it->second;
  };
  for (size_t ui = 0; ui < group.size(); ++ui) {
    const Unit& unit = graph.unit(group[ui]);
    out.text(fmt::format("{}{}{{", ui ? ";" : "", unit_kind_name(unit.kind)));
    for (size_t ni = 0; ni < unit.nodes.size(); ++ni) {
      const ir::Node& node = g.node(unit.nodes[ni]);
      out.text(
          fmt::format("{}{}({})[", ni ? " " : "", ir::op_name(node.op), attrs_text(node.attrs)));
      for (size_t ii = 0; ii < node.inputs.size(); ++ii) {
        const ir::TensorId t = node.inputs[ii];
        const ir::Tensor& tensor = g.tensor(t);
        if (ii) out.text(",");
        if (tensor.is_constant()) {
          out.text("w:" + tensor_text(tensor));
        } else if (const std::string* name = local_name(t)) {
          out.text(*name);
        } else {
          out.external(t);
          out.text(":" + tensor_text(tensor));
        }
      }
      out.text("]->[");
      for (size_t oi = 0; oi < node.outputs.size(); ++oi) {
        const ir::TensorId t = node.outputs[oi];
        const bool leaves =
            std::find(unit.outputs.begin(), unit.outputs.end(), t) != unit.outputs.end();
        out.text(fmt::format("{}{}{}", oi ? "," : "", tensor_text(g.tensor(t)), leaves ? "*" : ""));
        local.emplace(t, fmt::format("u{}.n{}.{}", ui, ni, oi));
      }
      out.text("]");
    }
    out.text("}");
  }
  for (size_t i = 0; i < out.pieces.size(); ++i) out.key += (i ? "x" : "") + out.pieces[i];
  return out;
}

// Appends `group`'s text to `out`, numbering its external tensors in order
// of first appearance across everything appended with the same `numbered`.
void append_numbered(const GroupText& group, std::vector<ir::TensorId>& numbered,
                     std::string& out) {
  for (size_t i = 0; i < group.pieces.size(); ++i) {
    out += group.pieces[i];
    if (i < group.externals.size()) {
      const auto it = std::find(numbered.begin(), numbered.end(), group.externals[i]);
      const auto index = static_cast<size_t>(it - numbered.begin());
      if (it == numbered.end()) numbered.push_back(group.externals[i]);
      out += fmt::format("x{}", index);
    }
  }
}

}  // namespace

std::string stage_signature(const UnitGraph& graph, const Stage& stage) {
  IOS_ASSERT(graph.ir() != nullptr, "stage_signature needs a unit graph formed from an IR graph");
  std::vector<GroupText> groups;
  groups.reserve(stage.groups.size());
  for (const auto& group : stage.groups) groups.push_back(render_group(graph, group));
  // Concurrent groups are unordered; a merge stage has one group whose order
  // fixes the output channel order and is kept.
  std::stable_sort(groups.begin(), groups.end(),
                   [](const GroupText& a, const GroupText& b) { return a.key < b.key; });
  std::string out(strategy_name(stage.strategy));
  std::vector<ir::TensorId> numbered;  // external tensors in order of first appearance
  for (const GroupText& group : groups) {
    out += "|";
    append_numbered(group, numbered, out);
  }
  return out;
}

std::string block_signature(const UnitGraph& graph, const Block& block) {
  IOS_ASSERT(graph.ir() != nullptr, "block_signature needs a unit graph formed from an IR graph");
  std::vector<UnitId> units(static_cast<size_t>(block.size()));
  std::iota(units.begin(), units.end(), block.begin);
  std::string out = "block|";
  std::vector<ir::TensorId> numbered;
  append_numbered(render_group(graph, units), numbered, out);
  return out;
}

}  // namespace ios::sched
