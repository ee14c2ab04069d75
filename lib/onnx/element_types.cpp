#include "onnx/element_types.h"

#include <cstring>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/json_limits.h"
#include "ir/graph.h"
#include "ir/op_info.h"
#include "onnx/attributes.h"
#include "onnx/const_tensor.h"

namespace ios::onnx {
namespace {

using ::onnx::TensorProto;

// The element-type table's ONNX ids are TensorProto's.
static_assert(ir::info(ir::ElementType::kFloat32).onnx_type == TensorProto::FLOAT);
static_assert(ir::info(ir::ElementType::kFloat16).onnx_type == TensorProto::FLOAT16);
static_assert(ir::info(ir::ElementType::kBFloat16).onnx_type == TensorProto::BFLOAT16);

// A type of the table narrower than float32, which the importer stores as
// float32 for ONNX's checker and shape inference.
bool is_16bit(int32_t dtype) {
  const auto type = ir::from_onnx_type(dtype);
  return type && ir::is_half(*type);
}

ir::ElementType element_type_of(int32_t dtype) {
  const auto type = ir::from_onnx_type(dtype);
  IOS_ASSERT(type.has_value(), "element type {} is not in the table", dtype);
  return *type;
}

}  // namespace

void widen_to_float(TensorProto& t, const std::string& path, std::string_view where) {
  const int64_t count = proto_num_elements(t);
  if (count < 0) {
    user_error(
        "{}: {} '{}' has a negative dimension or dimensions whose product overflows; the file is "
        "corrupt",
        path, where, t.name());
  }
  const ir::ElementType type = element_type_of(t.data_type());
  const auto size = static_cast<size_t>(ir::bytes_of(type));
  const auto elements = static_cast<size_t>(count);
  std::string raw(elements * sizeof(float), '\0');
  auto put = [&](size_t k, float v) { std::memcpy(raw.data() + k * sizeof(float), &v, sizeof v); };
  if (t.has_raw_data()) {
    if (t.raw_data().size() != elements * size) {
      user_error(
          "{}: {} '{}' has {} bytes of data for {} elements of {}; the file is corrupt or "
          "truncated",
          path, where, t.name(), t.raw_data().size(), count, type_name(t.data_type()));
    }
    for (size_t k = 0; k < elements; ++k) put(k, ir::load_element(t.raw_data().data() + k * size, type));
  } else {
    if (t.int32_data_size() != count) {
      user_error("{}: {} '{}' has {} values for {} elements; the file is corrupt or truncated",
                 path, where, t.name(), t.int32_data_size(), count);
    }
    // ONNX keeps a narrow type's bit pattern in the low bytes of each int32.
    const uint32_t mask = size >= 4 ? ~0u : (1u << (8 * size)) - 1u;
    for (size_t k = 0; k < elements; ++k)
      put(k, ir::from_bits(static_cast<uint32_t>(t.int32_data(static_cast<int>(k))) & mask, type));
  }
  t.clear_int32_data();
  t.set_raw_data(std::move(raw));
  t.set_data_type(TensorProto::FLOAT);
}

namespace {

void widen_value_info(::onnx::ValueInfoProto& info, DeclaredTypes* declared) {
  if (!info.type().has_tensor_type()) return;
  auto& tensor = *info.mutable_type()->mutable_tensor_type();
  if (!is_16bit(tensor.elem_type())) return;
  if (declared) (*declared)[info.name()] = element_type_of(tensor.elem_type());
  tensor.set_elem_type(TensorProto::FLOAT);
}

}  // namespace

DeclaredTypes store_16bit_as_float(::onnx::ModelProto& model, const std::string& path) {
  DeclaredTypes declared;
  auto& graph = *model.mutable_graph();
  for (TensorProto& t : *graph.mutable_initializer()) {
    // float32 weights too: check_declared_types holds their readers to them.
    if (t.data_type() == TensorProto::FLOAT) declared[t.name()] = ir::ElementType::kFloat32;
    if (!is_16bit(t.data_type())) continue;
    declared[t.name()] = element_type_of(t.data_type());
    widen_to_float(t, path, "initializer");
  }
  for (auto& node : *graph.mutable_node()) {
    for (auto& attr : *node.mutable_attribute()) {
      // Constant's value, ConstantOfShape's fill value: the outputs take its type.
      if (attr.has_t() && is_16bit(attr.t().data_type())) {
        for (const std::string& out : node.output())
          declared[out] = element_type_of(attr.t().data_type());
        widen_to_float(*attr.mutable_t(), path,
                       fmt::format("attribute '{}' of node {}", attr.name(), node_label(node)));
      }
    }
    if (node.op_type() == "Cast" && node.domain().empty() && node.output_size() == 1) {
      for (auto& attr : *node.mutable_attribute()) {
        if (attr.name() != "to") continue;
        const auto to = static_cast<int32_t>(attr.i());
        if (is_16bit(to)) {
          declared[node.output(0)] = element_type_of(to);
          attr.set_i(TensorProto::FLOAT);
        } else if (to == TensorProto::FLOAT) {
          declared[node.output(0)] = ir::ElementType::kFloat32;
        }
      }
    }
  }
  for (auto& info : *graph.mutable_input()) widen_value_info(info, &declared);
  for (auto& info : *graph.mutable_output()) {
    // float32 outputs too: check_declared_types compares them with the types computed.
    if (info.type().has_tensor_type() && info.type().tensor_type().elem_type() == TensorProto::FLOAT) {
      declared[info.name()] = ir::ElementType::kFloat32;
    }
    widen_value_info(info, &declared);
  }
  for (auto& info : *graph.mutable_value_info()) widen_value_info(info, nullptr);
  return declared;
}

void check_declared_types(const ir::Graph& graph, const DeclaredTypes& declared,
                          const std::string& path) {
  for (const ir::Node& node : graph.nodes()) {
    switch (node.op) {
      case ir::OpKind::kConv:
      case ir::OpKind::kConvTranspose:
      case ir::OpKind::kGemm:
      case ir::OpKind::kMatMul:
      case ir::OpKind::kAdd:
      case ir::OpKind::kSub:
      case ir::OpKind::kMul:
      case ir::OpKind::kDiv:
      case ir::OpKind::kPRelu:
      case ir::OpKind::kMax:
      case ir::OpKind::kMin:
      case ir::OpKind::kConcat:
        break;
      default:
        continue;  // operators whose inputs may differ in type (Pow, BatchNormalization, ...)
    }
    const ir::ElementType computes = graph.tensor(node.outputs.at(0)).type;
    for (ir::TensorId t : node.inputs) {
      if (t == ir::kNone || !graph.tensor(t).is_constant()) continue;
      // A weight read at two types has a copy per further type, named
      // "<weight>/<type>" (ir::assign_element_types): the file's is the weight's.
      std::string name = graph.tensor(t).name;
      const std::string suffix = fmt::format("/{}", ir::type_name(graph.tensor(t).type));
      if (!declared.count(name) && name.size() > suffix.size() && name.ends_with(suffix)) {
        name.resize(name.size() - suffix.size());
      }
      const auto it = declared.find(name);
      if (it == declared.end() || it->second == computes) continue;
      user_error(
          "{}: node {} ({}) reads the weight {} of type {} beside a {} input; ONNX requires one "
          "element type for both (the model breaks ONNX's type rules): store the weight as {} or "
          "put a Cast in front of the node",
          path, quote_excerpt(node.name), ir::op_name(node.op), quote_excerpt(name),
          ir::type_name(it->second), ir::type_name(computes), ir::type_name(computes));
    }
  }
  for (ir::TensorId t : graph.outputs()) {
    const ir::Tensor& out = graph.tensor(t);
    const auto it = declared.find(out.name);
    if (it == declared.end() || it->second == out.type) continue;
    const std::string producer =
        out.producer == ir::kNone ? std::string("it is a graph input")
                                  : fmt::format("node {} ({}) computes it as {}",
                                                quote_excerpt(graph.node(out.producer).name),
                                                ir::op_name(graph.node(out.producer).op), ir::type_name(out.type));
    user_error(
        "{}: graph output {} is declared {} but {}{}; declare it {} or end the graph with a Cast "
        "to {}",
        path, quote_excerpt(out.name), ir::type_name(it->second), producer,
        out.producer == ir::kNone ? fmt::format(" of type {}", ir::type_name(out.type)) : "",
        ir::type_name(out.type), ir::type_name(it->second));
  }
}

}  // namespace ios::onnx
