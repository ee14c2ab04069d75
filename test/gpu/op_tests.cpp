// Every operator the importer accepts, on the GPU, against the CPU reference
// interpreter (cpu/reference.h) on random inputs: FP32 with a tight
// tolerance (CUDA graph on and off) and TF32 with a loose one. Each graph is
// built at batch 1 and at batch 3 (strided concat slices differ).
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>

#include "core/error.h"
#include "cpu/reference.h"
#include "gpu_util.h"

namespace ios::gputest {
namespace {

using ir::OpKind;

void for_batches(const std::string& what, const std::function<void(GraphBuilder&, int64_t)>& build) {
  for (int64_t batch : {1, 3}) {
    GraphBuilder b;
    build(b, batch);
    check_against_reference(b.graph(), what + " at batch " + std::to_string(batch));
  }
}

ir::ClipAttrs clip(float lo, float hi) {
  ir::ClipAttrs a;
  a.min = lo;
  a.max = hi;
  return a;
}

ir::PoolAttrs pool(int64_t k, int64_t s, ios::ir::Dims pads, bool ceil = false,
                   bool include = false) {
  ir::PoolAttrs a;
  a.kernel = {k, k};
  a.stride = {s, s};
  a.pads = pads;
  a.ceil_mode = ceil;
  a.count_include_pad = include;
  return a;
}

ir::AxisAttrs axis(int64_t a) {
  ir::AxisAttrs x;
  x.axis = a;
  return x;
}

TEST_CASE("convolutions with fused and own epilogues", "[gpu][ops]") {
  for_batches("conv 3x3 + bias + relu (cuDNN fused)", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 8, 12, 12});
    b.output(b.node(OpKind::kRelu, "y", {b.conv("c", x, 16, 3, 1, {1, 1, 1, 1})}));
  });
  for_batches("conv 1x1 without bias", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 8, 7, 7});
    b.output(b.conv("y", x, 16, 1, 1, {0, 0, 0, 0}, 1, false));
  });
  for_batches("conv 3x3/2 asymmetric pads + clip", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 6, 11, 11});
    b.output(b.node(OpKind::kClip, "y", {b.conv("c", x, 8, 3, 2, {0, 0, 1, 1})}, clip(0.0f, 0.5f)));
  });
  for_batches("depthwise 3x3 + hardswish", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 8, 10, 10});
    b.output(b.node(OpKind::kHardSwish, "y", {b.conv("c", x, 8, 3, 1, {1, 1, 1, 1}, 8)}));
  });
  for_batches("grouped 5x5 + sigmoid", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 8, 9, 9});
    b.output(b.node(OpKind::kSigmoid, "y", {b.conv("c", x, 12, 5, 1, {2, 2, 2, 2}, 2)}));
  });
  for_batches("dilated 3x3 + hardsigmoid", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 4, 12, 12});
    ir::HardSigmoidAttrs hs;
    hs.alpha = 0.3f;
    hs.beta = 0.4f;
    b.output(b.node(OpKind::kHardSigmoid, "y", {b.conv("c", x, 6, 3, 1, {2, 2, 2, 2}, 1, true, 2)}, hs));
  });
  for_batches("stem 7x7/2", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 3, 32, 32});
    b.output(b.node(OpKind::kRelu, "y", {b.conv("c", x, 8, 7, 2, {3, 3, 3, 3})}));
  });
  for_batches("relu -> separable conv (IOS SepConv unit)", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 8, 10, 10});
    const auto r = b.node(OpKind::kRelu, "r", {x});
    const auto dw = b.conv("dw", r, 8, 3, 1, {1, 1, 1, 1}, 8, false);
    b.output(b.conv("y", dw, 12, 1));
  });
}

TEST_CASE("element-wise operators and broadcasting", "[gpu][ops]") {
  for_batches("residual add + relu", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 8, 6, 6});
    const auto c = b.conv("c", x, 8, 3, 1, {1, 1, 1, 1});
    b.output(b.node(OpKind::kRelu, "y", {b.node(OpKind::kAdd, "sum", {c, x})}));
  });
  for_batches("squeeze-excitation gate (per sample and channel)", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 8, 7, 7});
    const auto g = b.node(OpKind::kGlobalAveragePool, "gap", {x});
    const auto s = b.node(OpKind::kSigmoid, "s", {b.conv("fc", g, 8, 1)});
    b.output(b.node(OpKind::kMul, "y", {x, s}));
  });
  for_batches("per-channel and scalar constants, general broadcast", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 4, 5, 6});
    const auto r = b.node(OpKind::kRelu, "r", {x});
    const auto a = b.node(OpKind::kAdd, "a", {r, b.weight("ch", {4, 1, 1})});
    const auto m = b.node(OpKind::kMul, "m", {a, b.weight("sc", {1})});
    const auto row = b.input("row", {1, 1, 1, 6});
    b.output(b.node(OpKind::kAdd, "y", {m, row}));
  });
  for_batches("batch norm after a concat", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 3, 5, 5});
    const auto c = b.conv("c", x, 5, 3, 1, {1, 1, 1, 1});
    const auto cat = b.node(OpKind::kConcat, "cat", {c, x}, axis(1));
    const auto scale = b.weight("gamma", {8}, 1.0f);
    const auto bias = b.weight("beta", {8}, 1.0f);
    const auto mean = b.weight("mean", {8}, 1.0f);
    std::vector<float> var(8);
    for (size_t i = 0; i < var.size(); ++i) var[i] = 0.5f + 0.1f * static_cast<float>(i);
    const auto v = b.constant("var", {8}, var);
    b.output(b.node(OpKind::kBatchNorm, "y", {cat, scale, bias, mean, v}, ir::BatchNormAttrs{}));
  });
}

TEST_CASE("concatenation, split and slice", "[gpu][ops]") {
  for_batches("zero-copy concat with a copied graph input", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 8, 10, 10});
    const auto a = b.node(OpKind::kRelu, "a", {b.conv("a_conv", x, 4, 1)});
    const auto c = b.conv("b", x, 6, 3, 1, {1, 1, 1, 1});
    const auto p = b.node(OpKind::kMaxPool, "p", {x}, pool(3, 1, {1, 1, 1, 1}));
    const auto cat = b.node(OpKind::kConcat, "cat", {a, c, p, x}, axis(1));
    b.output(b.node(OpKind::kRelu, "y", {cat}));
  });
  for_batches("nested concat (views of views)", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 4, 6, 6});
    const auto a = b.conv("a", x, 3, 1);
    const auto c = b.conv("c", x, 5, 3, 1, {1, 1, 1, 1});
    const auto inner = b.node(OpKind::kConcat, "inner", {a, c}, axis(1));
    const auto d = b.conv("d", x, 2, 1);
    b.output(b.node(OpKind::kConcat, "y", {d, inner}, axis(1)));
  });
  for_batches("concat along H", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 4, 6, 6});
    const auto a = b.conv("a", x, 4, 1);
    const auto c = b.conv("c", x, 4, 3, 1, {1, 1, 1, 1});
    b.output(b.node(OpKind::kConcat, "y", {a, c}, axis(2)));
  });
  for_batches("split then convolve the halves", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 8, 6, 6});
    ir::SplitAttrs s;
    s.axis = 1;
    s.sizes = {3, 5};
    const auto first = b.node(OpKind::kSplit, "s", {x}, s, 2);
    const ir::TensorId second = first + 1;  // the builder adds the outputs consecutively
    const auto a = b.conv("a", first, 4, 1);
    const auto c = b.conv("c", second, 4, 3, 1, {1, 1, 1, 1});
    b.output(b.node(OpKind::kConcat, "y", {a, c}, axis(1)));
  });
  for_batches("slice with a step and a reversed axis", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 4, 7, 8});
    ir::SliceAttrs s;
    s.axes = {2, 3, 1};
    s.starts = {1, 0, 3};
    s.ends = {7, 8, -1};
    s.steps = {1, 2, -1};
    b.output(b.node(OpKind::kSlice, "y", {x}, s));
  });
}

TEST_CASE("pooling and reductions", "[gpu][ops]") {
  for_batches("max pool 3x3/2 pad 1 (cuDNN)", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 4, 11, 11});
    b.output(b.node(OpKind::kMaxPool, "y", {x}, pool(3, 2, {1, 1, 1, 1})));
  });
  for_batches("max pool ceil mode (own kernel)", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 4, 10, 10});
    b.output(b.node(OpKind::kMaxPool, "y", {x}, pool(3, 2, {0, 0, 0, 0}, true)));
  });
  for_batches("average pool counting / excluding padding (cuDNN)", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 4, 9, 9});
    b.output(b.node(OpKind::kAveragePool, "inc", {x}, pool(3, 1, {1, 1, 1, 1}, false, true)));
    b.output(b.node(OpKind::kAveragePool, "exc", {x}, pool(3, 1, {1, 1, 1, 1}, false, false)));
  });
  for_batches("average pool with asymmetric pads (own kernel)", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 4, 9, 9});
    b.output(b.node(OpKind::kAveragePool, "y", {x}, pool(2, 2, {0, 0, 1, 1}, false, false)));
  });
  for_batches("global average pool, reduce-mean over H,W and over C", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 6, 7, 5});
    b.output(b.node(OpKind::kGlobalAveragePool, "gap", {x}));
    ir::ReduceAttrs hw;
    hw.axes = {2, 3};
    hw.keepdims = false;
    b.output(b.node(OpKind::kReduceMean, "hw", {x}, hw));
    ir::ReduceAttrs c;
    c.axes = {1};
    c.keepdims = true;
    b.output(b.node(OpKind::kReduceMean, "c", {x}, c));
  });
}

// --- Windows over one and three spatial axes --------------------------------

// Every case in FP32 (CUDA graph on and off) and TF32 against the CPU
// reference, and converted to float16 and bfloat16 against the CPU executor
// on the converted graph, at batch 1 and 3.
void for_batches_and_types(const std::string& what,
                           const std::function<void(GraphBuilder&, int64_t)>& build) {
  for_batches(what, build);
  for (int64_t batch : {1, 3}) {
    GraphBuilder b;
    build(b, batch);
    check_half_against_executor(b.graph(), what + " at batch " + std::to_string(batch));
  }
}

// A convolution over as many spatial axes as `k` has, random weights
// [out, in / group, k...] and a bias.
ir::TensorId conv_nd(GraphBuilder& b, const std::string& name, ir::TensorId x, int64_t out,
                     ir::Dims k, ir::Dims stride, ir::Dims pads, int64_t group = 1,
                     bool bias = true, ir::Dims dilation = {}) {
  const int64_t in = b.graph().tensor(x).shape.at(1);
  ir::ConvAttrs a;
  a.kernel = k;
  a.stride = std::move(stride);
  a.dilation = dilation.empty() ? ir::Dims(k.size(), 1) : std::move(dilation);
  a.pads = std::move(pads);
  a.group = group;
  ir::Shape w{out, in / group};
  int64_t taps = in / group;
  for (int64_t d : k) w.push_back(d), taps *= d;
  const float scale = 1.7f / static_cast<float>(std::sqrt(static_cast<double>(taps)));
  std::vector<ir::TensorId> inputs{x, b.weight(name + ".w", w, scale)};
  if (bias) inputs.push_back(b.weight(name + ".b", {out}, 0.2f));
  return b.node(OpKind::kConv, name, std::move(inputs), a);
}

// A transposed convolution, weights [in, out / group, k...] and a bias.
ir::TensorId conv_transpose_nd(GraphBuilder& b, const std::string& name, ir::TensorId x,
                               int64_t out, ir::Dims k, ir::Dims stride, ir::Dims pads,
                               ir::Dims output_padding, int64_t group = 1) {
  const int64_t in = b.graph().tensor(x).shape.at(1);
  ir::ConvTransposeAttrs a;
  a.kernel = k;
  a.stride = std::move(stride);
  a.dilation = ir::Dims(k.size(), 1);
  a.pads = std::move(pads);
  a.output_padding = std::move(output_padding);
  a.group = group;
  ir::Shape w{in, out / group};
  int64_t taps = in / group;
  for (int64_t d : k) w.push_back(d), taps *= d;
  const float scale = 1.7f / static_cast<float>(std::sqrt(static_cast<double>(taps)));
  return b.node(OpKind::kConvTranspose, name,
                {x, b.weight(name + ".w", w, scale), b.weight(name + ".b", {out}, 0.2f)}, a);
}

ir::PoolAttrs pool_nd(ir::Dims k, ir::Dims s, ir::Dims pads, bool ceil = false,
                      bool include = false, ir::Dims dilation = {}) {
  ir::PoolAttrs a;
  a.dilation = dilation.empty() ? ir::Dims(k.size(), 1) : std::move(dilation);
  a.kernel = std::move(k);
  a.stride = std::move(s);
  a.pads = std::move(pads);
  a.ceil_mode = ceil;
  a.count_include_pad = include;
  return a;
}

ir::ResizeAttrs resize_nd(const ir::Shape& x, std::vector<float> scale, ir::resize::Mode mode,
                          ir::resize::Coordinates coordinates) {
  ir::ResizeAttrs a;
  a.mode = mode;
  a.coordinates = coordinates;
  a.size.clear();
  for (size_t i = 0; i < scale.size(); ++i)
    a.size.push_back(static_cast<int64_t>(std::floor(static_cast<float>(x[i + 2]) * scale[i])));
  a.scale = std::move(scale);
  return a;
}

TEST_CASE("convolutions over one and three spatial axes", "[gpu][ops]") {
  for_batches_and_types(
      "conv1d k3 + bias + relu (cuDNN fused, H = 1)", [](GraphBuilder& b, int64_t n) {
        const auto x = b.input("x", {n, 6, 20});
        b.output(b.node(OpKind::kRelu, "y", {conv_nd(b, "c", x, 8, {3}, {1}, {1, 1})}));
      });
  for_batches_and_types(
      "conv1d k5/2 dilated 2, asymmetric pads + clip", [](GraphBuilder& b, int64_t n) {
        const auto x = b.input("x", {n, 4, 23});
        b.output(b.node(OpKind::kClip, "y", {conv_nd(b, "c", x, 6, {5}, {2}, {1, 3}, 1, true, {2})},
                        clip(0.0f, 0.5f)));
      });
  for_batches_and_types("conv1d depthwise + hardswish", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 6, 17});
    b.output(b.node(OpKind::kHardSwish, "y", {conv_nd(b, "c", x, 6, {3}, {1}, {1, 1}, 6)}));
  });
  for_batches_and_types(
      "conv3d 3x3x3 + residual add + relu (cuDNN fused)", [](GraphBuilder& b, int64_t n) {
        const auto x = b.input("x", {n, 4, 5, 6, 7});
        const auto c = conv_nd(b, "c", x, 4, {3, 3, 3}, {1, 1, 1}, {1, 1, 1, 1, 1, 1});
        b.output(b.node(OpKind::kRelu, "y", {b.node(OpKind::kAdd, "sum", {c, x})}));
      });
  for_batches_and_types(
      "conv3d 3x3x3/2 grouped, asymmetric pads, no bias", [](GraphBuilder& b, int64_t n) {
        const auto x = b.input("x", {n, 4, 6, 7, 8});
        b.output(conv_nd(b, "y", x, 6, {3, 3, 3}, {2, 2, 2}, {0, 1, 0, 1, 0, 1}, 2, false));
      });
  for_batches_and_types("conv3d (1,3,3) dilated + sigmoid", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 3, 4, 9, 9});
    b.output(b.node(
        OpKind::kSigmoid, "y",
        {conv_nd(b, "c", x, 5, {1, 3, 3}, {1, 1, 1}, {0, 2, 2, 0, 2, 2}, 1, true, {1, 2, 2})}));
  });
}

TEST_CASE(
    "transposed convolutions over one and three spatial axes, bias and activation in one pass",
    "[gpu][ops]") {
  for_batches_and_types("conv-transpose1d k4/2 + bias + relu", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 6, 9});
    b.output(b.node(OpKind::kRelu, "y", {conv_transpose_nd(b, "t", x, 4, {4}, {2}, {1, 1}, {0})}));
  });
  for_batches_and_types("conv-transpose3d k3/2 output padding, grouped + sigmoid",
                        [](GraphBuilder& b, int64_t n) {
                          const auto x = b.input("x", {n, 4, 3, 4, 5});
                          b.output(b.node(OpKind::kSigmoid, "y",
                                          {conv_transpose_nd(b, "t", x, 6, {3, 3, 3}, {2, 2, 2},
                                                             {1, 1, 1, 1, 1, 1}, {1, 1, 1}, 2)}));
                        });
}

TEST_CASE("pooling over one and three spatial axes, dilated MaxPool", "[gpu][ops]") {
  for_batches_and_types(
      "max pool 1-D k3/2 pad 1 (cuDNN), ceil mode and dilated (own)",
      [](GraphBuilder& b, int64_t n) {
        const auto x = b.input("x", {n, 4, 21});
        b.output(b.node(OpKind::kMaxPool, "cudnn", {x}, pool_nd({3}, {2}, {1, 1})));
        b.output(b.node(OpKind::kMaxPool, "ceil", {x}, pool_nd({3}, {2}, {0, 0}, true)));
        b.output(
            b.node(OpKind::kMaxPool, "dilated", {x}, pool_nd({3}, {1}, {2, 2}, false, false, {2})));
      });
  for_batches_and_types(
      "max pool 3-D k3/2 pad 1 (cuDNN), dilated with ceil mode (own)",
      [](GraphBuilder& b, int64_t n) {
        const auto x = b.input("x", {n, 3, 6, 7, 8});
        b.output(b.node(OpKind::kMaxPool, "cudnn", {x},
                        pool_nd({3, 3, 3}, {2, 2, 2}, {1, 1, 1, 1, 1, 1})));
        b.output(b.node(OpKind::kMaxPool, "dilated", {x},
                        pool_nd({2, 3, 2}, {1, 2, 2}, {0, 1, 0, 0, 1, 1}, true, false, {2, 1, 2})));
      });
  for_batches_and_types(
      "average pool 3-D counting / excluding padding (cuDNN), asymmetric (own)",
      [](GraphBuilder& b, int64_t n) {
        const auto x = b.input("x", {n, 3, 5, 6, 7});
        b.output(b.node(OpKind::kAveragePool, "inc", {x},
                        pool_nd({3, 3, 3}, {1, 2, 2}, {1, 1, 1, 1, 1, 1}, false, true)));
        b.output(b.node(OpKind::kAveragePool, "exc", {x},
                        pool_nd({3, 3, 3}, {1, 2, 2}, {1, 1, 1, 1, 1, 1}, false, false)));
        b.output(b.node(OpKind::kAveragePool, "asym", {x},
                        pool_nd({2, 2, 2}, {2, 2, 2}, {0, 0, 0, 1, 1, 1}, false, true)));
      });
  for_batches_and_types(
      "average pool 1-D with asymmetric pads (own)", [](GraphBuilder& b, int64_t n) {
        const auto x = b.input("x", {n, 4, 15});
        b.output(b.node(OpKind::kAveragePool, "y", {x}, pool_nd({4}, {3}, {1, 2})));
      });
  for_batches_and_types("global average pool and reduce-mean over L and over T,H,W",
                        [](GraphBuilder& b, int64_t n) {
                          const auto l = b.input("l", {n, 5, 19});
                          const auto v = b.input("v", {n, 4, 3, 5, 6});
                          b.output(b.node(OpKind::kGlobalAveragePool, "gap1", {l}));
                          b.output(b.node(OpKind::kGlobalAveragePool, "gap3", {v}));
                          ir::ReduceAttrs thw;
                          thw.axes = {2, 3, 4};
                          thw.keepdims = false;
                          b.output(b.node(OpKind::kReduceMean, "thw", {v}, thw));
                        });
}

TEST_CASE("Resize and BatchNormalization over one and three spatial axes", "[gpu][ops]") {
  using ir::resize::Coordinates;
  using ir::resize::Mode;
  for_batches_and_types("resize 1-D nearest and linear", [](GraphBuilder& b, int64_t n) {
    const ir::Shape s{n, 3, 11};
    const auto x = b.input("x", s);
    b.output(b.node(OpKind::kResize, "nearest", {x},
                    resize_nd(s, {2.0f}, Mode::kNearest, Coordinates::kAsymmetric)));
    b.output(b.node(OpKind::kResize, "linear", {x},
                    resize_nd(s, {1.5f}, Mode::kLinear, Coordinates::kHalfPixel)));
  });
  for_batches_and_types("resize 3-D nearest and trilinear", [](GraphBuilder& b, int64_t n) {
    const ir::Shape s{n, 2, 3, 5, 4};
    const auto x = b.input("x", s);
    b.output(b.node(OpKind::kResize, "nearest", {x},
                    resize_nd(s, {2.0f, 2.0f, 2.0f}, Mode::kNearest, Coordinates::kHalfPixel)));
    b.output(b.node(OpKind::kResize, "linear", {x},
                    resize_nd(s, {2.0f, 1.6f, 0.5f}, Mode::kLinear, Coordinates::kAlignCorners)));
    b.output(
        b.node(OpKind::kResize, "half_pixel", {x},
               resize_nd(s, {1.5f, 2.0f, 2.0f}, Mode::kLinear, Coordinates::kPytorchHalfPixel)));
  });
  for_batches_and_types("batch norm (not folded) on N,C,L and N,C,T,H,W", [](GraphBuilder& b,
                                                                             int64_t n) {
    std::vector<float> var(4);
    for (size_t i = 0; i < var.size(); ++i) var[i] = 0.5f + 0.1f * static_cast<float>(i);
    const auto v = b.constant("var", {4}, var);
    const auto scale = b.weight("gamma", {4}, 1.0f);
    const auto bias = b.weight("beta", {4}, 1.0f);
    const auto mean = b.weight("mean", {4}, 1.0f);
    const auto l = b.input("l", {n, 4, 13});
    const auto t = b.input("t", {n, 4, 3, 4, 5});
    b.output(b.node(OpKind::kBatchNorm, "bn1", {l, scale, bias, mean, v}, ir::BatchNormAttrs{}));
    b.output(b.node(
        OpKind::kRelu, "bn3",
        {b.node(OpKind::kBatchNorm, "bn3_raw", {t, scale, bias, mean, v}, ir::BatchNormAttrs{})}));
  });
}

TEST_CASE("classifier heads, matrix products and layout operators", "[gpu][ops]") {
  for_batches("flatten -> gemm (transB, bias) -> softmax", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 16, 3, 3});
    const auto f = b.node(OpKind::kFlatten, "f", {x}, axis(1));
    ir::GemmAttrs g;
    g.trans_b = true;
    const auto fc = b.node(OpKind::kGemm, "fc", {f, b.weight("w", {10, 144}, 0.1f), b.weight("b", {10})}, g);
    b.output(b.node(OpKind::kSoftmax, "y", {fc}, axis(1)));
  });
  for_batches("gemm with alpha, beta, transposed A and full C", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {6, n});
    ir::GemmAttrs g;
    g.trans_a = true;
    g.alpha = 0.5f;
    g.beta = 2.0f;
    b.output(b.node(OpKind::kGemm, "y", {x, b.weight("w", {6, 7}), b.weight("c", {n, 7})}, g));
  });
  for_batches("batched matmul and softmax on the last axis", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 4, 6});
    const auto m = b.node(OpKind::kMatMul, "m", {x, b.weight("w", {6, 5})});
    b.output(b.node(OpKind::kSoftmax, "y", {m}, axis(2)));
  });
  for_batches("reshape and transpose", [](GraphBuilder& b, int64_t n) {
    const auto x = b.input("x", {n, 6, 4, 5});
    ir::ReshapeAttrs r;
    r.shape = {n, 3, 2, 20};
    const auto y = b.node(OpKind::kReshape, "r", {x}, r);
    ir::TransposeAttrs t;
    t.perm = {0, 3, 1, 2};
    b.output(b.node(OpKind::kTranspose, "y", {y}, t));
  });
  for (auto mode : {ir::PadAttrs::Mode::kConstant, ir::PadAttrs::Mode::kReflect, ir::PadAttrs::Mode::kEdge}) {
    for_batches("pad mode " + std::to_string(static_cast<int>(mode)), [mode](GraphBuilder& b, int64_t n) {
      const auto x = b.input("x", {n, 3, 5, 6});
      ir::PadAttrs p;
      p.mode = mode;
      p.pads = {0, 0, 2, 1, 0, 1, 1, 3};
      p.value = 0.25f;
      b.output(b.node(OpKind::kPad, "y", {x}, p));
    });
  }
}

}  // namespace
}  // namespace ios::gputest
