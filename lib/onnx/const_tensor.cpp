#include "onnx/const_tensor.h"

#include <fmt/ranges.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "ir/precision.h"
#include "onnx/attributes.h"
#include "onnx/element_types.h"

namespace ios::onnx {
namespace {

using ::onnx::TensorProto;

template <typename T>
std::vector<T> from_raw(const std::string& raw, size_t count, const std::string& file,
                        const std::string& name) {
  // Compared by division: count * sizeof(T) can wrap for a hostile count.
  if (raw.size() % sizeof(T) != 0 || raw.size() / sizeof(T) != count) {
    user_error("{}: tensor '{}' has {} bytes of data for {} elements; the file is corrupt or "
               "truncated, re-export the model", file, name, raw.size(), count);
  }
  std::vector<T> out(count);
  if (count) std::memcpy(out.data(), raw.data(), raw.size());  // ONNX raw data is little-endian
  return out;
}

void check_count(size_t got, size_t want, const std::string& file, const std::string& name) {
  if (got != want) {
    user_error("{}: tensor '{}' has {} values for {} elements; the file is corrupt or truncated, "
               "re-export the model", file, name, got, want);
  }
}

void check_location(const TensorProto& proto, const std::string& file) {
  if (proto.data_location() == TensorProto::EXTERNAL) {
    user_error("{}: tensor '{}' keeps its data in an external file, which ios does not read; "
               "save the model with its weights inside the .onnx file", file, proto.name());
  }
}

// Bytes per element in raw_data; 0 for types ios does not read.
size_t element_size(int32_t dtype) {
  switch (dtype) {
    case TensorProto::DOUBLE:
    case TensorProto::INT64:
    case TensorProto::UINT64: return 8;
    case TensorProto::FLOAT:
    case TensorProto::INT32:
    case TensorProto::UINT32: return 4;
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16:
    case TensorProto::INT16:
    case TensorProto::UINT16: return 2;
    case TensorProto::INT8:
    case TensorProto::UINT8:
    case TensorProto::BOOL: return 1;
    default: return 0;
  }
}

// How many values the typed field that holds `dtype` without raw_data has.
int64_t typed_value_count(const TensorProto& proto) {
  switch (proto.data_type()) {
    case TensorProto::FLOAT: return proto.float_data_size();
    case TensorProto::DOUBLE: return proto.double_data_size();
    case TensorProto::INT64: return proto.int64_data_size();
    case TensorProto::UINT32:
    case TensorProto::UINT64: return proto.uint64_data_size();
    default: return proto.int32_data_size();
  }
}

}  // namespace

void check_tensor_proto(const TensorProto& proto, const std::string& file, std::string_view where) {
  const std::string& name = proto.name();
  int64_t elements = 1, nonzero = 1;
  for (int64_t d : proto.dims()) {
    if (d < 0) user_error("{}: {} '{}' has a negative dimension {}; the file is corrupt", file, where, name, d);
    elements *= d > 0 ? 1 : 0;
    if (d > 0 && (__builtin_mul_overflow(nonzero, d, &nonzero) || nonzero > kMaxTensorElements)) {
      user_error("{}: {} '{}' has dimensions {} (more than 2^34 elements); ios cannot run such a "
                 "tensor, the file is corrupt or not a CNN", file, where, name, fmt::join(proto.dims(), "x"));
    }
  }
  elements *= nonzero;
  const size_t size = element_size(proto.data_type());
  if (size == 0) {
    user_error("{}: {} '{}' has element type {}, which ios does not read; re-export the model in "
               "float32", file, where, name, type_name(proto.data_type()));
  }
  if (proto.data_location() == TensorProto::EXTERNAL || proto.external_data_size() > 0) {
    user_error("{}: {} '{}' keeps its data in an external file, which is not allowed here", file,
               where, name);
  }
  if (proto.has_segment()) {
    user_error("{}: {} '{}' is split into segments, which ios does not read; re-export the model",
               file, where, name);
  }
  if (proto.has_raw_data()) {
    const std::string& raw = proto.raw_data();
    if (raw.size() % size != 0 || raw.size() / size != static_cast<uint64_t>(elements) ||
        typed_value_count(proto) != 0) {
      user_error("{}: {} '{}' has {} bytes of data for {} elements of {}; the file is corrupt or "
                 "truncated, re-export the model", file, where, name, raw.size(), elements,
                 type_name(proto.data_type()));
    }
  } else if (typed_value_count(proto) != elements) {
    user_error("{}: {} '{}' has {} values for {} elements; the file is corrupt or truncated, "
               "re-export the model", file, where, name, typed_value_count(proto), elements);
  }
}

void for_each_tensor(::onnx::GraphProto& graph,
                     const std::function<void(TensorProto&, const std::string&)>& visit) {
  for (TensorProto& t : *graph.mutable_initializer()) visit(t, "initializer");
  for (::onnx::NodeProto& node : *graph.mutable_node()) {
    for (::onnx::AttributeProto& attr : *node.mutable_attribute()) {
      if (!attr.has_t() && attr.tensors_size() == 0) continue;
      const std::string where = fmt::format("attribute '{}' of node {}", attr.name(), node_label(node));
      if (attr.has_t()) visit(*attr.mutable_t(), where);
      for (TensorProto& t : *attr.mutable_tensors()) visit(t, where);
    }
  }
}

bool is_float_type(int32_t dtype) {
  return dtype == TensorProto::FLOAT || dtype == TensorProto::DOUBLE ||
         dtype == TensorProto::FLOAT16 || dtype == TensorProto::BFLOAT16;
}

std::string type_name(int32_t dtype) {
  switch (dtype) {
    case TensorProto::FLOAT: return "float32";
    case TensorProto::DOUBLE: return "float64";
    case TensorProto::FLOAT16: return "float16";
    case TensorProto::BFLOAT16: return "bfloat16";
    case TensorProto::INT64: return "int64";
    case TensorProto::INT32: return "int32";
    case TensorProto::INT16: return "int16";
    case TensorProto::INT8: return "int8";
    case TensorProto::UINT8: return "uint8";
    case TensorProto::UINT16: return "uint16";
    case TensorProto::UINT32: return "uint32";
    case TensorProto::UINT64: return "uint64";
    case TensorProto::BOOL: return "bool";
    case TensorProto::STRING: return "string";
    // Read as "element type 17 (float8 e4m3fn)" after "element type".
    case 14: return "14 (complex64)";
    case 15: return "15 (complex128)";
    case 17: return "17 (float8 e4m3fn)";
    case 18: return "18 (float8 e4m3fnuz)";
    case 19: return "19 (float8 e5m2)";
    case 20: return "20 (float8 e5m2fnuz)";
    case 21: return "21 (uint4)";
    case 22: return "22 (int4)";
    default: return fmt::format("{} (not an ONNX element type)", dtype);
  }
}

int64_t ConstTensor::saturating_int(double v) {
  constexpr double kLimit = 9223372036854775808.0;  // 2^63
  if (std::isnan(v)) return 0;
  if (v >= kLimit) return std::numeric_limits<int64_t>::max();
  if (v <= -kLimit) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

bool ConstTensor::is_float() const { return is_float_type(dtype); }

std::vector<int64_t> ConstTensor::ints() const {
  std::vector<int64_t> out(size());
  for (size_t k = 0; k < out.size(); ++k) out[k] = as_int(k);
  return out;
}

ConstTensor ConstTensor::of_ints(std::vector<int64_t> values, ir::Shape dims) {
  ConstTensor t;
  t.dtype = TensorProto::INT64;
  t.dims = std::move(dims);
  t.i = std::move(values);
  return t;
}

ConstTensor ConstTensor::of_floats(std::vector<double> values, ir::Shape dims, int32_t dtype) {
  ConstTensor t;
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.f = std::move(values);
  return t;
}

int64_t proto_num_elements(const TensorProto& proto) {
  // Dimensions come from the file: a product that overflows is rejected by
  // the caller (decode_tensor) as a negative count, never wrapped.
  int64_t n = 1;
  for (int64_t d : proto.dims()) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return -1;
  }
  return n;
}

ConstTensor decode_tensor(const TensorProto& proto, const std::string& file) {
  check_location(proto, file);
  for (int64_t d : proto.dims()) {
    if (d < 0) user_error("{}: tensor '{}' has a negative dimension", file, proto.name());
  }
  const int64_t elements = proto_num_elements(proto);
  if (elements < 0) {
    user_error("{}: tensor '{}' has dimensions whose product overflows; the file is corrupt", file,
               proto.name());
  }
  const auto count = static_cast<size_t>(elements);
  const std::string& name = proto.name();
  const bool raw = proto.has_raw_data();
  ConstTensor t;
  t.dtype = proto.data_type();
  t.dims.assign(proto.dims().begin(), proto.dims().end());
  auto widen_f = [&](const auto& values) {
    check_count(static_cast<size_t>(values.size()), count, file, name);
    t.f.assign(values.begin(), values.end());
  };
  auto widen_i = [&](const auto& values) {
    check_count(static_cast<size_t>(values.size()), count, file, name);
    t.i.assign(values.begin(), values.end());
  };
  switch (t.dtype) {
    case TensorProto::FLOAT:
      if (raw) widen_f(from_raw<float>(proto.raw_data(), count, file, name));
      else widen_f(proto.float_data());
      break;
    case TensorProto::DOUBLE:
      if (raw) widen_f(from_raw<double>(proto.raw_data(), count, file, name));
      else widen_f(proto.double_data());
      break;
    case TensorProto::INT64:
      if (raw) widen_i(from_raw<int64_t>(proto.raw_data(), count, file, name));
      else widen_i(proto.int64_data());
      break;
    case TensorProto::INT32:
      if (raw) widen_i(from_raw<int32_t>(proto.raw_data(), count, file, name));
      else widen_i(proto.int32_data());
      break;
    case TensorProto::INT16:
      if (raw) widen_i(from_raw<int16_t>(proto.raw_data(), count, file, name));
      else widen_i(proto.int32_data());
      break;
    case TensorProto::UINT16:
      if (raw) widen_i(from_raw<uint16_t>(proto.raw_data(), count, file, name));
      else widen_i(proto.int32_data());
      break;
    case TensorProto::INT8:
      if (raw) widen_i(from_raw<int8_t>(proto.raw_data(), count, file, name));
      else widen_i(proto.int32_data());
      break;
    case TensorProto::UINT8:
    case TensorProto::BOOL:
      if (raw) widen_i(from_raw<uint8_t>(proto.raw_data(), count, file, name));
      else widen_i(proto.int32_data());
      break;
    case TensorProto::UINT32:
      if (raw) widen_i(from_raw<uint32_t>(proto.raw_data(), count, file, name));
      else widen_i(proto.uint64_data());
      break;
    default:
      user_error("{}: tensor '{}' has element type {}, which ios cannot evaluate; re-export the "
                 "model in float32", file, name, type_name(t.dtype));
  }
  return t;
}

std::vector<float> decode_float_weights(const TensorProto& proto, const std::string& file) {
  check_location(proto, file);
  if (const auto type = ir::from_onnx_type(proto.data_type()); type && ir::is_half(*type)) {
    TensorProto widened = proto;
    widen_to_float(widened, file, "tensor");
    return decode_float_weights(widened, file);
  }
  if (proto.data_type() != TensorProto::FLOAT) {
    user_error(
        "{}: weight '{}' has element type {}; ios runs {} "
        "models only, re-export the model in one of them",
        file, proto.name(), type_name(proto.data_type()), ir::element_type_names_text());
  }
  const int64_t elements = proto_num_elements(proto);
  if (elements < 0) {
    user_error("{}: tensor '{}' has a negative dimension or dimensions whose product overflows; "
               "the file is corrupt", file, proto.name());
  }
  const auto count = static_cast<size_t>(elements);
  if (proto.has_raw_data()) return from_raw<float>(proto.raw_data(), count, file, proto.name());
  check_count(static_cast<size_t>(proto.float_data_size()), count, file, proto.name());
  return {proto.float_data().begin(), proto.float_data().end()};
}

void encode_tensor(const ConstTensor& value, TensorProto* proto) {
  proto->clear_dims();
  for (int64_t d : value.dims) proto->add_dims(d);
  proto->clear_raw_data();
  proto->clear_float_data();
  proto->clear_int64_data();
  proto->clear_int32_data();
  proto->clear_double_data();
  proto->clear_uint64_data();
  std::string raw;
  auto put = [&](auto v) {
    const char* p = reinterpret_cast<const char*>(&v);
    raw.append(p, sizeof(v));
  };
  int32_t dtype = value.dtype;
  switch (dtype) {
    case TensorProto::FLOAT: for (double v : value.f) put(static_cast<float>(v)); break;
    case TensorProto::DOUBLE: for (double v : value.f) put(v); break;
    case TensorProto::INT32: for (int64_t v : value.i) put(static_cast<int32_t>(v)); break;
    case TensorProto::BOOL:
    case TensorProto::UINT8: for (int64_t v : value.i) put(static_cast<uint8_t>(v)); break;
    case TensorProto::INT8: for (int64_t v : value.i) put(static_cast<int8_t>(v)); break;
    default:
      // Other integer types are widened to int64; float16/bfloat16 to float32.
      if (value.is_float()) {
        dtype = TensorProto::FLOAT;
        for (double v : value.f) put(static_cast<float>(v));
      } else {
        dtype = TensorProto::INT64;
        for (int64_t v : value.i) put(v);
      }
  }
  proto->set_data_type(dtype);
  proto->set_raw_data(std::move(raw));
}

}  // namespace ios::onnx
