#include "onnx/attributes.h"

#include <fmt/format.h>

#include "core/json_limits.h"

namespace ios::onnx {

const ::onnx::AttributeProto* find_attribute(const ::onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t attr_int(const ::onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  const auto* a = find_attribute(node, name);
  return a ? a->i() : fallback;
}

float attr_float(const ::onnx::NodeProto& node, const std::string& name, float fallback) {
  const auto* a = find_attribute(node, name);
  return a ? a->f() : fallback;
}

std::string attr_string(const ::onnx::NodeProto& node, const std::string& name,
                        const std::string& fallback) {
  const auto* a = find_attribute(node, name);
  return a ? a->s() : fallback;
}

std::optional<std::vector<int64_t>> attr_ints(const ::onnx::NodeProto& node, const std::string& name) {
  const auto* a = find_attribute(node, name);
  if (!a) return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::optional<std::vector<float>> attr_floats(const ::onnx::NodeProto& node, const std::string& name) {
  const auto* a = find_attribute(node, name);
  if (!a) return std::nullopt;
  return std::vector<float>(a->floats().begin(), a->floats().end());
}

// Names and op types come from the file: a 50 MB name or one holding a NUL
// or newline must not make the message long or cut it.
std::string node_label(const ::onnx::NodeProto& node) {
  const std::string quoted_op = quote_excerpt(node.op_type());
  // Plain op types as before ("Conv"); odd ones quoted, escaped and cut.
  const std::string op = quoted_op.size() == node.op_type().size() + 2 ? node.op_type() : quoted_op;
  if (!node.name().empty()) return fmt::format("{} ({})", quote_excerpt(node.name()), op);
  if (node.output_size() > 0) {
    return fmt::format("making {} ({})", quote_excerpt(node.output(0)), op);
  }
  return fmt::format("(unnamed {})", op);
}

std::string input_or_empty(const ::onnx::NodeProto& node, int index) {
  return index < node.input_size() ? node.input(index) : std::string();
}

}  // namespace ios::onnx
