// Constant tensors decoded from ONNX TensorProtos, for import-time evaluation
// (shape arithmetic, attribute inputs such as Reshape targets) and weights.
// Internal to lib/onnx: the only header besides the .cpp files that sees ONNX.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
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
  int64_t as_int(size_t k) const { return is_float() ? static_cast<int64_t>(f[k]) : i[k]; }
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

// Number of elements the dims of `proto` describe.
int64_t proto_num_elements(const ::onnx::TensorProto& proto);

}  // namespace ios::onnx
