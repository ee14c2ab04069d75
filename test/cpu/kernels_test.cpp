// The CPU kernels against direct loops written from the ONNX operator
// definitions (accumulating in double), on small cases chosen to hit the
// corners: groups, dilation, asymmetric pads, strides, ceil mode, padding
// counted or not, broadcasting, negative slice steps, strided views.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include "cpu/gemm.h"
#include "cpu/kernels.h"
#include "cpu_test_util.h"

namespace ios::cpu {
namespace {

using test::random_values;
using test::require_close;

// --- Convolution ------------------------------------------------------------

struct ConvCase {
  int64_t n, c, h, w, m;
  ir::ConvAttrs attrs;
};

std::vector<float> naive_conv(const ConvCase& k, const std::vector<float>& x, const std::vector<float>& w,
                              const std::vector<float>* bias, int64_t oh, int64_t ow) {
  const auto& a = k.attrs;
  const int64_t cg = k.c / a.group, mg = k.m / a.group;
  std::vector<float> y(static_cast<size_t>(k.n * k.m * oh * ow));
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t m = 0; m < k.m; ++m)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = bias ? (*bias)[static_cast<size_t>(m)] : 0.0;
          const int64_t g = m / mg;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t p = 0; p < a.kernel[0]; ++p)
              for (int64_t q = 0; q < a.kernel[1]; ++q) {
                const int64_t ih = i * a.stride[0] - a.pads[0] + p * a.dilation[0];
                const int64_t iw = j * a.stride[1] - a.pads[1] + q * a.dilation[1];
                if (ih < 0 || ih >= k.h || iw < 0 || iw >= k.w) continue;
                acc += static_cast<double>(x[static_cast<size_t>(((n * k.c + g * cg + c) * k.h + ih) * k.w + iw)]) *
                       w[static_cast<size_t>(((m * cg + c) * a.kernel[0] + p) * a.kernel[1] + q)];
              }
          y[static_cast<size_t>(((n * k.m + m) * oh + i) * ow + j)] = static_cast<float>(acc);
        }
  return y;
}

void check_conv(const ConvCase& k, int threads, bool with_bias = true) {
  const auto& a = k.attrs;
  const int64_t oh = (k.h + a.pads[0] + a.pads[2] - a.dilation[0] * (a.kernel[0] - 1) - 1) / a.stride[0] + 1;
  const int64_t ow = (k.w + a.pads[1] + a.pads[3] - a.dilation[1] * (a.kernel[1] - 1) - 1) / a.stride[1] + 1;
  const auto x = random_values(k.n * k.c * k.h * k.w, 1);
  const auto w = random_values(k.m * (k.c / a.group) * a.kernel[0] * a.kernel[1], 2);
  const auto b = random_values(k.m, 3);
  std::vector<float> y(static_cast<size_t>(k.n * k.m * oh * ow), std::numeric_limits<float>::quiet_NaN());
  conv(KernelContext{threads}, ConstView(x.data(), {k.n, k.c, k.h, k.w}), w.data(),
       with_bias ? b.data() : nullptr, a, View(y.data(), {k.n, k.m, oh, ow}));
  require_close(y, naive_conv(k, x, w, with_bias ? &b : nullptr, oh, ow));
}

ir::ConvAttrs conv_attrs(ios::ir::Dims kernel, ios::ir::Dims stride = {1, 1},
                         ios::ir::Dims pads = {0, 0, 0, 0}, ios::ir::Dims dilation = {1, 1},
                         int64_t group = 1) {
  ir::ConvAttrs a;
  a.kernel = kernel;
  a.stride = stride;
  a.pads = pads;
  a.dilation = dilation;
  a.group = group;
  return a;
}

TEST_CASE("conv2d matches direct loops", "[cpu][kernels]") {
  SECTION("3x3, pad 1") { check_conv({2, 3, 7, 6, 5, conv_attrs({3, 3}, {1, 1}, {1, 1, 1, 1})}, 1); }
  SECTION("1x1 direct GEMM path, no bias") { check_conv({2, 8, 5, 5, 6, conv_attrs({1, 1})}, 1, false); }
  SECTION("1x1 with stride 2 (im2col path)") { check_conv({1, 4, 7, 7, 3, conv_attrs({1, 1}, {2, 2})}, 1); }
  SECTION("asymmetric pads and rectangular kernel") {
    check_conv({1, 3, 6, 9, 4, conv_attrs({1, 3}, {1, 1}, {0, 2, 0, 1})}, 1);
    check_conv({1, 3, 9, 6, 4, conv_attrs({3, 1}, {1, 1}, {2, 0, 0, 0})}, 1);
    check_conv({1, 2, 8, 8, 3, conv_attrs({3, 3}, {2, 2}, {0, 0, 1, 1})}, 1);
  }
  SECTION("dilation") { check_conv({1, 3, 11, 10, 4, conv_attrs({3, 3}, {1, 1}, {2, 2, 2, 2}, {2, 2})}, 1); }
  SECTION("stride 2 with dilation and uneven pads") {
    check_conv({2, 4, 13, 12, 5, conv_attrs({3, 2}, {2, 3}, {1, 0, 2, 1}, {2, 1})}, 2);
  }
  SECTION("groups") { check_conv({2, 6, 6, 6, 9, conv_attrs({3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 3)}, 1); }
  SECTION("depthwise") {
    check_conv({2, 5, 9, 8, 5, conv_attrs({3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 5)}, 2);
    check_conv({1, 4, 7, 7, 4, conv_attrs({5, 5}, {1, 1}, {2, 2, 2, 2}, {1, 1}, 4)}, 1);
  }
  SECTION("depthwise with channel multiplier 2") {
    check_conv({1, 3, 6, 6, 6, conv_attrs({3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 3)}, 1);
  }
  SECTION("kernel larger than the input (all padding)") {
    check_conv({1, 2, 2, 2, 3, conv_attrs({5, 5}, {1, 1}, {2, 2,2, 2})}, 1);
  }
  SECTION("GEMM blocking edges and two threads") {
    // K = 35*9 = 315 > 256 (two K blocks), M = 130 > 120 (two M blocks) and
    // not a multiple of 6, N = 37*29 = 1073 > 1024 (two N blocks), not a multiple of 8.
    check_conv({1, 35, 37, 29, 130, conv_attrs({3, 3}, {1, 1}, {1, 1, 1, 1})}, 2);
  }
}

TEST_CASE("conv2d writes a channel slice of a larger buffer and nothing else", "[cpu][kernels]") {
  // Output channels [2, 5) of an 8-channel buffer, batch 2: the view's batch
  // stride is the big buffer's item size.
  const ConvCase k{2, 3, 5, 5, 3, conv_attrs({3, 3}, {1, 1}, {1, 1, 1, 1})};
  const auto x = random_values(2 * 3 * 25, 4);
  const auto w = random_values(3 * 3 * 9, 5);
  const auto b = random_values(3, 6);
  std::vector<float> big(2 * 8 * 25, -7.0f);
  const View slice(big.data() + 2 * 25, {2, 3, 5, 5}, 8 * 25);
  conv(KernelContext{2}, ConstView(x.data(), {2, 3, 5, 5}), w.data(), b.data(), k.attrs, slice);
  const auto expected = naive_conv(k, x, w, &b, 5, 5);
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t c = 0; c < 8; ++c) {
      for (int64_t i = 0; i < 25; ++i) {
        const float got = big[static_cast<size_t>((n * 8 + c) * 25 + i)];
        if (c >= 2 && c < 5) {
          REQUIRE(got == Approx(expected[static_cast<size_t>((n * 3 + c - 2) * 25 + i)]).margin(1e-5));
        } else {
          REQUIRE(got == -7.0f);
        }
      }
    }
  }
}

// --- GEMM -------------------------------------------------------------------

TEST_CASE("gemm_accumulate matches direct loops for odd sizes and transposed operands", "[cpu][kernels]") {
  for (auto [m, n, k] : {std::array<int64_t, 3>{1, 1, 1}, {7, 9, 5}, {13, 1030, 3}, {125, 17, 300}, {2, 1000, 64}}) {
    for (bool trans_a : {false, true}) {
      for (bool trans_b : {false, true}) {
        const auto a = random_values(m * k, 7), b = random_values(k * n, 8);
        auto c = random_values(m * n, 9);
        std::vector<float> expected(c);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double acc = expected[static_cast<size_t>(i * n + j)];
            for (int64_t p = 0; p < k; ++p) {
              const float av = trans_a ? a[static_cast<size_t>(p * m + i)] : a[static_cast<size_t>(i * k + p)];
              const float bv = trans_b ? b[static_cast<size_t>(j * k + p)] : b[static_cast<size_t>(p * n + j)];
              acc += static_cast<double>(av) * bv;
            }
            expected[static_cast<size_t>(i * n + j)] = static_cast<float>(acc);
          }
        const MatrixRef ma = trans_a ? MatrixRef{a.data(), 1, m} : MatrixRef{a.data(), k, 1};
        const MatrixRef mb = trans_b ? MatrixRef{b.data(), 1, k} : MatrixRef{b.data(), n, 1};
        gemm_accumulate(m, n, k, ma, mb, c.data(), n, 2);
        INFO("m=" << m << " n=" << n << " k=" << k << " transA=" << trans_a << " transB=" << trans_b);
        require_close(c, expected);
      }
    }
  }
}

TEST_CASE("Gemm node: transB, alpha, beta and a broadcast bias", "[cpu][kernels]") {
  const int64_t m = 3, k = 4, n = 5;
  const auto a = random_values(m * k, 10), b = random_values(n * k, 11), bias = random_values(n, 12);
  ir::GemmAttrs attrs;
  attrs.trans_b = true;
  attrs.alpha = 0.5f;
  attrs.beta = 2.0f;
  std::vector<float> y(static_cast<size_t>(m * n));
  const ConstView cv(bias.data(), {n});
  gemm(KernelContext{1}, attrs, ConstView(a.data(), {m, k}), ConstView(b.data(), {n, k}), &cv, View(y.data(), {m, n}));
  std::vector<float> expected(y.size());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += static_cast<double>(a[static_cast<size_t>(i * k + p)]) * b[static_cast<size_t>(j * k + p)];
      expected[static_cast<size_t>(i * n + j)] = static_cast<float>(0.5 * acc + 2.0 * bias[static_cast<size_t>(j)]);
    }
  require_close(y, expected);
}

TEST_CASE("MatMul: 2-D and batched with broadcast", "[cpu][kernels]") {
  // [2, 1, 3, 4] x [3, 4, 2] -> [2, 3, 3, 2]
  const auto a = random_values(2 * 3 * 4, 13), b = random_values(3 * 4 * 2, 14);
  std::vector<float> y(2 * 3 * 3 * 2);
  matmul(KernelContext{1}, ConstView(a.data(), {2, 1, 3, 4}), ConstView(b.data(), {3, 4, 2}),
         View(y.data(), {2, 3, 3, 2}));
  std::vector<float> expected(y.size());
  for (int64_t p = 0; p < 2; ++p)
    for (int64_t q = 0; q < 3; ++q)
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 2; ++j) {
          double acc = 0;
          for (int64_t r = 0; r < 4; ++r) {
            acc += static_cast<double>(a[static_cast<size_t>((p * 3 + i) * 4 + r)]) * b[static_cast<size_t>((q * 4 + r) * 2 + j)];
          }
          expected[static_cast<size_t>(((p * 3 + q) * 3 + i) * 2 + j)] = static_cast<float>(acc);
        }
  require_close(y, expected);
}

// --- Pooling ----------------------------------------------------------------

ir::PoolAttrs pool_attrs(ios::ir::Dims kernel, ios::ir::Dims stride, ios::ir::Dims pads,
                         bool ceil_mode = false, bool count_include_pad = false) {
  ir::PoolAttrs a;
  a.kernel = kernel;
  a.stride = stride;
  a.pads = pads;
  a.ceil_mode = ceil_mode;
  a.count_include_pad = count_include_pad;
  return a;
}

TEST_CASE("AveragePool counts padding only when asked", "[cpu][kernels]") {
  // A 1x1x3x3 input 1..9, kernel 3, stride 1, pad 1: the corner window holds
  // 1, 2, 4, 5 (sum 12) over 4 real cells or 9 padded cells.
  std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<float> y(9);
  average_pool(pool_attrs({3, 3}, {1, 1}, {1, 1, 1, 1}, false, false), ConstView(x.data(), {1, 1, 3, 3}),
               View(y.data(), {1, 1, 3, 3}));
  CHECK(y[0] == Approx(12.0 / 4));
  CHECK(y[1] == Approx(21.0 / 6));  // 1+2+3+4+5+6
  CHECK(y[4] == Approx(45.0 / 9));
  average_pool(pool_attrs({3, 3}, {1, 1}, {1, 1, 1, 1}, false, true), ConstView(x.data(), {1, 1, 3, 3}),
               View(y.data(), {1, 1, 3, 3}));
  CHECK(y[0] == Approx(12.0 / 9));
  CHECK(y[1] == Approx(21.0 / 9));
  CHECK(y[8] == Approx((5 + 6 + 8 + 9) / 9.0));
}

TEST_CASE("AveragePool with asymmetric pads and ceil mode", "[cpu][kernels]") {
  // 1x1x4x4 input 0..15, kernel 2, stride 2, pads {top 0, left 1, bottom 1, right 0},
  // ceil mode: H out = ceil((4 + 1 - 2) / 2) + 1 = 3, W out = 3.
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i);
  std::vector<float> y(9);
  const auto attrs = pool_attrs({2, 2}, {2, 2}, {0, 1, 1, 0}, true, true);
  average_pool(attrs, ConstView(x.data(), {1, 1, 4, 4}), View(y.data(), {1, 1, 3, 3}));
  // Direct evaluation of ONNX's definition: window clipped to the padded
  // extent [-pad_begin, size + pad_end), zeros counted, then to the input.
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      const int64_t h0 = i * 2, h1 = std::min<int64_t>(h0 + 2, 4 + 1);
      const int64_t w0 = j * 2 - 1, w1 = std::min<int64_t>(w0 + 2, 4 + 0);
      double sum = 0;
      for (int64_t p = std::max<int64_t>(h0, 0); p < std::min<int64_t>(h1, 4); ++p)
        for (int64_t q = std::max<int64_t>(w0, 0); q < std::min<int64_t>(w1, 4); ++q) sum += x[static_cast<size_t>(p * 4 + q)];
      CHECK(y[static_cast<size_t>(i * 3 + j)] == Approx(sum / static_cast<double>((h1 - h0) * (w1 - w0))));
    }
  // The last row's window is rows 4..5 of the padded input: row 4 is the
  // bottom pad, row 5 lies outside even the padded extent, so area 1 x width.
  CHECK(y[6] == Approx(0.0));
}

TEST_CASE("MaxPool with ceil mode and padding", "[cpu][kernels]") {
  // 1x1x5x5 input, kernel 2, stride 2, ceil mode: 3x3 output whose last
  // row/column windows hang over the edge and see only real cells.
  std::vector<float> x(25);
  for (int i = 0; i < 25; ++i) x[static_cast<size_t>(i)] = static_cast<float>((i * 7) % 11) - 5.0f;
  std::vector<float> y(9);
  max_pool(pool_attrs({2, 2}, {2, 2}, {0, 0, 0, 0}, true), ConstView(x.data(), {1, 1, 5, 5}),
           View(y.data(), {1, 1, 3, 3}));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      float best = -1e30f;
      for (int64_t p = 2 * i; p < std::min<int64_t>(2 * i + 2, 5); ++p)
        for (int64_t q = 2 * j; q < std::min<int64_t>(2 * j + 2, 5); ++q) best = std::max(best, x[static_cast<size_t>(p * 5 + q)]);
      CHECK(y[static_cast<size_t>(i * 3 + j)] == best);
    }
  // Padding never wins, even against negative values.
  std::vector<float> neg{-3, -1, -2, -4};
  std::vector<float> out(4);
  max_pool(pool_attrs({3, 3}, {1, 1}, {1, 1, 1, 1}), ConstView(neg.data(), {1, 1, 2, 2}), View(out.data(), {1, 1, 2, 2}));
  for (float v : out) CHECK(v == -1.0f);
}

TEST_CASE("GlobalAveragePool and ReduceMean", "[cpu][kernels]") {
  const auto x = random_values(2 * 3 * 4 * 5, 15);
  std::vector<float> gap(6);
  global_average_pool(ConstView(x.data(), {2, 3, 4, 5}), View(gap.data(), {2, 3, 1, 1}));
  std::vector<float> rm(6);
  ir::ReduceAttrs attrs;
  attrs.axes = {2, 3};
  attrs.keepdims = false;
  reduce_mean(attrs, ConstView(x.data(), {2, 3, 4, 5}), View(rm.data(), {2, 3}));
  std::vector<float> expected(6);
  for (int64_t i = 0; i < 6; ++i) {
    double s = 0;
    for (int64_t j = 0; j < 20; ++j) s += x[static_cast<size_t>(i * 20 + j)];
    expected[static_cast<size_t>(i)] = static_cast<float>(s / 20);
  }
  require_close(gap, expected);
  require_close(rm, expected);
  // Over the channel axis, keeping dims: [2, 1, 4, 5].
  std::vector<float> rc(2 * 20);
  attrs.axes = {1};
  attrs.keepdims = true;
  reduce_mean(attrs, ConstView(x.data(), {2, 3, 4, 5}), View(rc.data(), {2, 1, 4, 5}));
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t i = 0; i < 20; ++i) {
      double s = 0;
      for (int64_t c = 0; c < 3; ++c) s += x[static_cast<size_t>((n * 3 + c) * 20 + i)];
      CHECK(rc[static_cast<size_t>(n * 20 + i)] == Approx(s / 3).margin(1e-6));
    }
}

// --- Element-wise -----------------------------------------------------------

TEST_CASE("unary activations follow their ONNX definitions", "[cpu][kernels]") {
  std::vector<float> x{-4.0f, -3.0f, -1.0f, -0.25f, 0.0f, 0.5f, 2.0f, 3.0f, 7.0f};
  std::vector<float> y(x.size());
  const ConstView in(x.data(), {9});
  const View out(y.data(), {9});
  auto check = [&](ir::OpKind op, ir::ew::Params p, auto fn) {
    unary(op, p, in, out);
    for (size_t i = 0; i < x.size(); ++i) CHECK(y[i] == Approx(fn(x[i])).margin(1e-7));
  };
  check(ir::OpKind::kRelu, {}, [](float v) { return v > 0 ? v : 0.0f; });
  check(ir::OpKind::kClip, {0.0f, 6.0f}, [](float v) { return std::min(6.0f, std::max(0.0f, v)); });
  check(ir::OpKind::kSigmoid, {}, [](float v) { return 1.0 / (1.0 + std::exp(-static_cast<double>(v))); });
  check(ir::OpKind::kHardSigmoid, {0.2f, 0.5f}, [](float v) { return std::min(1.0, std::max(0.0, 0.2 * v + 0.5)); });
  check(ir::OpKind::kHardSwish, {}, [](float v) { return v * std::min(1.0, std::max(0.0, v / 6.0 + 0.5)); });
  // In place.
  std::vector<float> z = x;
  unary(ir::OpKind::kRelu, {}, ConstView(z.data(), {9}), View(z.data(), {9}));
  for (size_t i = 0; i < x.size(); ++i) CHECK(z[i] == std::max(0.0f, x[i]));
}

TEST_CASE("Add and Mul broadcast like numpy", "[cpu][kernels]") {
  const auto a = random_values(2 * 3 * 4 * 5, 16);
  const auto b = random_values(3 * 1 * 5, 17);  // [3, 1, 5] against [2, 3, 4, 5]
  std::vector<float> y(a.size());
  binary(ir::OpKind::kAdd, ConstView(a.data(), {2, 3, 4, 5}), ConstView(b.data(), {3, 1, 5}), View(y.data(), {2, 3, 4, 5}));
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t h = 0; h < 4; ++h)
        for (int64_t w = 0; w < 5; ++w) {
          const auto i = static_cast<size_t>(((n * 3 + c) * 4 + h) * 5 + w);
          REQUIRE(y[i] == a[i] + b[static_cast<size_t>(c * 5 + w)]);
        }
  // Per-channel scale [1, 3, 1, 1] (squeeze-and-excitation style), Mul.
  const auto s = random_values(3, 18);
  binary(ir::OpKind::kMul, ConstView(s.data(), {1, 3, 1, 1}), ConstView(a.data(), {2, 3, 4, 5}), View(y.data(), {2, 3, 4, 5}));
  for (size_t i = 0; i < a.size(); ++i) REQUIRE(y[i] == a[i] * s[(i / 20) % 3]);
  // Same shapes, one operand a strided view (channels 1..2 of a 4-channel buffer).
  const auto big = random_values(2 * 4 * 6, 19);
  const auto c = random_values(2 * 2 * 6, 20);
  std::vector<float> out(2 * 2 * 6);
  binary(ir::OpKind::kAdd, ConstView(big.data() + 6, {2, 2, 6}, 24), ConstView(c.data(), {2, 2, 6}), View(out.data(), {2, 2, 6}));
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t i = 0; i < 12; ++i) {
      REQUIRE(out[static_cast<size_t>(n * 12 + i)] == big[static_cast<size_t>(n * 24 + 6 + i)] + c[static_cast<size_t>(n * 12 + i)]);
    }
}

TEST_CASE("BatchNorm per channel", "[cpu][kernels]") {
  const auto x = random_values(2 * 3 * 4, 21);
  const std::vector<float> scale{1.5f, -0.5f, 2.0f}, bias{0.1f, 0.2f, -0.3f}, mean{0.05f, -0.1f, 0.2f},
      var{0.5f, 1.5f, 0.01f};
  std::vector<float> y(x.size());
  batch_norm(ConstView(x.data(), {2, 3, 2, 2}), scale.data(), bias.data(), mean.data(), var.data(), 1e-3f,
             View(y.data(), {2, 3, 2, 2}));
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t c = (i / 4) % 3;
    CHECK(y[i] == Approx((x[i] - mean[c]) / std::sqrt(var[c] + 1e-3) * scale[c] + bias[c]).margin(1e-5));
  }
}

TEST_CASE("Softmax along an axis", "[cpu][kernels]") {
  const auto x = random_values(2 * 3 * 4, 22, -10.0f, 10.0f);
  std::vector<float> y(x.size());
  softmax(1, ConstView(x.data(), {2, 3, 4}), View(y.data(), {2, 3, 4}));
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t i = 0; i < 4; ++i) {
      double total = 0;
      for (int64_t c = 0; c < 3; ++c) total += std::exp(static_cast<double>(x[static_cast<size_t>((n * 3 + c) * 4 + i)]));
      for (int64_t c = 0; c < 3; ++c) {
        const auto k = static_cast<size_t>((n * 3 + c) * 4 + i);
        CHECK(y[k] == Approx(std::exp(static_cast<double>(x[k])) / total).margin(1e-6));
      }
    }
  // Large logits do not overflow.
  std::vector<float> big{1000.0f, 1000.0f}, out(2);
  softmax(0, ConstView(big.data(), {2}), View(out.data(), {2}));
  CHECK(out[0] == Approx(0.5));
}

// --- Layout -----------------------------------------------------------------

TEST_CASE("Concat and Split along channels and other axes", "[cpu][kernels]") {
  const auto a = random_values(2 * 2 * 3, 23), b = random_values(2 * 1 * 3, 24);
  std::vector<float> y(2 * 3 * 3);
  const std::vector<ConstView> ins{ConstView(a.data(), {2, 2, 3}), ConstView(b.data(), {2, 1, 3})};
  concat(1, ins, View(y.data(), {2, 3, 3}));
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t w = 0; w < 3; ++w) {
        const float want = c < 2 ? a[static_cast<size_t>((n * 2 + c) * 3 + w)] : b[static_cast<size_t>(n * 3 + w)];
        REQUIRE(y[static_cast<size_t>((n * 3 + c) * 3 + w)] == want);
      }
  // Split undoes it.
  std::vector<float> a2(a.size()), b2(b.size());
  const std::vector<View> outs{View(a2.data(), {2, 2, 3}), View(b2.data(), {2, 1, 3})};
  split(1, ConstView(y.data(), {2, 3, 3}), outs);
  CHECK(a2 == a);
  CHECK(b2 == b);
  // Last axis.
  std::vector<float> z(2 * 2 * 6);
  concat(2, std::vector<ConstView>{ConstView(a.data(), {2, 2, 3}), ConstView(a.data(), {2, 2, 3})}, View(z.data(), {2, 2, 6}));
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t w = 0; w < 6; ++w) REQUIRE(z[static_cast<size_t>(r * 6 + w)] == a[static_cast<size_t>(r * 3 + w % 3)]);
}

TEST_CASE("Concat skips inputs already written into their slice", "[cpu][kernels]") {
  // The first input is a view into the output's channels [0, 2) (a producer
  // wrote there): it must stay as written (a memcpy onto itself would be
  // undefined behaviour, so the kernel skips it), and the second is copied.
  std::vector<float> y(2 * 3 * 4, 0.0f);
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t i = 0; i < 8; ++i) y[static_cast<size_t>(n * 12 + i)] = static_cast<float>(100 * n + i);
  const auto b = random_values(2 * 4, 25);
  const std::vector<ConstView> ins{ConstView(y.data(), {2, 2, 4}, 12), ConstView(b.data(), {2, 1, 4})};
  concat(1, ins, View(y.data(), {2, 3, 4}));
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t i = 0; i < 8; ++i) REQUIRE(y[static_cast<size_t>(n * 12 + i)] == static_cast<float>(100 * n + i));
    for (int64_t i = 0; i < 4; ++i) REQUIRE(y[static_cast<size_t>(n * 12 + 8 + i)] == b[static_cast<size_t>(n * 4 + i)]);
  }
}

TEST_CASE("Slice with steps, including negative ones", "[cpu][kernels]") {
  std::vector<float> x(4 * 6);
  for (int i = 0; i < 24; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i);
  ir::SliceAttrs attrs;
  // Rows 3, 1 (start 3, step -2) and columns 1, 4 (start 1, end 6, step 3).
  attrs.axes = {0, 1};
  attrs.starts = {3, 1};
  attrs.ends = {0, 6};
  attrs.steps = {-2, 3};
  std::vector<float> y(4);
  slice(attrs, ConstView(x.data(), {4, 6}), View(y.data(), {2, 2}));
  CHECK(y == std::vector<float>{19, 22, 7, 10});
}

TEST_CASE("Transpose and Pad", "[cpu][kernels]") {
  std::vector<float> x(2 * 3 * 4);
  for (int i = 0; i < 24; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i);
  std::vector<float> y(24);
  transpose({2, 0, 1}, ConstView(x.data(), {2, 3, 4}), View(y.data(), {4, 2, 3}));
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t k = 0; k < 3; ++k) REQUIRE(y[static_cast<size_t>((i * 2 + j) * 3 + k)] == x[static_cast<size_t>((j * 3 + k) * 4 + i)]);

  const std::vector<float> row{1, 2, 3};
  std::vector<float> out(7);
  ir::PadAttrs pad_attrs;
  pad_attrs.pads = {2, 2};
  pad_attrs.value = 9.0f;
  pad(pad_attrs, ConstView(row.data(), {3}), View(out.data(), {7}));
  CHECK(out == std::vector<float>{9, 9, 1, 2, 3, 9, 9});
  pad_attrs.mode = ir::PadAttrs::Mode::kEdge;
  pad(pad_attrs, ConstView(row.data(), {3}), View(out.data(), {7}));
  CHECK(out == std::vector<float>{1, 1, 1, 2, 3, 3, 3});
  pad_attrs.mode = ir::PadAttrs::Mode::kReflect;
  pad(pad_attrs, ConstView(row.data(), {3}), View(out.data(), {7}));
  CHECK(out == std::vector<float>{3, 2, 1, 2, 3, 2, 1});
  // Negative pads crop.
  pad_attrs.mode = ir::PadAttrs::Mode::kConstant;
  pad_attrs.pads = {-1, 1};
  std::vector<float> cropped(3);
  pad(pad_attrs, ConstView(row.data(), {3}), View(cropped.data(), {3}));
  CHECK(cropped == std::vector<float>{2, 3, 9});
}

}  // namespace
}  // namespace ios::cpu
