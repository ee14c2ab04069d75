// Constant tensors decoded from ONNX TensorProtos, for import-time evaluation
// (shape arithmetic, attribute inputs such as Reshape targets) and weights.
// Internal to lib/onnx: the only header besides the .cpp files that sees ONNX.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace ios::onnx {

// A small constant. Floating types are held as double, integer and bool
// types as int64 (exact for every shape value, INT64_MAX slice ends included).
struct ConstTensor {
  int32_t dtype = ::onnx::TensorProto::FLOAT;  // TensorProto_DataType
  ir::Shape dims;
  std::vector<double> f;   // when is_float()
  std::vector<int64_t> i;  // otherwise

  bool is_float() const;
  size_t size() const { return is_float() ? f.size() : i.size(); }
  double as_double(size_t k) const { return is_float() ? f[k] : static_cast<double>(i[k]); }
  // Floating values are truncated toward zero and saturate at the int64
  // range (NaN gives 0): a hostile inf never reaches an undefined conversion.
  int64_t as_int(size_t k) const { return is_float() ? saturating_int(f[k]) : i[k]; }
  static int64_t saturating_int(double v);
  std::vector<int64_t> ints() const;  // every element as int64

  static ConstTensor of_ints(std::vector<int64_t> values, ir::Shape dims);
  static ConstTensor of_floats(std::vector<double> values, ir::Shape dims, int32_t dtype);
};

bool is_float_type(int32_t dtype);
std::string type_name(int32_t dtype);  // "float32", "int64", ...

// Decodes raw_data or the typed fields. Throws UserError naming `file` and the
// tensor on external data, unsupported types or a data size that does not
// match the dims (a corrupt or truncated file).
ConstTensor decode_tensor(const ::onnx::TensorProto& proto, const std::string& file);

// Float32 weights straight from the proto (no double round trip).
std::vector<float> decode_float_weights(const ::onnx::TensorProto& proto, const std::string& file);

// Writes `value` into `proto` (name untouched), raw little-endian data.
void encode_tensor(const ConstTensor& value, ::onnx::TensorProto* proto);

// Number of elements the dims of `proto` describe; -1 when a dimension is
// negative or the product overflows.
int64_t proto_num_elements(const ::onnx::TensorProto& proto);

// Tensors with more elements than this are refused at import: ios runs
// nothing that large, and no element or byte count derived from a checked
// tensor can overflow.
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 34;

// Checks a tensor from the file before anything reads it (ONNX's checker and
// shape inference included): non-negative dimensions whose product, zeros
// left out, is at most kMaxTensorElements; a supported element type; data
// inside the file (external data is resolved first, external_data.h) whose
// size matches the dimensions exactly. Throws UserError naming `file`, the
// tensor and `where` (e.g. "initializer", "attribute 'value' of node n").
void check_tensor_proto(const ::onnx::TensorProto& proto, const std::string& file,
                        std::string_view where);

// Calls `visit` on every tensor stored in the graph: initializers and the
// tensor attributes of nodes (Constant's value, ConstantOfShape's value),
// with a description such as "initializer" or "attribute 'value' of node n".
void for_each_tensor(::onnx::GraphProto& graph,
                     const std::function<void(::onnx::TensorProto&, const std::string&)>& visit);

}  // namespace ios::onnx
