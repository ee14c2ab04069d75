#include "ir/half_conversion.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <unordered_map>

#include "core/error.h"
#include "core/json_limits.h"
#include "ir/element_types.h"
#include "ir/op_info.h"

namespace ios::ir {

bool kept_in_float32(OpKind op) {
  switch (op) {
    case OpKind::kLayerNorm:
    case OpKind::kBatchNorm:
    case OpKind::kSoftmax:
    case OpKind::kLogSoftmax:
    case OpKind::kReduceMean:
    case OpKind::kReduceSum:
    case OpKind::kReduceL1:
    case OpKind::kReduceL2:
    case OpKind::kReduceSumSquare:
    case OpKind::kReduceLogSumExp:
    case OpKind::kReduceProd:
    case OpKind::kExp:
    case OpKind::kPow:
      return true;
    default:
      return false;
  }
}

std::vector<std::string> parse_keep_fp32(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    user_error(
        "--keep-fp32 {}: {}; give node names or operator types separated by commas (a comma in a "
        "name as \\, and a backslash as \\\\)",
        quote_excerpt(text), why);
  };
  std::vector<std::string> names(1);
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ',') {
      if (names.back().empty()) bad(fmt::format("entry {} is empty", names.size()));
      names.emplace_back();
    } else if (c == '\\') {
      if (i + 1 == text.size() || (text[i + 1] != ',' && text[i + 1] != '\\'))
        bad(fmt::format("a backslash at byte {} escapes neither a comma nor a backslash", i));
      names.back() += text[++i];
    } else {
      names.back() += c;
    }
  }
  if (names.back().empty()) bad(fmt::format("entry {} is empty", names.size()));
  return names;
}

std::string keep_fp32_argument(std::string_view name, std::string_view op_type) {
  const bool typable =
      !name.empty() && name.size() <= 200 &&
      std::none_of(name.begin(), name.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
      });
  if (!typable) return std::string(op_type);
  std::string escaped;
  bool plain = true;  // nothing a shell splits, expands or quotes
  for (const char c : name) {
    if (c == ',' || c == '\\') escaped += '\\';
    escaped += c;
    plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || std::string_view("_./:-+=@").find(c) !=
                                                                           std::string_view::npos);
  }
  if (plain) return escaped;
  std::string quoted = "'";
  for (const char c : escaped) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

ConversionStats convert_to_half(Graph& graph, const ConversionOptions& options,
                                const std::string& source) {
  IOS_ASSERT(is_half(options.type), "conversion to {}", type_name(options.type));
  for (const Tensor& t : graph.tensors()) {
    IOS_ASSERT(!is_half(t.type), "tensor '{}' is already {}", t.name, type_name(t.type));
  }
  // Which entries of --keep-fp32 name something.
  std::set<std::string> names, ops;
  for (const Node& n : graph.nodes()) {
    names.insert(n.name);
    ops.insert(std::string(op_name(n.op)));
  }
  const std::set<std::string> keep(options.keep_fp32.begin(), options.keep_fp32.end());
  for (const std::string& k : options.keep_fp32) {
    if (k.empty() || (!names.count(k) && !ops.count(k))) {
      user_error(
          "{}: {} {} names no node and no operator type of the model (after import: "
          "BatchNormalization folded into convolutions, LayerNorm, GELU and Mish chains fused); "
          "{}",
          source, options.keep_fp32_origin, quote_excerpt(k),
          options.keep_fp32_origin == "--keep-fp32"
              ? "give node names or operator types such as Softmax"
              : "the schedule was made for another model or edited; make it again with "
                "ios-optimize");
    }
  }

  ConversionStats stats;
  const size_t num_nodes = graph.num_nodes();
  std::vector<ElementType> node_type(num_nodes, options.type);
  for (size_t n = 0; n < num_nodes; ++n) {
    const Node& node = graph.node(static_cast<NodeId>(n));
    if (kept_in_float32(node.op) || keep.count(node.name) ||
        keep.count(std::string(op_name(node.op)))) {
      node_type[n] = ElementType::kFloat32;
      ++stats.float32_nodes;
    } else {
      ++stats.half_nodes;
    }
  }
  // The type each activation has before Casts: its producer's; graph inputs
  // are float32 unless half_io.
  auto produced_type = [&](TensorId t) {
    const NodeId p = graph.tensor(t).producer;
    if (p == kNone) return options.half_io ? options.type : ElementType::kFloat32;
    return node_type[static_cast<size_t>(p)];
  };

  // One Cast per (tensor, target) where a reader computes in another type.
  std::map<std::pair<TensorId, ElementType>, TensorId> casts;
  auto cast_of = [&](TensorId from, ElementType to) {
    auto [it, inserted] = casts.emplace(std::make_pair(from, to), kNone);
    if (!inserted) return it->second;
    Tensor out;
    out.name = fmt::format("{}/to_{}", graph.tensor(from).name, is_half(to) ? "half" : "float32");
    out.shape = graph.tensor(from).shape;
    const TensorId id = graph.add_tensor(std::move(out));
    Node cast;
    cast.name = graph.tensor(id).name;
    cast.op = OpKind::kCast;
    cast.inputs = {from};
    cast.outputs = {id};
    cast.attrs = CastAttrs{to};
    graph.add_node(std::move(cast));
    ++stats.casts;
    it->second = id;
    return id;
  };
  for (size_t n = 0; n < num_nodes; ++n) {
    const auto id = static_cast<NodeId>(n);
    for (size_t i = 0; i < graph.node(id).inputs.size(); ++i) {
      const TensorId in = graph.node(id).inputs[i];
      if (in == kNone || graph.tensor(in).is_constant()) continue;
      if (produced_type(in) != node_type[n]) graph.node(id).inputs[i] = cast_of(in, node_type[n]);
    }
  }
  // Graph outputs in the type asked for: the output keeps its name, its
  // producer writes a renamed tensor that a Cast reads.
  const ElementType io = options.half_io ? options.type : ElementType::kFloat32;
  for (TensorId& out : graph.outputs()) {
    if (graph.tensor(out).producer == kNone || produced_type(out) == io) continue;
    const std::string name = graph.tensor(out).name;
    graph.tensor(out).name =
        fmt::format("{}/{}", name, is_half(produced_type(out)) ? "half" : "float32");
    const TensorId cast = cast_of(out, io);
    graph.tensor(cast).name = name;
    graph.node(graph.tensor(cast).producer).name = name;
    // Other readers of the renamed tensor keep reading it.
    out = cast;
  }
  graph.relink();
  graph.compact(std::vector<bool>(graph.num_nodes(), false));  // re-sorts topologically

  std::unordered_map<std::string, ElementType> declared;
  if (options.half_io) {
    for (TensorId t : graph.inputs()) declared[graph.tensor(t).name] = options.type;
  }
  assign_element_types(graph, declared, source);
  return stats;
}

}  // namespace ios::ir
