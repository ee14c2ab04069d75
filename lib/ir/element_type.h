// The element types a tensor of the IR can hold: one table, which every
// part of ios reads for a type's name, size, ONNX id, range and rounding,
// and the rounding from float to each type, written once for every backend.
//
// Every tensor computes in float32 registers and is stored in its element
// type: float32, or a 16-bit type whose values are the float32 values rounded
// to nearest, ties to even (IEEE 754 binary16, or bfloat16: float32's upper 16
// bits). Weights keep float values in the IR that are exactly representable in
// their tensor's type, so a value read back from a 16-bit tensor is its float.
// The CPU reference rounds with these functions wherever the CUDA kernels
// store a 16-bit value, which is what makes it a reference for them.
//
// A type is one line of IOS_ELEMENT_TYPES. What differs between types as
// code rather than as a value (the bit encodings below, the CUDA storage
// types, the device profile's tensor-core peaks) is a switch over
// ElementType without a default, so that a new line fails to compile (-Wswitch,
// an error under -Werror) wherever it is not handled yet; the CUDA
// libraries' names of each type are a table of their own beside the CUDA
// code (cuda/cuda_types.h), held to this one's length and order by
// static_asserts. The build's test "element types: a fourth type is refused
// until every switch handles it" compiles this header with one more line
// (IOS_TEST_EXTRA_ELEMENT_TYPE) and expects the compiler to refuse it.
//
// Like ir/elementwise.h, this header needs nothing but <cstdint>, <cstring>
// and <optional>, so device code includes it too.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>

#if defined(__CUDACC__)
#define IOS_TYPE_HOST_DEVICE __host__ __device__
#else
#define IOS_TYPE_HOST_DEVICE
#endif

// X(enumerator, ONNX name, short name, bytes, ONNX TensorProto data type,
//   mantissa bits (the stored fraction: the rounding's relative step is
//   2^-bits), largest finite value). In enum order; float32 first.
//   - the ONNX name is what messages and the importer print;
//   - the short name is what --precision, the schedule file and stage
//     signatures write for a 16-bit type (float32's "fp32" is also the
//     strict math mode's name, ir/precision.h);
//   - the ONNX data type is onnx::TensorProto's number (lib/onnx checks it
//     against ONNX's enum).
#define IOS_ELEMENT_TYPES_SHIPPED(X)                                  \
  X(kFloat32, "float32", "fp32", 4, 1, 23, 3.4028234663852886e38f)    \
  X(kFloat16, "float16", "fp16", 2, 10, 10, 65504.0f)                 \
  X(kBFloat16, "bfloat16", "bf16", 2, 16, 7, 3.3895313892515355e38f)

#if defined(IOS_TEST_EXTRA_ELEMENT_TYPE)
// Only in the compile test (test/ir/element_type_switches.cpp): an 8-bit
// type that nothing handles yet.
#define IOS_ELEMENT_TYPES(X) \
  IOS_ELEMENT_TYPES_SHIPPED(X) X(kFloat8E4M3, "float8e4m3fn", "fp8", 1, 17, 3, 448.0f)
#else
#define IOS_ELEMENT_TYPES(X) IOS_ELEMENT_TYPES_SHIPPED(X)
#endif

namespace ios::ir {

enum class ElementType : uint8_t {
#define IOS_ELEMENT_TYPE_ENUMERATOR(e, ...) e,
  IOS_ELEMENT_TYPES(IOS_ELEMENT_TYPE_ENUMERATOR)
#undef IOS_ELEMENT_TYPE_ENUMERATOR
};

// One line of the table.
struct ElementTypeInfo {
  ElementType type;
  const char* name;        // ONNX's: "float32", "float16", "bfloat16"
  const char* short_name;  // "fp32", "fp16", "bf16"
  int bytes;               // one element in memory
  int32_t onnx_type;       // onnx::TensorProto::DataType
  int mantissa_bits;       // stored fraction bits: round to nearest keeps 2^-(bits+1) relative
  float max_finite;        // the largest finite value; weights beyond it do not convert
};

inline constexpr ElementTypeInfo kElementTypes[] = {
#define IOS_ELEMENT_TYPE_LINE(e, name, short_name, bytes, onnx, mantissa, max) \
  {ElementType::e, name, short_name, bytes, onnx, mantissa, max},
    IOS_ELEMENT_TYPES(IOS_ELEMENT_TYPE_LINE)
#undef IOS_ELEMENT_TYPE_LINE
};

inline constexpr int kNumElementTypes = static_cast<int>(sizeof kElementTypes / sizeof kElementTypes[0]);

constexpr const ElementTypeInfo& info(ElementType type) {
  return kElementTypes[static_cast<int>(type)];
}

// Bytes one element takes in memory.
constexpr int bytes_of(ElementType type) { return info(type).bytes; }

// A narrower type than float32, which ios converts to with Casts
// (ir/half_conversion.h): float16 and bfloat16.
constexpr bool is_half(ElementType type) { return type != ElementType::kFloat32; }

// ONNX's names: "float32", "float16", "bfloat16".
constexpr const char* type_name(ElementType type) { return info(type).name; }

// The options' and the schedule file's: "fp32", "fp16", "bf16".
constexpr const char* short_name(ElementType type) { return info(type).short_name; }

// The largest finite value of `type`: weights beyond it do not convert.
constexpr float max_finite(ElementType type) { return info(type).max_finite; }

// The distance from 1 to the next value of `type` (std::numeric_limits'
// epsilon): twice the largest relative rounding error.
constexpr double epsilon(ElementType type) {
  return 1.0 / static_cast<double>(int64_t{1} << info(type).mantissa_bits);
}

// The type ONNX numbers `onnx_type` (TensorProto::DataType), if ios has it.
constexpr std::optional<ElementType> from_onnx_type(int32_t onnx_type) {
  for (const ElementTypeInfo& t : kElementTypes) {
    if (t.onnx_type == onnx_type) return t.type;
  }
  return std::nullopt;
}

namespace detail {

IOS_TYPE_HOST_DEVICE inline uint32_t float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
#endif
}

IOS_TYPE_HOST_DEVICE inline float bits_float(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
#endif
}

}  // namespace detail

// --- bfloat16: float32's sign, exponent and top 7 mantissa bits. ----------

IOS_TYPE_HOST_DEVICE inline uint16_t float_to_bfloat16_bits(float x) {
  const uint32_t bits = detail::float_bits(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((bits >> 16) | 0x40u);     // quiet NaN
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);  // to nearest, ties to even
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

IOS_TYPE_HOST_DEVICE inline float bfloat16_bits_to_float(uint16_t bits) {
  return detail::bits_float(static_cast<uint32_t>(bits) << 16);
}

// --- float16: 1 sign, 5 exponent, 10 mantissa bits; max 65504. -------------

IOS_TYPE_HOST_DEVICE inline uint16_t float_to_half_bits(float x) {
  const uint32_t bits = detail::float_bits(x);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (magnitude >= 0x477ff000u)
    return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (magnitude < 0x38800000u) {
    // Below 2^-14: a subnormal half, the value in units of 2^-24, rounded.
    if (magnitude < 0x33000000u)
      return sign;  // at most 2^-25: rounds to zero (a tie goes to the even 0)
    const uint32_t exponent = magnitude >> 23;
    const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - exponent;  // 14..24: the mantissa's bits below 2^-24
    uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1u);
    const uint32_t midpoint = 1u << (shift - 1u);
    if (rest > midpoint || (rest == midpoint && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  // Normal: rebias the exponent (127 -> 15), round the 13 dropped bits.
  const uint32_t rebiased = magnitude - (112u << 23);
  const uint32_t rounding = 0xfffu + ((rebiased >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rebiased + rounding) >> 13));
}

IOS_TYPE_HOST_DEVICE inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1fu)
    return detail::bits_float(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float.
    const float value = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign ? -value : value;
  }
  return detail::bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// --- Any type: the encodings, by type. ------------------------------------

// x rounded to `type`, as the bit pattern stored (in the low bytes_of(type)
// bytes).
IOS_TYPE_HOST_DEVICE inline uint32_t to_bits(float x, ElementType type) {
  switch (type) {
    case ElementType::kFloat32:
      return detail::float_bits(x);
    case ElementType::kFloat16:
      return float_to_half_bits(x);
    case ElementType::kBFloat16:
      return float_to_bfloat16_bits(x);
  }
  return 0;  // not reached: every type is a case
}

// The value a bit pattern of `type` stores.
IOS_TYPE_HOST_DEVICE inline float from_bits(uint32_t bits, ElementType type) {
  switch (type) {
    case ElementType::kFloat32:
      return detail::bits_float(bits);
    case ElementType::kFloat16:
      return half_bits_to_float(static_cast<uint16_t>(bits));
    case ElementType::kBFloat16:
      return bfloat16_bits_to_float(static_cast<uint16_t>(bits));
  }
  return 0.0f;  // not reached
}

// x rounded to `type` and read back as float: what storing x in a tensor of
// that type keeps.
IOS_TYPE_HOST_DEVICE inline float round_to(float x, ElementType type) {
  switch (type) {
    case ElementType::kFloat32:
      return x;
    case ElementType::kFloat16:
      return half_bits_to_float(float_to_half_bits(x));
    case ElementType::kBFloat16:
      return bfloat16_bits_to_float(float_to_bfloat16_bits(x));
  }
  return x;  // not reached
}

// Stores x rounded to `type` at p (bytes_of(type) bytes, little-endian as
// the hosts and GPUs ios runs on keep them), and reads it back.
inline void store_element(void* p, float x, ElementType type) {
  const uint32_t bits = to_bits(x, type);
  std::memcpy(p, &bits, static_cast<size_t>(bytes_of(type)));
}

inline float load_element(const void* p, ElementType type) {
  uint32_t bits = 0;
  std::memcpy(&bits, p, static_cast<size_t>(bytes_of(type)));
  return from_bits(bits, type);
}

}  // namespace ios::ir
