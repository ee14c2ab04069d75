#include "cpu/kernels.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "core/error.h"
#include "cpu/gemm.h"
#include "cpu/parallel.h"
#include "ir/broadcast.h"
#include "ir/op_info.h"
#include "ir/window.h"

namespace ios::cpu {
namespace {

// --- Helpers ----------------------------------------------------------------

// A dense copy of x when x is a strided view (kernels that index the whole
// tensor linearly take this path; the hot kernels handle strides directly).
ConstView densify(const ConstView& x, std::vector<float>& storage) {
  if (x.dense()) return x;
  const int64_t item = x.item_size();
  storage.resize(static_cast<size_t>(x.size()));
  for (int64_t n = 0; n < x.batch(); ++n) std::memcpy(storage.data() + n * item, x.item(n), static_cast<size_t>(item) * sizeof(float));
  return ConstView(storage.data(), x.shape);
}

// A dense destination for y: y itself, or a scratch buffer scattered into y
// by finish().
class DenseOutput {
 public:
  explicit DenseOutput(const View& y) : y_(y) {
    if (y.dense()) {
      dense_ = y;
    } else {
      scratch_.resize(static_cast<size_t>(y.size()));
      dense_ = View(scratch_.data(), y.shape);
    }
  }
  const View& view() const { return dense_; }
  void finish() {
    if (scratch_.empty()) return;
    const int64_t item = y_.item_size();
    for (int64_t n = 0; n < y_.batch(); ++n) {
      std::memcpy(y_.item(n), scratch_.data() + n * item, static_cast<size_t>(item) * sizeof(float));
    }
  }

 private:
  View y_;
  View dense_;
  std::vector<float> scratch_;
};

// dst[o] = src[o] over `shape`, each side with its own element strides.
void strided_copy(const ir::Shape& shape, const float* src, const std::vector<int64_t>& src_strides, float* dst,
                  const std::vector<int64_t>& dst_strides) {
  const size_t rank = shape.size();
  if (rank == 0) {
    *dst = *src;
    return;
  }
  if (ir::num_elements(shape) == 0) return;
  const int64_t inner = shape[rank - 1];
  const int64_t s_in = src_strides[rank - 1], d_in = dst_strides[rank - 1];
  std::vector<int64_t> index(rank, 0);
  while (true) {
    int64_t so = 0, d_off = 0;
    for (size_t d = 0; d + 1 < rank; ++d) {
      so += index[d] * src_strides[d];
      d_off += index[d] * dst_strides[d];
    }
    const float* s = src + so;
    float* t = dst + d_off;
    if (s_in == 1 && d_in == 1) {
      std::memcpy(t, s, static_cast<size_t>(inner) * sizeof(float));
    } else {
      for (int64_t i = 0; i < inner; ++i) t[i * d_in] = s[i * s_in];
    }
    // Advance the odometer over all but the innermost dimension.
    size_t d = rank - 1;
    while (d > 0) {
      --d;
      if (++index[d] < shape[d]) break;
      index[d] = 0;
      if (d == 0) return;
    }
    if (rank == 1) return;
  }
}

void check_rank(const char* kernel, const ir::Shape& shape, size_t rank) {
  IOS_ASSERT(shape.size() == rank, "{}: expected a rank-{} tensor, got {}", kernel, rank, ir::to_string(shape));
}

// --- Convolution ------------------------------------------------------------

// The GEMM's K blocks hold whole input channels, the same number whatever
// the kernel size. A member of a merged convolution (its kernel zero-padded
// into the larger merged one) then sums the same products, in the same order
// and the same blocks, as its own convolution: the extra products are exact
// zeros, so merged and unmerged outputs are equal bit for bit.
//
// Each block is a float32 sum in registers before it joins the output, so
// its length bounds the rounding error: 64 channels of a 3x3 kernel (576
// products), of a 1-D kernel of up to 9 taps (576). A 3x3x3 kernel holds 27
// products per channel: 64 channels would sum 1728 and leave R3D-18 at
// 2.4 times ONNX Runtime's error against the float64 truth, so 3-D
// convolutions take 16 (432: 1.55 times; docs/testing.md). Merged members
// have the same spatial rank, so they keep the same blocks.
int64_t conv_channels_per_block(size_t spatial_rank) { return spatial_rank >= 3 ? 16 : 64; }

// A convolution's geometry on three spatial axes (ir/window.h): 1-D and 2-D
// convolutions are 3-D ones whose leading axes have length 1.
struct ConvGeometry {
  int64_t n, c;           // input batch and channels
  int64_t m;              // output channels
  int64_t group, cg, mg;  // per-group channels
  ir::Window3 win;        // spatial: input, output, kernel, stride, dilation, pads

  int64_t in_volume() const { return win.in_volume(); }
  int64_t out_volume() const { return win.out_volume(); }
  int64_t kernel_volume() const { return win.kernel_volume(); }
};

ConvGeometry conv_geometry(const ConstView& x, const ir::ConvAttrs& a, const View& y) {
  IOS_ASSERT(x.rank() == static_cast<int>(a.spatial_rank()) + 2 && y.rank() == x.rank(),
             "Conv: a {}-D window over {} -> {}", a.spatial_rank(), ir::to_string(x.shape),
             ir::to_string(y.shape));
  ConvGeometry g{};
  g.n = x.dim(0), g.c = x.dim(1);
  g.m = y.dim(1);
  g.group = a.group;
  g.win = ir::window3(x.shape, y.shape, a);
  IOS_ASSERT(y.dim(0) == g.n, "Conv: batch {} in, {} out", g.n, y.dim(0));
  IOS_ASSERT(g.group >= 1 && g.c % g.group == 0 && g.m % g.group == 0, "Conv: group {} for {} -> {} channels",
             g.group, g.c, g.m);
  g.cg = g.c / g.group;
  g.mg = g.m / g.group;
  // The IR's output size must be what the attributes give.
  const ir::Window3& w = g.win;
  for (size_t d = 0; d < 3; ++d) {
    const int64_t expected =
        (w.in[d] + w.pad_begin[d] + w.pad_end[d] - w.dilation[d] * (w.kernel[d] - 1) - 1) /
            w.stride[d] +
        1;
    IOS_ASSERT(expected == w.out[d], "Conv: output {} but the attributes give {} on axis {}",
               ir::to_string(y.shape), expected, d);
  }
  return g;
}

// The first and one-past-last output column whose input column
// o*stride - pad + offset lies in [0, size).
std::pair<int64_t, int64_t> valid_range(int64_t out, int64_t size, int64_t stride, int64_t pad, int64_t offset) {
  // o*stride >= pad - offset  and  o*stride < size + pad - offset
  auto ceil_div = [](int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); };
  const int64_t lo = std::clamp<int64_t>(ceil_div(pad - offset, stride), 0, out);
  const int64_t hi = std::clamp<int64_t>(ceil_div(size + pad - offset, stride), lo, out);
  return {lo, hi};
}

// col[((c*kt + a)*kh + i)*kw + j][(ot*OH + oh)*OW + ow]
//   = x[c][ot*st - pt + a*dt][oh*sh - ph + i*dh][ow*sw - pw + j*dw], or 0 in the padding.
void im2col(const ConvGeometry& g, const float* x, float* col, int threads) {
  const ir::Window3& w = g.win;
  const int64_t kv = g.kernel_volume();
  const int64_t rows = g.cg * kv;
  const int64_t p = g.out_volume();
  parallel_for(rows, threads_for(rows * p, threads), 1, [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t c = row / kv;
      const int64_t a = (row / (w.kernel[1] * w.kernel[2])) % w.kernel[0];
      const int64_t i = (row / w.kernel[2]) % w.kernel[1];
      const int64_t j = row % w.kernel[2];
      float* dst = col + row * p;
      const float* volume = x + c * g.in_volume();
      const auto [w_lo, w_hi] =
          valid_range(w.out[2], w.in[2], w.stride[2], w.pad_begin[2], j * w.dilation[2]);
      for (int64_t ot = 0; ot < w.out[0]; ++ot) {
        const int64_t it = ot * w.stride[0] - w.pad_begin[0] + a * w.dilation[0];
        for (int64_t oh = 0; oh < w.out[1]; ++oh) {
          float* out = dst + (ot * w.out[1] + oh) * w.out[2];
          const int64_t ih = oh * w.stride[1] - w.pad_begin[1] + i * w.dilation[1];
          if (it < 0 || it >= w.in[0] || ih < 0 || ih >= w.in[1]) {
            std::fill(out, out + w.out[2], 0.0f);
            continue;
          }
          std::fill(out, out + w_lo, 0.0f);
          const float* src =
              volume + (it * w.in[1] + ih) * w.in[2] - w.pad_begin[2] + j * w.dilation[2];
          if (w.stride[2] == 1) {
            std::memcpy(out + w_lo, src + w_lo, static_cast<size_t>(w_hi - w_lo) * sizeof(float));
          } else {
            for (int64_t ow = w_lo; ow < w_hi; ++ow) out[ow] = src[ow * w.stride[2]];
          }
          std::fill(out + w_hi, out + w.out[2], 0.0f);
        }
      }
    }
  });
}

// One output channel per input channel: direct loops, parallel over (n, c).
void depthwise_conv(const KernelContext& ctx, const ConvGeometry& g, const ConstView& x, const float* weight,
                    const float* bias, const View& y) {
  const ir::Window3& w = g.win;
  const int64_t work = g.n * g.c * g.out_volume() * g.kernel_volume();
  parallel_for(g.n * g.c, threads_for(work, ctx.threads), 1, [&](int64_t b0, int64_t b1) {
    for (int64_t idx = b0; idx < b1; ++idx) {
      const int64_t n = idx / g.c, c = idx % g.c;
      const float* xc = x.item(n) + c * g.in_volume();
      float* yc = y.item(n) + c * g.out_volume();
      const float* wc = weight + c * g.kernel_volume();
      const float b = bias ? bias[c] : 0.0f;
      for (int64_t ot = 0; ot < w.out[0]; ++ot) {
        for (int64_t oh = 0; oh < w.out[1]; ++oh) {
          for (int64_t ow = 0; ow < w.out[2]; ++ow) {
            float acc = 0.0f;
            for (int64_t a = 0; a < w.kernel[0]; ++a) {
              const int64_t it = ot * w.stride[0] - w.pad_begin[0] + a * w.dilation[0];
              if (it < 0 || it >= w.in[0]) continue;
              for (int64_t i = 0; i < w.kernel[1]; ++i) {
                const int64_t ih = oh * w.stride[1] - w.pad_begin[1] + i * w.dilation[1];
                if (ih < 0 || ih >= w.in[1]) continue;
                const float* x_row = xc + (it * w.in[1] + ih) * w.in[2];
                const float* w_row = wc + (a * w.kernel[1] + i) * w.kernel[2];
                for (int64_t j = 0; j < w.kernel[2]; ++j) {
                  const int64_t iw = ow * w.stride[2] - w.pad_begin[2] + j * w.dilation[2];
                  if (iw < 0 || iw >= w.in[2]) continue;
                  acc += x_row[iw] * w_row[j];
                }
              }
            }
            yc[(ot * w.out[1] + oh) * w.out[2] + ow] = acc + b;
          }
        }
      }
    }
  });
}

// --- Pooling ----------------------------------------------------------------

// Calls fn(x_volume, taps, count) for every output of a pool, where `taps`
// are the offsets in the input volume of the window's elements inside the
// input and `count` is the window's size within the padded extent
// (AveragePool's count_include_pad divisor).
template <typename Fn>
void for_each_pool_window(const ir::PoolAttrs& a, const ConstView& x, const View& y, Fn&& fn) {
  IOS_ASSERT(x.rank() == static_cast<int>(a.spatial_rank()) + 2 && y.rank() == x.rank() &&
                 y.dim(0) == x.dim(0) && y.dim(1) == x.dim(1),
             "Pool: a {}-D window over {} -> {}", a.spatial_rank(), ir::to_string(x.shape),
             ir::to_string(y.shape));
  const ir::Window3 w = ir::window3(x.shape, y.shape, a);
  const int64_t n = x.dim(0), c = x.dim(1);
  std::vector<int64_t> taps;
  taps.reserve(static_cast<size_t>(w.kernel_volume()));
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t ch = 0; ch < c; ++ch) {
      const float* xc = x.item(b) + ch * w.in_volume();
      float* yc = y.item(b) + ch * w.out_volume();
      for (int64_t ot = 0; ot < w.out[0]; ++ot) {
        for (int64_t oh = 0; oh < w.out[1]; ++oh) {
          for (int64_t ow = 0; ow < w.out[2]; ++ow) {
            const int64_t o[3] = {ot, oh, ow};
            // Per axis: the taps' count within the padded extent, which
            // ends at in + pad_end.
            int64_t count = 1;
            for (size_t d = 0; d < 3; ++d) {
              const int64_t first = o[d] * w.stride[d] - w.pad_begin[d];
              int64_t inside = 0;
              for (int64_t k = 0; k < w.kernel[d]; ++k) {
                if (first + k * w.dilation[d] < w.in[d] + w.pad_end[d]) ++inside;
              }
              count *= inside;
            }
            taps.clear();
            for (int64_t ka = 0; ka < w.kernel[0]; ++ka) {
              const int64_t it = ot * w.stride[0] - w.pad_begin[0] + ka * w.dilation[0];
              if (it < 0 || it >= w.in[0]) continue;
              for (int64_t ki = 0; ki < w.kernel[1]; ++ki) {
                const int64_t ih = oh * w.stride[1] - w.pad_begin[1] + ki * w.dilation[1];
                if (ih < 0 || ih >= w.in[1]) continue;
                for (int64_t kj = 0; kj < w.kernel[2]; ++kj) {
                  const int64_t iw = ow * w.stride[2] - w.pad_begin[2] + kj * w.dilation[2];
                  if (iw < 0 || iw >= w.in[2]) continue;
                  taps.push_back((it * w.in[1] + ih) * w.in[2] + iw);
                }
              }
            }
            yc[(ot * w.out[1] + oh) * w.out[2] + ow] = fn(xc, taps, count);
          }
        }
      }
    }
  }
}

}  // namespace

// --- Kernels ----------------------------------------------------------------

void conv(const KernelContext& ctx, const ConstView& x, const float* weight, const float* bias,
          const ir::ConvAttrs& attrs, const View& y) {
  const ConvGeometry g = conv_geometry(x, attrs, y);
  if (g.group == g.c && g.m == g.c && g.group > 1) {
    depthwise_conv(ctx, g, x, weight, bias, y);
    return;
  }
  const int64_t k = g.cg * g.kernel_volume();
  const int64_t p = g.out_volume();
  // A 1x1 convolution with unit stride and no padding reads its input as the
  // GEMM's B matrix directly.
  const ir::Window3& w = g.win;
  const bool direct = g.kernel_volume() == 1 && w.stride == ir::Axes3{1, 1, 1} &&
                      w.pad_begin == ir::Axes3{0, 0, 0} && w.out == w.in;
  std::vector<float> col(direct ? 0 : static_cast<size_t>(k * p));
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t grp = 0; grp < g.group; ++grp) {
      const float* xg = x.item(n) + grp * g.cg * g.in_volume();
      float* yg = y.item(n) + grp * g.mg * p;
      for (int64_t oc = 0; oc < g.mg; ++oc) {
        std::fill(yg + oc * p, yg + (oc + 1) * p, bias ? bias[grp * g.mg + oc] : 0.0f);
      }
      MatrixRef b{xg, p, 1};
      if (!direct) {
        im2col(g, xg, col.data(), ctx.threads);
        b = MatrixRef{col.data(), p, 1};
      }
      gemm_accumulate(g.mg, p, k, MatrixRef{weight + grp * g.mg * k, k, 1}, b, yg, p, ctx.threads,
                      conv_channels_per_block(attrs.spatial_rank()) * g.kernel_volume());
    }
  }
}

void unary(ir::OpKind op, const ir::ew::Params& params, const ConstView& x, const View& y) {
  IOS_ASSERT(x.shape == y.shape, "unary: {} -> {}", ir::to_string(x.shape), ir::to_string(y.shape));
  const int64_t item = x.item_size();
  // Dispatch once; the loop runs the operator's functor (ir/elementwise.h).
  const bool known = ir::ew::visit_unary(op, [&](auto f) {
    for (int64_t n = 0; n < x.batch(); ++n) {
      const float* in = x.item(n);
      float* out = y.item(n);
      for (int64_t i = 0; i < item; ++i) out[i] = f(in[i], params);
    }
  });
  IOS_ASSERT(known, "unary: {} is not a unary element-wise operator", ir::op_name(op));
}

namespace {

// binary()'s loops for one operator's functor `apply`.
template <typename F>
void binary_loops(F apply, const ConstView& a, const ConstView& b, const View& y) {
  // Same shapes: item by item, contiguous.
  if (a.shape == y.shape && b.shape == y.shape) {
    const int64_t item = y.item_size();
    for (int64_t n = 0; n < y.batch(); ++n) {
      const float* pa = a.item(n);
      const float* pb = b.item(n);
      float* py = y.item(n);
      for (int64_t i = 0; i < item; ++i) py[i] = apply(pa[i], pb[i]);
    }
    return;
  }
  // General broadcasting: each operand gets strides over y's dimensions, 0
  // where it is stretched.
  const size_t rank = y.shape.size();
  auto broadcast_strides = [&](const ConstView& v) {
    IOS_ASSERT(v.shape.size() <= rank, "broadcast: {} into {}", ir::to_string(v.shape), ir::to_string(y.shape));
    const auto own = v.strides();
    std::vector<int64_t> s(rank, 0);
    const size_t lead = rank - v.shape.size();
    for (size_t d = lead; d < rank; ++d) {
      const int64_t dim = v.shape[d - lead];
      IOS_ASSERT(dim == y.shape[d] || dim == 1, "broadcast: {} into {}", ir::to_string(v.shape),
                 ir::to_string(y.shape));
      s[d] = dim == 1 ? 0 : own[d - lead];
    }
    return s;
  };
  if (rank == 0) {
    *y.data = apply(*a.data, *b.data);
    return;
  }
  const auto sa = broadcast_strides(a), sb = broadcast_strides(b), sy = y.strides();
  const int64_t inner = y.shape[rank - 1];
  if (inner == 0 || y.size() == 0) return;
  std::vector<int64_t> index(rank, 0);
  while (true) {
    int64_t oa = 0, ob = 0, oy = 0;
    for (size_t d = 0; d + 1 < rank; ++d) {
      oa += index[d] * sa[d];
      ob += index[d] * sb[d];
      oy += index[d] * sy[d];
    }
    const float* pa = a.data + oa;
    const float* pb = b.data + ob;
    float* py = y.data + oy;
    const int64_t ia = sa[rank - 1], ib = sb[rank - 1], iy = sy[rank - 1];
    for (int64_t i = 0; i < inner; ++i) py[i * iy] = apply(pa[i * ia], pb[i * ib]);
    if (rank == 1) return;
    size_t d = rank - 1;
    while (true) {
      --d;
      if (++index[d] < y.shape[d]) break;
      index[d] = 0;
      if (d == 0) return;
    }
  }
}


}  // namespace

void binary(ir::OpKind op, const ConstView& a, const ConstView& b, const View& y) {
  // Dispatch once; the loops run the operator's functor (ir/elementwise.h).
  const bool known = ir::ew::visit_binary(op, [&](auto apply) { binary_loops(apply, a, b, y); });
  IOS_ASSERT(known, "binary: {} is not a binary element-wise operator", ir::op_name(op));
}

void batch_norm(const ConstView& x, const float* scale, const float* bias, const float* mean, const float* var,
                float epsilon, const View& y) {
  IOS_ASSERT(x.shape == y.shape && x.rank() >= 2, "BatchNorm: {} -> {}", ir::to_string(x.shape),
             ir::to_string(y.shape));
  const int64_t c = x.dim(1);
  const int64_t inner = x.item_size() / c;
  for (int64_t n = 0; n < x.batch(); ++n) {
    for (int64_t ch = 0; ch < c; ++ch) {
      const float s = scale[ch] / std::sqrt(var[ch] + epsilon);
      const float m = mean[ch], b = bias[ch];
      const float* in = x.item(n) + ch * inner;
      float* out = y.item(n) + ch * inner;
      for (int64_t i = 0; i < inner; ++i) out[i] = (in[i] - m) * s + b;
    }
  }
}

void concat(int64_t axis, std::span<const ConstView> inputs, const View& y) {
  IOS_ASSERT(axis >= 0 && axis < y.rank(), "Concat: axis {} of {}", axis, ir::to_string(y.shape));
  int64_t inner = 1;
  for (int d = static_cast<int>(axis) + 1; d < y.rank(); ++d) inner *= y.dim(d);
  if (axis == 0) {
    int64_t at = 0;
    for (const auto& in : inputs) {
      for (int64_t n = 0; n < in.batch(); ++n, ++at) {
        std::memcpy(y.item(at), in.item(n), static_cast<size_t>(y.item_size()) * sizeof(float));
      }
    }
    IOS_ASSERT(at == y.batch(), "Concat: inputs give {} items, output has {}", at, y.batch());
    return;
  }
  // Within an item: `outer` rows of (sum of axis sizes) * inner.
  int64_t outer = 1;
  for (int d = 1; d < axis; ++d) outer *= y.dim(d);
  const int64_t row = y.dim(static_cast<int>(axis)) * inner;
  int64_t offset = 0;
  for (const auto& in : inputs) {
    const int64_t chunk = in.dim(static_cast<int>(axis)) * inner;
    // Zero-copy concat: a producer that wrote straight into its slice.
    const bool in_place = outer == 1 && in.data == y.data + offset && (in.batch() <= 1 || in.batch_stride == y.batch_stride);
    if (!in_place) {
      for (int64_t n = 0; n < y.batch(); ++n) {
        for (int64_t o = 0; o < outer; ++o) {
          std::memcpy(y.item(n) + o * row + offset, in.item(n) + o * chunk, static_cast<size_t>(chunk) * sizeof(float));
        }
      }
    }
    offset += chunk;
  }
  IOS_ASSERT(offset == row, "Concat: inputs cover {} of {} elements per row", offset, row);
}

void split(int64_t axis, const ConstView& x, std::span<const View> outputs) {
  IOS_ASSERT(axis >= 0 && axis < x.rank(), "Split: axis {} of {}", axis, ir::to_string(x.shape));
  int64_t inner = 1;
  for (int d = static_cast<int>(axis) + 1; d < x.rank(); ++d) inner *= x.dim(d);
  if (axis == 0) {
    int64_t at = 0;
    for (const auto& out : outputs) {
      for (int64_t n = 0; n < out.batch(); ++n, ++at) {
        std::memcpy(out.item(n), x.item(at), static_cast<size_t>(x.item_size()) * sizeof(float));
      }
    }
    return;
  }
  int64_t outer = 1;
  for (int d = 1; d < axis; ++d) outer *= x.dim(d);
  const int64_t row = x.dim(static_cast<int>(axis)) * inner;
  int64_t offset = 0;
  for (const auto& out : outputs) {
    const int64_t chunk = out.dim(static_cast<int>(axis)) * inner;
    for (int64_t n = 0; n < x.batch(); ++n) {
      for (int64_t o = 0; o < outer; ++o) {
        std::memcpy(out.item(n) + o * chunk, x.item(n) + o * row + offset, static_cast<size_t>(chunk) * sizeof(float));
      }
    }
    offset += chunk;
  }
  IOS_ASSERT(offset == row, "Split: outputs cover {} of {} elements per row", offset, row);
}

void slice(const ir::SliceAttrs& attrs, const ConstView& x, const View& y) {
  IOS_ASSERT(x.rank() == y.rank(), "Slice: {} -> {}", ir::to_string(x.shape), ir::to_string(y.shape));
  const auto xs = x.strides();
  std::vector<int64_t> src_strides = xs;
  int64_t base = 0;
  for (size_t i = 0; i < attrs.axes.size(); ++i) {
    const auto axis = static_cast<size_t>(attrs.axes[i]);
    IOS_ASSERT(axis < xs.size() && attrs.steps[i] != 0, "Slice: axis {} step {}", axis, attrs.steps[i]);
    base += attrs.starts[i] * xs[axis];
    src_strides[axis] = xs[axis] * attrs.steps[i];
  }
  strided_copy(y.shape, x.data + base, src_strides, y.data, y.strides());
}

void max_pool(const ir::PoolAttrs& attrs, const ConstView& x, const View& y) {
  for_each_pool_window(attrs, x, y, [](const float* xc, const std::vector<int64_t>& taps, int64_t) {
    float best = -std::numeric_limits<float>::infinity();
    for (int64_t t : taps) best = std::max(best, xc[t]);
    return best;
  });
}

void average_pool(const ir::PoolAttrs& attrs, const ConstView& x, const View& y) {
  const bool include_pad = attrs.count_include_pad;
  for_each_pool_window(
      attrs, x, y,
      [include_pad](const float* xc, const std::vector<int64_t>& taps, int64_t padded) {
        float sum = 0.0f;
        for (int64_t t : taps) sum += xc[t];
        const auto count = include_pad ? padded : static_cast<int64_t>(taps.size());
        return count > 0 ? sum / static_cast<float>(count) : 0.0f;
      });
}

void global_average_pool(const ConstView& x, const View& y) {
  IOS_ASSERT(x.rank() >= 3 && y.rank() == x.rank() && y.dim(1) == x.dim(1), "GlobalAveragePool: {} -> {}",
             ir::to_string(x.shape), ir::to_string(y.shape));
  const int64_t c = x.dim(1);
  const int64_t spatial = x.item_size() / c;
  for (int64_t n = 0; n < x.batch(); ++n) {
    for (int64_t ch = 0; ch < c; ++ch) {
      const float* in = x.item(n) + ch * spatial;
      double sum = 0.0;
      for (int64_t i = 0; i < spatial; ++i) sum += in[i];
      y.item(n)[ch] = static_cast<float>(sum / static_cast<double>(spatial));
    }
  }
}

void reduce_mean(const ir::ReduceAttrs& attrs, const ConstView& x_view, const View& y_view) {
  reduce(ir::OpKind::kReduceMean, attrs, x_view, y_view);
}

void reduce(ir::OpKind op, const ir::ReduceAttrs& attrs, const ConstView& x_view, const View& y_view) {
  std::vector<float> storage;
  const ConstView x = densify(x_view, storage);
  DenseOutput out(y_view);
  const size_t rank = x.shape.size();
  std::vector<bool> reduced(rank, attrs.axes.empty());  // no axes: reduce everything
  for (int64_t axis : attrs.axes) {
    IOS_ASSERT(axis >= 0 && static_cast<size_t>(axis) < rank, "ReduceMean: axis {} of {}", axis,
               ir::to_string(x.shape));
    reduced[static_cast<size_t>(axis)] = true;
  }
  // Output strides over the input's dimensions (0 along reduced ones).
  std::vector<int64_t> out_strides(rank, 0);
  int64_t stride = 1, count = 1;
  for (size_t d = rank; d-- > 0;) {
    if (reduced[d]) {
      count *= x.shape[d];
    } else {
      out_strides[d] = stride;
      stride *= x.shape[d];
    }
  }
  IOS_ASSERT(stride == out.view().size(), "{}: {} -> {}", ir::op_name(op), ir::to_string(x.shape),
             ir::to_string(y_view.shape));
  // Sums and products in double (the float64 truth rounded once); max and
  // min compare as std::max/std::min do, like the element-wise Max and Min.
  // ReduceLogSumExp is max + log(sum exp(x - max)): a first pass takes each
  // output's maximum, so that no exp overflows (x of 100 in float32) and the
  // largest term is exactly 1.
  using K = ir::OpKind;
  const double init = op == K::kReduceProd  ? 1.0
                      : op == K::kReduceMax ? -std::numeric_limits<double>::infinity()
                      : op == K::kReduceMin ? std::numeric_limits<double>::infinity()
                                            : 0.0;
  const auto sweep = [&](auto&& visit) {
    std::vector<int64_t> index(rank, 0);
    const int64_t total = x.size();
    for (int64_t i = 0; i < total; ++i) {
      int64_t o = 0;
      for (size_t d = 0; d < rank; ++d) o += index[d] * out_strides[d];
      visit(static_cast<size_t>(o), static_cast<double>(x.data[i]));
      for (size_t d = rank; d-- > 0;) {
        if (++index[d] < x.shape[d]) break;
        index[d] = 0;
      }
    }
  };
  std::vector<double> shift(op == K::kReduceLogSumExp ? static_cast<size_t>(stride) : 0,
                            -std::numeric_limits<double>::infinity());
  if (op == K::kReduceLogSumExp) {
    sweep([&](size_t o, double v) { shift[o] = shift[o] < v ? v : shift[o]; });
    // An output whose inputs are all -inf (or +inf) subtracts nothing, so
    // that it gives -inf (+inf) rather than NaN from inf - inf.
    for (double& m : shift) m = std::isfinite(m) ? m : 0.0;
  }
  std::vector<double> sums(static_cast<size_t>(stride), init);
  sweep([&](size_t o, double v) {
    double& acc = sums[o];
    switch (op) {
      case K::kReduceProd: acc *= v; break;
      case K::kReduceMax: acc = acc < v ? v : acc; break;
      case K::kReduceMin: acc = v < acc ? v : acc; break;
      case K::kReduceL1: acc += std::fabs(v); break;
      case K::kReduceL2:
      case K::kReduceSumSquare: acc += v * v; break;
      case K::kReduceLogSumExp: acc += std::exp(v - shift[o]); break;
      default: acc += v; break;
    }
  });
  for (size_t i = 0; i < sums.size(); ++i) {
    double r = sums[i];
    if (op == K::kReduceMean) r /= static_cast<double>(count);
    if (op == K::kReduceL2) r = std::sqrt(r);
    if (op == K::kReduceLogSumExp) r = shift[i] + std::log(r);
    out.view().data[i] = static_cast<float>(r);
  }
  out.finish();
}

// ConvTranspose as the scatter of every input element through its weights
// [C_in, C_out / group, k...], accumulated in double: the float64 truth
// rounded once. 1-D and 2-D are the 3-D case with leading axes of length 1.
void conv_transpose(const ir::ConvTransposeAttrs& a, const ConstView& x_view, const float* weight,
                    const float* bias, const View& y_view) {
  std::vector<float> storage;
  const ConstView x = densify(x_view, storage);
  const size_t rank = a.spatial_rank();
  IOS_ASSERT(x.rank() == static_cast<int>(rank) + 2 && y_view.rank() == x.rank(),
             "ConvTranspose: {}-D over {}", rank, ir::to_string(x.shape));
  DenseOutput out(y_view);
  const int64_t n = x.dim(0), cin = x.dim(1);
  const ir::Shape& ys = out.view().shape;
  const int64_t cout = ys[1];
  const ir::Axes3 in = ir::spatial3(x.shape), size = ir::spatial3(ys);
  const ir::Axes3 k = ir::axes3(a.kernel, 1), s = ir::axes3(a.stride, 1),
                  d = ir::axes3(a.dilation, 1);
  const ir::Axes3 p =
      ir::axes3(ir::Dims(a.pads.begin(), a.pads.begin() + static_cast<std::ptrdiff_t>(rank)), 0);
  const int64_t cin_g = cin / a.group, cout_g = cout / a.group;
  IOS_ASSERT(ys[0] == n && cin_g * a.group == cin && cout_g * a.group == cout, "ConvTranspose: {} -> {}",
             ir::to_string(x.shape), ir::to_string(ys));
  const int64_t in_volume = ir::Window3::volume(in), plane = ir::Window3::volume(size);
  const int64_t kernel_volume = ir::Window3::volume(k);
  std::vector<double> acc(static_cast<size_t>(cout * plane));
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t m = 0; m < cout; ++m) {
      std::fill(acc.begin() + m * plane, acc.begin() + (m + 1) * plane, bias ? static_cast<double>(bias[m]) : 0.0);
    }
    for (int64_t ci = 0; ci < cin; ++ci) {
      const float* xc = x.data + (b * cin + ci) * in_volume;
      const int64_t group = ci / cin_g;
      for (int64_t co = 0; co < cout_g; ++co) {
        const float* wk = weight + (ci * cout_g + co) * kernel_volume;
        double* ym = acc.data() + (group * cout_g + co) * plane;
        for (int64_t t = 0; t < in[0]; ++t) {
          for (int64_t i = 0; i < in[1]; ++i) {
            for (int64_t j = 0; j < in[2]; ++j) {
              const double xv = xc[(t * in[1] + i) * in[2] + j];
              for (int64_t e = 0; e < k[0]; ++e) {
                const int64_t q = t * s[0] - p[0] + e * d[0];
                if (q < 0 || q >= size[0]) continue;
                for (int64_t u = 0; u < k[1]; ++u) {
                  const int64_t r = i * s[1] - p[1] + u * d[1];
                  if (r < 0 || r >= size[1]) continue;
                  for (int64_t v = 0; v < k[2]; ++v) {
                    const int64_t c = j * s[2] - p[2] + v * d[2];
                    if (c >= 0 && c < size[2])
                      ym[(q * size[1] + r) * size[2] + c] += xv * wk[(e * k[1] + u) * k[2] + v];
                  }
                }
              }
            }
          }
        }
      }
    }
    float* yb = out.view().data + b * cout * plane;
    for (size_t e = 0; e < acc.size(); ++e) yb[e] = static_cast<float>(acc[e]);
  }
  out.finish();
}

void tile(const std::vector<int64_t>& repeats, const ConstView& x_view, const View& y_view) {
  std::vector<float> storage;
  const ConstView x = densify(x_view, storage);
  DenseOutput out(y_view);
  const size_t rank = x.shape.size();
  IOS_ASSERT(repeats.size() == rank, "Tile: {} repeats for {}", repeats.size(), ir::to_string(x.shape));
  std::vector<int64_t> x_strides(rank, 1);
  for (size_t d = rank; d-- > 1;) x_strides[d - 1] = x_strides[d] * x.shape[d];
  const ir::Shape& ys = out.view().shape;
  std::vector<int64_t> index(rank, 0);
  const int64_t total = out.view().size();
  for (int64_t i = 0; i < total; ++i) {
    int64_t src = 0;
    for (size_t d = 0; d < rank; ++d) src += (index[d] % x.shape[d]) * x_strides[d];
    out.view().data[i] = x.data[src];
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < ys[d]) break;
      index[d] = 0;
    }
  }
  out.finish();
}

void copy(const ConstView& x, const View& y) {
  IOS_ASSERT(x.size() == y.size(), "copy: {} elements into {}", x.size(), y.size());
  if (x.batch() == y.batch() && x.item_size() == y.item_size()) {
    for (int64_t n = 0; n < x.batch(); ++n) {
      std::memcpy(y.item(n), x.item(n), static_cast<size_t>(x.item_size()) * sizeof(float));
    }
    return;
  }
  std::vector<float> storage;
  const ConstView dense = densify(x, storage);
  DenseOutput out(y);
  std::memcpy(out.view().data, dense.data, static_cast<size_t>(x.size()) * sizeof(float));
  out.finish();
}

void transpose(const std::vector<int64_t>& perm, const ConstView& x, const View& y) {
  IOS_ASSERT(perm.size() == x.shape.size() && y.shape.size() == x.shape.size(), "Transpose: perm of size {} on {}",
             perm.size(), ir::to_string(x.shape));
  const auto xs = x.strides();
  std::vector<int64_t> src_strides(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) {
    IOS_ASSERT(y.shape[d] == x.shape[static_cast<size_t>(perm[d])], "Transpose: {} -> {}", ir::to_string(x.shape),
               ir::to_string(y.shape));
    src_strides[d] = xs[static_cast<size_t>(perm[d])];
  }
  strided_copy(y.shape, x.data, src_strides, y.data, y.strides());
}

void gemm(const KernelContext& ctx, const ir::GemmAttrs& attrs, const ConstView& a_view, const ConstView& b_view,
          const ConstView* c_view, const View& y_view) {
  std::vector<float> sa, sb, sc;
  const ConstView a = densify(a_view, sa), b = densify(b_view, sb);
  check_rank("Gemm", a.shape, 2);
  check_rank("Gemm", b.shape, 2);
  check_rank("Gemm", y_view.shape, 2);
  const int64_t m = attrs.trans_a ? a.dim(1) : a.dim(0);
  const int64_t k = attrs.trans_a ? a.dim(0) : a.dim(1);
  const int64_t n = attrs.trans_b ? b.dim(0) : b.dim(1);
  IOS_ASSERT((attrs.trans_b ? b.dim(1) : b.dim(0)) == k, "Gemm: inner dimensions {} and {}", ir::to_string(a.shape),
             ir::to_string(b.shape));
  IOS_ASSERT(y_view.dim(0) == m && y_view.dim(1) == n, "Gemm: output {} for {}x{}", ir::to_string(y_view.shape), m, n);
  DenseOutput out(y_view);
  float* y = out.view().data;
  std::fill(y, y + m * n, 0.0f);
  const MatrixRef ma = attrs.trans_a ? MatrixRef{a.data, 1, m} : MatrixRef{a.data, k, 1};
  const MatrixRef mb = attrs.trans_b ? MatrixRef{b.data, 1, k} : MatrixRef{b.data, n, 1};
  gemm_accumulate(m, n, k, ma, mb, y, n, ctx.threads);
  ConstView c;
  if (c_view) c = densify(*c_view, sc);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float v = attrs.alpha * y[i * n + j];
      if (c_view) {
        // Unidirectional broadcast of C to [m, n].
        int64_t ci = 0;
        if (c.rank() == 2) ci = (c.dim(0) == 1 ? 0 : i) * c.dim(1) + (c.dim(1) == 1 ? 0 : j);
        else if (c.rank() == 1) ci = c.dim(0) == 1 ? 0 : j;
        v += attrs.beta * c.data[ci];
      }
      y[i * n + j] = v;
    }
  }
  out.finish();
}

void matmul(const KernelContext& ctx, const ConstView& a_view, const ConstView& b_view, const View& y_view) {
  std::vector<float> sa, sb;
  ConstView a = densify(a_view, sa), b = densify(b_view, sb);
  // numpy rules for 1-D operands: a vector is a 1 x k row or a k x 1 column.
  ir::Shape as = a.shape, bs = b.shape;
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  IOS_ASSERT(as.size() >= 2 && bs.size() >= 2, "MatMul: {} x {}", ir::to_string(a.shape), ir::to_string(b.shape));
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  IOS_ASSERT(bs[bs.size() - 2] == k, "MatMul: inner dimensions of {} and {}", ir::to_string(a.shape),
             ir::to_string(b.shape));
  // Batch dimensions broadcast against each other.
  const size_t batch_rank = std::max(as.size(), bs.size()) - 2;
  ir::Shape batch(batch_rank, 1);
  std::vector<int64_t> a_stride(batch_rank, 0), b_stride(batch_rank, 0);
  int64_t sa_acc = m * k, sb_acc = k * n;
  for (size_t i = 0; i < batch_rank; ++i) {
    const size_t d = batch_rank - 1 - i;  // from the innermost batch dim outwards
    const int64_t ad = i < as.size() - 2 ? as[as.size() - 3 - i] : 1;
    const int64_t bd = i < bs.size() - 2 ? bs[bs.size() - 3 - i] : 1;
    IOS_ASSERT(ad == bd || ad == 1 || bd == 1, "MatMul: batch dimensions of {} and {}", ir::to_string(a.shape),
               ir::to_string(b.shape));
    batch[d] = std::max(ad, bd);
    a_stride[d] = ad == 1 ? 0 : sa_acc;
    b_stride[d] = bd == 1 ? 0 : sb_acc;
    sa_acc *= ad;
    sb_acc *= bd;
  }
  const int64_t batches = ir::num_elements(batch);
  IOS_ASSERT(y_view.size() == batches * m * n, "MatMul: output {} for {} x {}", ir::to_string(y_view.shape),
             ir::to_string(a.shape), ir::to_string(b.shape));
  DenseOutput out(y_view);
  float* y = out.view().data;
  std::fill(y, y + batches * m * n, 0.0f);
  std::vector<int64_t> index(batch_rank, 0);
  for (int64_t bi = 0; bi < batches; ++bi) {
    int64_t ao = 0, bo = 0;
    for (size_t d = 0; d < batch_rank; ++d) {
      ao += index[d] * a_stride[d];
      bo += index[d] * b_stride[d];
    }
    gemm_accumulate(m, n, k, MatrixRef{a.data + ao, k, 1}, MatrixRef{b.data + bo, n, 1}, y + bi * m * n, n,
                    ctx.threads);
    for (size_t d = batch_rank; d-- > 0;) {
      if (++index[d] < batch[d]) break;
      index[d] = 0;
    }
  }
  out.finish();
}

void softmax(int64_t axis, const ConstView& x_view, const View& y_view) { softmax(axis, false, x_view, y_view); }

// LogSoftmax as x - max - log(sum(exp(x - max))), the sum in double, so that
// no probability underflows to a log of 0.
void softmax(int64_t axis, bool log, const ConstView& x_view, const View& y_view) {
  std::vector<float> storage;
  const ConstView x = densify(x_view, storage);
  IOS_ASSERT(x.shape == y_view.shape && axis >= 0 && axis < x.rank(), "Softmax: axis {} on {}", axis,
             ir::to_string(x.shape));
  DenseOutput out(y_view);
  float* y = out.view().data;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int d = static_cast<int>(axis) + 1; d < x.rank(); ++d) inner *= x.dim(d);
  const int64_t len = x.dim(static_cast<int>(axis));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const float* in = x.data + o * len * inner + i;
      float* dst = y + o * len * inner + i;
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < len; ++j) mx = std::max(mx, in[j * inner]);
      double sum = 0.0;
      if (log) {
        for (int64_t j = 0; j < len; ++j) sum += std::exp(static_cast<double>(in[j * inner]) - mx);
        const double log_sum = std::log(sum);
        for (int64_t j = 0; j < len; ++j) {
          dst[j * inner] = static_cast<float>(static_cast<double>(in[j * inner]) - mx - log_sum);
        }
        continue;
      }
      for (int64_t j = 0; j < len; ++j) {
        dst[j * inner] = std::exp(in[j * inner] - mx);
        sum += dst[j * inner];
      }
      const float inv = static_cast<float>(1.0 / sum);
      for (int64_t j = 0; j < len; ++j) dst[j * inner] *= inv;
    }
  }
  out.finish();
}

// LayerNormalization over x's dims from `axis` on, one row per outer index:
// mean and variance (two passes) and the normalized value in double, so the
// result is the float64 truth rounded once. Scale and B broadcast to the
// normalized dims (ir/broadcast.h); B may be absent.
void layer_norm(const ir::LayerNormAttrs& attrs, const ConstView& x_view,
                const ConstView& scale_view, const ConstView* bias_view, const View& y_view) {
  std::vector<float> storage, scale_storage, bias_storage;
  const ConstView x = densify(x_view, storage);
  IOS_ASSERT(x.shape == y_view.shape && attrs.axis >= 0 && attrs.axis < x.rank(),
             "LayerNorm: axis {} on {}", attrs.axis, ir::to_string(x.shape));
  const ir::Shape dims = attrs.normalized_dims(x.shape);
  auto expanded = [&](const ConstView& p_view, std::vector<float>& p_storage) {
    const ConstView p = densify(p_view, p_storage);
    return ir::expand_to(std::vector<float>(p.data, p.data + p.size()), p.shape, dims);
  };
  const std::vector<float> scale = expanded(scale_view, scale_storage);
  const std::vector<float> bias =
      bias_view ? expanded(*bias_view, bias_storage) : std::vector<float>();
  DenseOutput out(y_view);
  const int64_t cols = ir::num_elements(dims);
  const int64_t rows = cols > 0 ? x.size() / cols : 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x.data + r * cols;
    float* dst = out.view().data + r * cols;
    double sum = 0.0;
    for (int64_t j = 0; j < cols; ++j) sum += in[j];
    const double mean = sum / static_cast<double>(cols);
    double squares = 0.0;
    for (int64_t j = 0; j < cols; ++j) squares += (in[j] - mean) * (in[j] - mean);
    const double inv_std =
        1.0 / std::sqrt(squares / static_cast<double>(cols) + static_cast<double>(attrs.epsilon));
    for (int64_t j = 0; j < cols; ++j) {
      const auto k = static_cast<size_t>(j);
      const double v = (in[j] - mean) * inv_std * scale[k] + (bias.empty() ? 0.0 : double(bias[k]));
      dst[j] = static_cast<float>(v);
    }
  }
  out.finish();
}

void pad(const ir::PadAttrs& attrs, const ConstView& x_view, const View& y_view) {
  std::vector<float> storage;
  const ConstView x = densify(x_view, storage);
  const size_t rank = x.shape.size();
  IOS_ASSERT(attrs.pads.size() == 2 * rank && y_view.shape.size() == rank, "Pad: {} pads for {}", attrs.pads.size(),
             ir::to_string(x.shape));
  DenseOutput out(y_view);
  const auto xs = x.strides();
  std::vector<int64_t> index(rank, 0);
  const int64_t total = y_view.size();
  float* y = out.view().data;
  for (int64_t i = 0; i < total; ++i) {
    int64_t offset = 0;
    bool inside = true;
    for (size_t d = 0; d < rank; ++d) {
      int64_t src = index[d] - attrs.pads[d];
      const int64_t size = x.shape[d];
      if (src < 0 || src >= size) {
        switch (attrs.mode) {
          case ir::PadAttrs::Mode::kConstant:
            inside = false;
            break;
          case ir::PadAttrs::Mode::kEdge:
            src = std::clamp<int64_t>(src, 0, size - 1);
            break;
          case ir::PadAttrs::Mode::kReflect:
            // Mirror without repeating the edge; folds until inside.
            while (size > 1 && (src < 0 || src >= size)) src = src < 0 ? -src : 2 * (size - 1) - src;
            if (size == 1) src = 0;
            break;
        }
      }
      offset += src * xs[d];
    }
    y[i] = inside ? x.data[offset] : attrs.value;
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < y_view.shape[d]) break;
      index[d] = 0;
    }
  }
  out.finish();
}

void resize(const ir::ResizeAttrs& attrs, const ConstView& x, const View& y) {
  const size_t rank = attrs.spatial_rank();
  IOS_ASSERT(rank >= 1 && rank <= 3 && x.rank() == static_cast<int>(rank) + 2 &&
                 y.rank() == x.rank() && y.dim(0) == x.dim(0) && y.dim(1) == x.dim(1) &&
                 ir::Dims(y.shape.begin() + 2, y.shape.end()) == attrs.size,
             "Resize: {} -> {}", ir::to_string(x.shape), ir::to_string(y.shape));
  const int64_t channels = x.dim(1);
  // On T, H, W (ir/window.h); an added axis has one tap of weight 1.
  const ir::Axes3 in = ir::spatial3(x.shape), size = ir::spatial3(y.shape);
  const auto lead = static_cast<int64_t>(3 - rank);
  const bool linear = attrs.mode == ir::resize::Mode::kLinear;
  // Per output index of each axis: the input indices and weights (the same
  // for every channel).
  std::array<std::vector<ir::resize::LinearTaps>, 3> taps;
  for (int64_t d = 0; d < 3; ++d) {
    taps[d].resize(static_cast<size_t>(size[d]));
    if (d < lead) continue;  // one tap: index 0, weight 1
    const float scale = attrs.scale[static_cast<size_t>(d - lead)];
    for (int64_t i = 0; i < size[d]; ++i) {
      auto& t = taps[d][static_cast<size_t>(i)];
      if (linear) {
        t = ir::resize::linear_taps(attrs.coordinates, i, scale, in[d], size[d]);
      } else {
        t.i0 =
            ir::resize::nearest_index(attrs.coordinates, attrs.nearest, i, scale, in[d], size[d]);
      }
    }
  }
  const int64_t plane = in[1] * in[2];
  for (int64_t n = 0; n < x.batch(); ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      const float* volume = x.item(n) + c * ir::Window3::volume(in);
      float* out = y.item(n) + c * ir::Window3::volume(size);
      for (int64_t q = 0; q < size[0]; ++q) {
        const auto& tt = taps[0][static_cast<size_t>(q)];
        for (int64_t i = 0; i < size[1]; ++i) {
          const auto& r = taps[1][static_cast<size_t>(i)];
          for (int64_t j = 0; j < size[2]; ++j) {
            const auto& col = taps[2][static_cast<size_t>(j)];
            float& o = out[(q * size[1] + i) * size[2] + j];
            if (!linear) {
              o = volume[tt.i0 * plane + r.i0 * in[2] + col.i0];
              continue;
            }
            // Bilinear within a plane (ONNX Runtime's order); trilinear
            // blends the two planes' bilinear values.
            auto plane_value = [&](int64_t t) {
              const float* in_plane = volume + t * plane;
              return ir::resize::bilinear(
                  r, col, in_plane[r.i0 * in[2] + col.i0], in_plane[r.i0 * in[2] + col.i1],
                  in_plane[r.i1 * in[2] + col.i0], in_plane[r.i1 * in[2] + col.i1]);
            };
            o = rank < 3 ? plane_value(tt.i0)
                         : tt.w0 * plane_value(tt.i0) + tt.w1 * plane_value(tt.i1);
          }
        }
      }
    }
  }
}

// --- Dispatch -----------------------------------------------------------------

bool can_run_in_place(const ir::Node& node) { return ir::op_info(node.op).traits.in_place; }

namespace {

// --- The kernel table: one entry per ir::OpKind. ---------------------------

void need(const ir::Node& node, std::span<const ConstView> in, std::span<const View> out, size_t inputs,
          size_t outputs) {
  IOS_ASSERT(in.size() >= inputs && out.size() == outputs, "{} node '{}': {} inputs / {} outputs given",
             ir::op_name(node.op), node.name, in.size(), out.size());
}

// Element-wise operators with math in ir/elementwise.h: every such operator
// gets these two entries, so the table needs no line per operator.
void run_unary(const KernelContext&, const ir::Node& node, std::span<const ConstView> in, std::span<const View> out) {
  need(node, in, out, 1, 1);
  unary(node.op, ir::elementwise_params(node), in[0], out[0]);
}

void run_binary(const KernelContext&, const ir::Node& node, std::span<const ConstView> in,
                std::span<const View> out) {
  need(node, in, out, 2, 1);
  binary(node.op, in[0], in[1], out[0]);
}

void run_conv(const KernelContext& ctx, const ir::Node& node, std::span<const ConstView> in,
              std::span<const View> out) {
  need(node, in, out, 2, 1);
  conv(ctx, in[0], in[1].data, in.size() > 2 ? in[2].data : nullptr, node.attr<ir::ConvAttrs>(),
       out[0]);
}

void run_concat(const KernelContext&, const ir::Node& node, std::span<const ConstView> in,
                std::span<const View> out) {
  need(node, in, out, 1, 1);
  concat(node.attr<ir::AxisAttrs>().axis, in, out[0]);
}

void run_split(const KernelContext&, const ir::Node& node, std::span<const ConstView> in,
               std::span<const View> out) {
  need(node, in, out, 1, node.outputs.size());
  split(node.attr<ir::SplitAttrs>().axis, in[0], out);
}

void run_slice(const KernelContext&, const ir::Node& node, std::span<const ConstView> in,
               std::span<const View> out) {
  need(node, in, out, 1, 1);
  slice(node.attr<ir::SliceAttrs>(), in[0], out[0]);
}

void run_max_pool(const KernelContext&, const ir::Node& node, std::span<const ConstView> in,
                  std::span<const View> out) {
  need(node, in, out, 1, 1);
  max_pool(node.attr<ir::PoolAttrs>(), in[0], out[0]);
}

void run_average_pool(const KernelContext&, const ir::Node& node, std::span<const ConstView> in,
                      std::span<const View> out) {
  need(node, in, out, 1, 1);
  average_pool(node.attr<ir::PoolAttrs>(), in[0], out[0]);
}

void run_global_average_pool(const KernelContext&, const ir::Node& node, std::span<const ConstView> in,
                             std::span<const View> out) {
  need(node, in, out, 1, 1);
  global_average_pool(in[0], out[0]);
}

void run_reduce(const KernelContext&, const ir::Node& node, std::span<const ConstView> in,
                     std::span<const View> out) {
  need(node, in, out, 1, 1);
  reduce(node.op, node.attr<ir::ReduceAttrs>(), in[0], out[0]);
}

void run_conv_transpose(const KernelContext&, const ir::Node& node, std::span<const ConstView> in,
                        std::span<const View> out) {
  need(node, in, out, 2, 1);
  conv_transpose(node.attr<ir::ConvTransposeAttrs>(), in[0], in[1].data,
                 in.size() > 2 ? in[2].data : nullptr, out[0]);
}

void run_tile(const KernelContext&, const ir::Node& node, std::span<const ConstView> in, std::span<const View> out) {
  need(node, in, out, 1, 1);
  tile(node.attr<ir::TileAttrs>().repeats, in[0], out[0]);
}

void run_copy(const KernelContext&, const ir::Node& node, std::span<const ConstView> in, std::span<const View> out) {
  need(node, in, out, 1, 1);
  copy(in[0], out[0]);
}

void run_transpose(const KernelContext&, const ir::Node& node, std::span<const ConstView> in,
                   std::span<const View> out) {
  need(node, in, out, 1, 1);
  transpose(node.attr<ir::TransposeAttrs>().perm, in[0], out[0]);
}

void run_gemm(const KernelContext& ctx, const ir::Node& node, std::span<const ConstView> in,
              std::span<const View> out) {
  need(node, in, out, 2, 1);
  gemm(ctx, node.attr<ir::GemmAttrs>(), in[0], in[1], in.size() > 2 ? &in[2] : nullptr, out[0]);
}

void run_matmul(const KernelContext& ctx, const ir::Node& node, std::span<const ConstView> in,
                std::span<const View> out) {
  need(node, in, out, 2, 1);
  matmul(ctx, in[0], in[1], out[0]);
}

void run_softmax(const KernelContext&, const ir::Node& node, std::span<const ConstView> in,
                 std::span<const View> out) {
  need(node, in, out, 1, 1);
  softmax(node.attr<ir::AxisAttrs>().axis, node.op == ir::OpKind::kLogSoftmax, in[0], out[0]);
}

void run_pad(const KernelContext&, const ir::Node& node, std::span<const ConstView> in, std::span<const View> out) {
  need(node, in, out, 1, 1);
  pad(node.attr<ir::PadAttrs>(), in[0], out[0]);
}

void run_batch_norm(const KernelContext&, const ir::Node& node, std::span<const ConstView> in,
                    std::span<const View> out) {
  need(node, in, out, 5, 1);
  batch_norm(in[0], in[1].data, in[2].data, in[3].data, in[4].data, node.attr<ir::BatchNormAttrs>().epsilon, out[0]);
}

void run_resize(const KernelContext&, const ir::Node& node, std::span<const ConstView> in,
                std::span<const View> out) {
  need(node, in, out, 1, 1);
  resize(node.attr<ir::ResizeAttrs>(), in[0], out[0]);
}

void run_layer_norm(const KernelContext&, const ir::Node& node, std::span<const ConstView> in,
                    std::span<const View> out) {
  need(node, in, out, 2, 1);
  layer_norm(node.attr<ir::LayerNormAttrs>(), in[0], in[1], in.size() > 2 ? &in[2] : nullptr,
             out[0]);
}

using KernelTable = std::array<Kernel, static_cast<size_t>(ir::kNumOpKinds)>;

KernelTable make_kernel_table() {
  using K = ir::OpKind;
  KernelTable t{};
  auto set = [&t](K op, Kernel kernel) { t[static_cast<size_t>(op)] = kernel; };
  for (int i = 0; i < ir::kNumOpKinds; ++i) {
    const auto op = static_cast<K>(i);
    if (ir::ew::has_unary(op)) set(op, run_unary);
    if (ir::ew::has_binary(op)) set(op, run_binary);
  }
  set(K::kConv, run_conv);
  set(K::kConcat, run_concat);
  set(K::kSplit, run_split);
  set(K::kSlice, run_slice);
  set(K::kMaxPool, run_max_pool);
  set(K::kAveragePool, run_average_pool);
  set(K::kGlobalAveragePool, run_global_average_pool);
  for (K reduction : {K::kReduceMean, K::kReduceSum, K::kReduceMax, K::kReduceMin, K::kReduceProd, K::kReduceL1,
                      K::kReduceL2, K::kReduceSumSquare, K::kReduceLogSumExp}) {
    set(reduction, run_reduce);
  }
  set(K::kTile, run_tile);
  set(K::kConvTranspose, run_conv_transpose);
  set(K::kLogSoftmax, run_softmax);
  set(K::kFlatten, run_copy);  // Flatten and Reshape: the same elements in the same order
  set(K::kReshape, run_copy);
  set(K::kTranspose, run_transpose);
  set(K::kGemm, run_gemm);
  set(K::kMatMul, run_matmul);
  set(K::kSoftmax, run_softmax);
  set(K::kPad, run_pad);
  set(K::kBatchNorm, run_batch_norm);
  set(K::kResize, run_resize);
  set(K::kLayerNorm, run_layer_norm);
  return t;
}

}  // namespace

Kernel kernel_for(ir::OpKind op) {
  static const KernelTable table = make_kernel_table();
  const auto index = static_cast<size_t>(op);
  return index < table.size() ? table[index] : nullptr;
}

void run_node(const KernelContext& ctx, const ir::Node& node, std::span<const ConstView> in,
              std::span<const View> out) {
  const Kernel kernel = kernel_for(node.op);
  if (kernel == nullptr) {
    internal_error("no CPU kernel for operator {} (node '{}')", ir::op_name(node.op), node.name);
  }
  kernel(ctx, node, in, out);
}

}  // namespace ios::cpu
