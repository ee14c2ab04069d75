#include "onnx/element_types.h"

#include <cstring>
#include <string_view>
#include <vector>

#include "core/error.h"
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
  for (auto& info : *graph.mutable_output()) widen_value_info(info, &declared);
  for (auto& info : *graph.mutable_value_info()) widen_value_info(info, nullptr);
  return declared;
}

}  // namespace ios::onnx
