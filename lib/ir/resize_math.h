// The coordinate math of Resize, written once for every backend (the CPU
// kernel in cpu/kernels.cpp, the CUDA kernel in cuda/kernels.cu), like
// ir/elementwise.h. Follows the ONNX Resize definition with the float32
// operation order of ONNX Runtime's CPU kernel, so both backends agree with
// it to the last bit of the coordinates and weights:
//
//   x_original = transform(x_resized)            (float32)
//   nearest: the rounded x_original, clamped to [0, in - 1]
//   linear:  x_original clamped to [0, in - 1]; taps floor and floor + 1
//            (clamped), weights |x - tap1| and |x - tap0|.
// Needs nothing but <cmath> and <cstdint>, so device code can include it.
#pragma once

#include <cmath>
#include <cstdint>

#include "ir/elementwise.h"  // IOS_HOST_DEVICE

namespace ios::ir::resize {

enum class Mode : int { kNearest, kLinear };
enum class Coordinates : int { kHalfPixel, kPytorchHalfPixel, kAlignCorners, kAsymmetric };
// How nearest mode rounds x_original. kSimple is Resize-10 / Upsample's rule:
// floor when enlarging, ceil when shrinking.
enum class Nearest : int { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };

// x_original of output index `x` on one axis; `scale` is output / input as
// the node gives it (the scales input, or sizes / input when sizes are given).
IOS_HOST_DEVICE inline float source_coordinate(Coordinates c, int64_t x, float scale,
                                               int64_t in_len, int64_t out_len) {
  const auto xf = static_cast<float>(x);
  switch (c) {
    case Coordinates::kHalfPixel:
      return (xf + 0.5f) / scale - 0.5f;
    case Coordinates::kPytorchHalfPixel:
      return out_len > 1 ? (xf + 0.5f) / scale - 0.5f : 0.0f;
    case Coordinates::kAlignCorners:
      return out_len == 1 ? 0.0f
                          : xf * static_cast<float>(in_len - 1) / static_cast<float>(out_len - 1);
    case Coordinates::kAsymmetric:
      return xf / scale;
  }
  return 0.0f;
}

// The input index nearest mode reads for output index `x`.
IOS_HOST_DEVICE inline int64_t nearest_index(Coordinates c, Nearest rounding, int64_t x,
                                             float scale, int64_t in_len, int64_t out_len) {
  const float s = source_coordinate(c, x, scale, in_len, out_len);
  float r = 0.0f;
  switch (rounding) {
    case Nearest::kRoundPreferFloor:
      r = s == static_cast<float>(static_cast<int64_t>(s)) + 0.5f ? std::floor(s) : std::round(s);
      break;
    case Nearest::kRoundPreferCeil:
      r = std::round(s);
      break;
    case Nearest::kFloor:
      r = std::floor(s);
      break;
    case Nearest::kCeil:
      r = std::ceil(s);
      break;
    case Nearest::kSimple:
      r = scale < 1.0f ? std::ceil(s) : std::floor(s);
      break;
  }
  const auto i = static_cast<int64_t>(r);
  return i < 0 ? 0 : i >= in_len ? in_len - 1 : i;
}

// The two input indices linear mode reads for output index `x` and their
// weights: value = w0 * in[i0] + w1 * in[i1].
struct LinearTaps {
  int64_t i0 = 0, i1 = 0;
  float w0 = 1.0f, w1 = 0.0f;
};

IOS_HOST_DEVICE inline LinearTaps linear_taps(Coordinates c, int64_t x, float scale, int64_t in_len,
                                              int64_t out_len) {
  float s = source_coordinate(c, x, scale, in_len, out_len);
  const auto last = static_cast<float>(in_len - 1);
  s = s < 0.0f ? 0.0f : s > last ? last : s;
  LinearTaps t;
  t.i0 = static_cast<int64_t>(s);
  if (t.i0 > in_len - 1) t.i0 = in_len - 1;
  t.i1 = t.i0 + 1 < in_len ? t.i0 + 1 : in_len - 1;
  if (t.i0 == t.i1) {
    t.w0 = 0.5f;
    t.w1 = 0.5f;
  } else {
    t.w0 = std::fabs(s - static_cast<float>(t.i1));  // weight of i0: distance to i1
    t.w1 = std::fabs(s - static_cast<float>(t.i0));
  }
  return t;
}

// One bilinear output from its four inputs, in ONNX Runtime's order:
// wx0*wy0*a00 + wx1*wy0*a01 + wx0*wy1*a10 + wx1*wy1*a11.
IOS_HOST_DEVICE inline float bilinear(const LinearTaps& ty, const LinearTaps& tx, float a00,
                                      float a01, float a10, float a11) {
  return tx.w0 * ty.w0 * a00 + tx.w1 * ty.w0 * a01 + tx.w0 * ty.w1 * a10 + tx.w1 * ty.w1 * a11;
}

}  // namespace ios::ir::resize
