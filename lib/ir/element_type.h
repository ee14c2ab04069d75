// The element types a tensor of the IR can hold, and the rounding from float
// to each of them, written once for every backend.
//
// Every tensor computes in float32 registers and is stored in its element
// type: float32, or a 16-bit type whose values are the float32 values rounded
// to nearest, ties to even (IEEE 754 binary16, or bfloat16: float32's upper 16
// bits). Weights keep float values in the IR that are exactly representable in
// their tensor's type, so a value read back from a 16-bit tensor is its float.
// The CPU reference rounds with these functions wherever the CUDA kernels
// store a 16-bit value, which is what makes it a reference for them.
//
// Like ir/elementwise.h, this header needs nothing but <cstdint> and
// <cstring>, so device code includes it too.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define IOS_TYPE_HOST_DEVICE __host__ __device__
#else
#define IOS_TYPE_HOST_DEVICE
#endif

namespace ios::ir {

enum class ElementType : uint8_t { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2 };

inline constexpr int kNumElementTypes = 3;

// Bytes one element takes in device memory.
IOS_TYPE_HOST_DEVICE constexpr int bytes_of(ElementType type) {
  return type == ElementType::kFloat32 ? 4 : 2;
}

constexpr bool is_half(ElementType type) { return type != ElementType::kFloat32; }

// ONNX's names: "float32", "float16", "bfloat16".
constexpr const char* type_name(ElementType type) {
  switch (type) {
    case ElementType::kFloat16:
      return "float16";
    case ElementType::kBFloat16:
      return "bfloat16";
    default:
      return "float32";
  }
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

// x rounded to `type` and read back as float: what storing x in a tensor of
// that type keeps.
IOS_TYPE_HOST_DEVICE inline float round_to(float x, ElementType type) {
  switch (type) {
    case ElementType::kFloat16:
      return half_bits_to_float(float_to_half_bits(x));
    case ElementType::kBFloat16:
      return bfloat16_bits_to_float(float_to_bfloat16_bits(x));
    default:
      return x;
  }
}

// The largest finite value of `type`: weights beyond it do not convert.
constexpr float max_finite(ElementType type) {
  switch (type) {
    case ElementType::kFloat16:
      return 65504.0f;
    case ElementType::kBFloat16:
      return 3.3895313892515355e38f;  // 0x7f7f: larger floats round to inf
    default:
      return 3.4028234663852886e38f;
  }
}

}  // namespace ios::ir
