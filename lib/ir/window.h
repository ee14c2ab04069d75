// A window operator's geometry (Conv, ConvTranspose, MaxPool, AveragePool,
// Resize) on three spatial axes, T, H and W.
//
// The IR keeps one entry per spatial axis of the input (ir::Dims). Kernels
// and cost models read this form instead: a 1-D window over N,C,L is the 3-D
// window over N,C,1,1,L, a 2-D one over N,C,H,W the 3-D one over N,C,1,H,W,
// with kernel 1, stride 1, dilation 1 and no pads on the added axes. One loop
// nest then serves every rank, and the added axes cost one iteration each.
#pragma once

#include <array>
#include <cstdint>

#include "ir/graph.h"

namespace ios::ir {

using Axes3 = std::array<int64_t, 3>;  // T, H, W

struct Window3 {
  Axes3 in{1, 1, 1};   // input lengths
  Axes3 out{1, 1, 1};  // output lengths
  Axes3 kernel{1, 1, 1};
  Axes3 stride{1, 1, 1};
  Axes3 dilation{1, 1, 1};
  Axes3 pad_begin{0, 0, 0};
  Axes3 pad_end{0, 0, 0};

  static int64_t volume(const Axes3& a) { return a[0] * a[1] * a[2]; }
  int64_t in_volume() const { return volume(in); }
  int64_t out_volume() const { return volume(out); }
  int64_t kernel_volume() const { return volume(kernel); }
};

// The spatial lengths of `shape` (every axis after N and C, at most three),
// right-aligned into T, H, W with 1 before them.
Axes3 spatial3(const Shape& shape);
// `values` (one per spatial axis, at most three) right-aligned, `fill` before.
Axes3 axes3(const Dims& values, int64_t fill);

// The window of `x` -> `y` with per-axis attributes as the IR holds them
// (pads: the begins, then the ends). Checks that the ranks agree.
Window3 window3(const Shape& x, const Shape& y, const Dims& kernel, const Dims& stride,
                const Dims& dilation, const Dims& pads);
Window3 window3(const Shape& x, const Shape& y, const ConvAttrs& a);
Window3 window3(const Shape& x, const Shape& y, const PoolAttrs& a);

}  // namespace ios::ir
