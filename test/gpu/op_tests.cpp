// Every operator the importer accepts, on the GPU, against the CPU reference
// interpreter (cpu/reference.h) on random inputs: FP32 with a tight
// tolerance (CUDA graph on and off) and TF32 with a loose one. Each graph is
// built at batch 1 and at batch 3 (strided concat slices differ).
#include <catch2/catch.hpp>

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

ir::PoolAttrs pool(int64_t k, int64_t s, ios::ir::Dims pads, bool ceil = false, bool include = false) {
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
