// The exact text of stage signatures. Profile databases are keyed by it, so a
// change to how attributes or stages print would orphan every cached
// measurement: the expected strings below were printed by the code that wrote
// the existing databases and must not change.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/half_conversion.h"
#include "ir/shape_inference.h"
#include "sched/signature.h"
#include "sched/unit_graph.h"

namespace {

namespace ir = ios::ir;
using ios::sched::stage_signature;
using ios::sched::Stage;
using ios::sched::Strategy;
using ios::sched::UnitGraph;
using ios::sched::UnitId;

// A graph with one node of every attribute struct and the epilogue chains
// unit formation fuses; shapes come from ios's own shape inference.
class Builder {
 public:
  ir::Graph g;

  ir::TensorId input(const std::string& name, ir::Shape shape) {
    const ir::TensorId t = g.add_tensor({name, std::move(shape), ir::kNone, {}, nullptr});
    g.inputs().push_back(t);
    return t;
  }

  ir::TensorId weight(const std::string& name, ir::Shape shape) {
    auto data = std::make_shared<const std::vector<float>>(
        static_cast<size_t>(ir::num_elements(shape)), 0.5f);
    return g.add_tensor({name, std::move(shape), ir::kNone, {}, data});
  }

  // A node with `outputs` fresh outputs named name, name_1, ...
  std::vector<ir::TensorId> node(const std::string& name, ir::OpKind op,
                                 std::vector<ir::TensorId> inputs, ir::Attrs attrs = {},
                                 int outputs = 1) {
    std::vector<ir::TensorId> outs;
    for (int o = 0; o < outputs; ++o) {
      const std::string tensor = o ? name + "_" + std::to_string(o) : name;
      outs.push_back(g.add_tensor({tensor, {}, ir::kNone, {}, nullptr}));
    }
    g.add_node({name + "_node", op, std::move(inputs), outs, std::move(attrs)});
    ir::infer_shapes(g);
    return outs;
  }

  ir::TensorId one(const std::string& name, ir::OpKind op, std::vector<ir::TensorId> inputs,
                   ir::Attrs attrs = {}) {
    return node(name, op, std::move(inputs), std::move(attrs)).at(0);
  }
};

ir::Graph every_attribute_graph() {
  using K = ir::OpKind;
  Builder b;
  const auto x = b.input("x", {1, 8, 16, 16});

  // Grouped, strided, padded, dilated conv with an epilogue chain.
  ir::ConvAttrs conv;
  conv.kernel = {3, 3};
  conv.stride = {2, 2};
  conv.dilation = {1, 2};
  conv.pads = {1, 2, 1, 2};
  conv.group = 2;
  auto t = b.one("conv", K::kConv, {x, b.weight("conv_w", {8, 4, 3, 3}), b.weight("conv_b", {8})},
                 conv);
  t = b.one("clip", K::kClip, {t}, ir::ClipAttrs{0.0f, 6.0f});
  t = b.one("scale", K::kMul, {t, b.weight("scale_w", {1, 8, 1, 1})});
  t = b.one("hsig", K::kHardSigmoid, {t}, ir::HardSigmoidAttrs{0.1666f, 0.5f});
  const auto conv_out = b.one("relu", K::kRelu, {t});  // 1x8x8x8

  ir::PoolAttrs max;
  max.kernel = {3, 3};
  max.stride = {2, 2};
  max.pads = {0, 0, 1, 1};
  max.ceil_mode = true;
  const auto pooled = b.one("maxpool", K::kMaxPool, {conv_out}, max);
  ir::PoolAttrs avg;
  avg.kernel = {3, 3};
  avg.pads = {1, 1, 1, 1};
  avg.count_include_pad = true;
  const auto avg_out = b.one("avgpool", K::kAveragePool, {conv_out}, avg);
  const auto bn = b.one("bn", K::kBatchNorm,
                        {avg_out, b.weight("bn_s", {8}), b.weight("bn_b", {8}),
                         b.weight("bn_m", {8}), b.weight("bn_v", {8})},
                        ir::BatchNormAttrs{1e-3f});
  const auto cat = b.one("concat", K::kConcat, {conv_out, bn}, ir::AxisAttrs{1});  // 1x16x8x8

  ir::SliceAttrs slice;
  slice.axes = {1, 3};
  slice.starts = {2, 0};
  slice.ends = {10, 8};
  slice.steps = {1, 2};
  const auto sliced = b.one("slice", K::kSlice, {cat}, slice);  // 1x8x8x4
  ir::SplitAttrs split;
  split.axis = 1;
  split.sizes = {4, 12};
  const auto halves = b.node("split", K::kSplit, {cat}, split, 2);

  ir::ResizeAttrs nearest;
  nearest.scale = {2.0f, 2.0f};
  nearest.size = {16, 16};
  const auto up = b.one("upsample", K::kResize, {halves[0]}, nearest);
  ir::ResizeAttrs linear;
  linear.mode = ir::resize::Mode::kLinear;
  linear.coordinates = ir::resize::Coordinates::kAlignCorners;
  linear.nearest = ir::resize::Nearest::kFloor;
  linear.scale = {1.5f, 0.75f};
  linear.size = {12, 6};
  b.g.outputs().push_back(b.one("resize", K::kResize, {halves[1]}, linear));

  ir::PadAttrs pad;
  pad.mode = ir::PadAttrs::Mode::kReflect;
  pad.pads = {0, 0, 1, 2, 0, 0, 1, 2};
  pad.value = 0.25f;
  b.g.outputs().push_back(b.one("pad", K::kPad, {up}, pad));

  ir::ReduceAttrs reduce;
  reduce.axes = {2, 3};
  b.g.outputs().push_back(b.one("mean", K::kReduceMean, {sliced}, reduce));
  b.g.outputs().push_back(b.one("gap", K::kGlobalAveragePool, {pooled}));

  // A transformer-style tail: tokens, layer norm, GELU, GEMM, MatMul, Softmax.
  const auto tokens = b.one("tokens", K::kReshape, {sliced}, ir::ReshapeAttrs{{1, 8, 32}});
  const auto perm = b.one("perm", K::kTranspose, {tokens}, ir::TransposeAttrs{{0, 2, 1}});
  const auto ln = b.one("ln", K::kLayerNorm,
                        {perm, b.weight("ln_s", {8}), b.weight("ln_b", {8})},
                        ir::LayerNormAttrs{2, 1e-6f});
  const auto gelu_erf = b.one("gelu_erf", K::kGelu, {ln}, ir::GeluAttrs{false});
  const auto mm = b.one("matmul", K::kMatMul, {gelu_erf, b.weight("mm_w", {8, 8})});
  const auto gelu_tanh = b.one("gelu_tanh", K::kGelu, {mm}, ir::GeluAttrs{true});
  b.g.outputs().push_back(
      b.one("softmax", K::kSoftmax, {gelu_tanh}, ir::AxisAttrs{2}));
  const auto flat = b.one("flat", K::kFlatten, {pooled}, ir::AxisAttrs{1});
  ir::GemmAttrs gemm;
  gemm.alpha = 0.5f;
  gemm.beta = 2.0f;
  gemm.trans_b = true;
  const auto fc =
      b.one("fc", K::kGemm, {flat, b.weight("fc_w", {10, 128}), b.weight("fc_b", {10})}, gemm);
  ir::ClipAttrs upper;  // the default lower bound: the largest negative float
  upper.max = 1.0f;
  b.g.outputs().push_back(b.one("fc_act", K::kSigmoid, {b.one("fc_clip", K::kClip, {fc}, upper)}));
  const auto scalar = b.one("scalar", K::kReshape, {b.one("first", K::kSlice, {fc}, [] {
                                                      ir::SliceAttrs s;
                                                      s.axes = {1};
                                                      s.starts = {0};
                                                      s.ends = {1};
                                                      s.steps = {1};
                                                      return s;
                                                    }())},
                            ir::ReshapeAttrs{{}});
  b.g.outputs().push_back(scalar);
  return std::move(b.g);
}

Stage stage(Strategy strategy, std::vector<std::vector<UnitId>> groups) {
  Stage s;
  s.strategy = strategy;
  s.groups = std::move(groups);
  return s;
}

}  // namespace

TEST_CASE("stage signatures: the text of every attribute struct is pinned",
          "[cost][signature]") {
  const ir::Graph graph = every_attribute_graph();
  const UnitGraph units = UnitGraph::form(graph);
  std::vector<std::string> got;
  for (UnitId u = 0; u < units.size(); ++u) {
    got.push_back(stage_signature(units, stage(Strategy::kConcurrent, {{u}})));
  }
  const std::vector<std::string> expected = {
      "concurrent|conv{Conv(k=3x3,s=2x2,d=1x2,p=1,2,1,2,g=2)[x0:1x8x16x16,w:8x4x3x3,w:8]"
      "->[1x8x8x8] Clip(min=0,max=6)[u0.n0.0]->[1x8x8x8] Mul()[u0.n1.0,w:1x8x1x1]->[1x8x8x8] "
      "HardSigmoid(alpha=0.1666,beta=0.5)[u0.n2.0]->[1x8x8x8] Relu()[u0.n3.0]->[1x8x8x8*]}",
      "concurrent|pool{MaxPool(k=3x3,s=2x2,d=1x1,p=0,0,1,1,cip=false,ceil=true)[x0:1x8x8x8]"
      "->[1x8x4x4*]}",
      "concurrent|pool{AveragePool(k=3x3,s=1x1,d=1x1,p=1,1,1,1,cip=true,ceil=false)[x0:1x8x8x8]"
      "->[1x8x8x8] BatchNormalization(eps=0.001)[u0.n0.0,w:8,w:8,w:8,w:8]->[1x8x8x8*]}",
      "concurrent|concat{Concat(axis=1)[x0:1x8x8x8,x1:1x8x8x8]->[1x16x8x8*]}",
      "concurrent|layout{Slice(axes=1,3,starts=2,0,ends=10,8,steps=1,2)[x0:1x16x8x8]"
      "->[1x8x8x4*]}",
      "concurrent|layout{Split(axis=1,sizes=4,12)[x0:1x16x8x8]->[1x4x8x8*,1x12x8x8*]}",
      "concurrent|pool{Resize(mode=0,coord=0,nearest=0,scale=2x2,size=16x16)[x0:1x4x8x8]"
      "->[1x4x16x16*]}",
      "concurrent|pool{Resize(mode=1,coord=2,nearest=2,scale=1.5x0.75,size=12x6)[x0:1x12x8x8]"
      "->[1x12x12x6*]}",
      "concurrent|layout{Pad(mode=1,pads=0,0,1,2,0,0,1,2,value=0.25)[x0:1x4x16x16]"
      "->[1x4x18x20*]}",
      "concurrent|pool{ReduceMean(axes=2,3,keepdims=true)[x0:1x8x8x4]->[1x8x1x1*]}",
      "concurrent|pool{GlobalAveragePool()[x0:1x8x4x4]->[1x8x1x1*]}",
      "concurrent|layout{Reshape(shape=1x8x32)[x0:1x8x8x4]->[1x8x32*]}",
      "concurrent|layout{Transpose(perm=0,2,1)[x0:1x8x32]->[1x32x8*]}",
      "concurrent|pool{LayerNormalization(axis=2,eps=1e-06)[x0:1x32x8,w:8,w:8]->[1x32x8] "
      "Gelu(erf)[u0.n0.0]->[1x32x8*]}",
      "concurrent|matmul{MatMul()[x0:1x32x8,w:8x8]->[1x32x8] Gelu(tanh)[u0.n0.0]->[1x32x8*]}",
      "concurrent|softmax{Softmax(axis=2)[x0:1x32x8]->[1x32x8*]}",
      "concurrent|layout{Flatten(axis=1)[x0:1x8x4x4]->[1x128*]}",
      "concurrent|matmul{Gemm(alpha=0.5,beta=2,ta=false,tb=true)[x0:1x128,w:10x128,w:10]"
      "->[1x10*]}",
      "concurrent|elementwise{Clip(min=-3.4028235e+38,max=1)[x0:1x10]->[1x10] "
      "Sigmoid()[u0.n0.0]->[1x10*]}",
      "concurrent|layout{Slice(axes=1,starts=0,ends=1,steps=1)[x0:1x10]->[1x1*]}",
      "concurrent|layout{Reshape(shape=scalar)[x0:1x1]->[scalar*]}",
  };
  CHECK(got == expected);
}

TEST_CASE("stage signatures: groups of several units and merge stages are pinned",
          "[cost][signature]") {
  const ir::Graph graph = every_attribute_graph();
  const UnitGraph units = UnitGraph::form(graph);
  auto id = [&](const char* name) {
    const auto u = units.find(name);
    REQUIRE(u.has_value());
    return *u;
  };
  const std::string concurrent = stage_signature(
      units, stage(Strategy::kConcurrent,
                   {{id("maxpool"), id("gap")}, {id("bn")}, {id("slice"), id("mean")}}));
  const std::string merged =
      stage_signature(units, stage(Strategy::kMerge, {{id("bn"), id("maxpool")}}));
  CHECK(concurrent ==
        "concurrent|layout{Slice(axes=1,3,starts=2,0,ends=10,8,steps=1,2)[x0:1x16x8x8]"
        "->[1x8x8x4*]};pool{ReduceMean(axes=2,3,keepdims=true)[u0.n0.0]->[1x8x1x1*]}|"
        "pool{AveragePool(k=3x3,s=1x1,d=1x1,p=1,1,1,1,cip=true,ceil=false)[x1:1x8x8x8]->[1x8x8x8] "
        "BatchNormalization(eps=0.001)[u0.n0.0,w:8,w:8,w:8,w:8]->[1x8x8x8*]}|"
        "pool{MaxPool(k=3x3,s=2x2,d=1x1,p=0,0,1,1,cip=false,ceil=true)[x1:1x8x8x8]->[1x8x4x4*]};"
        "pool{GlobalAveragePool()[u0.n0.0]->[1x8x1x1*]}");
  CHECK(merged ==
        "merge|pool{AveragePool(k=3x3,s=1x1,d=1x1,p=1,1,1,1,cip=true,ceil=false)[x0:1x8x8x8]"
        "->[1x8x8x8] BatchNormalization(eps=0.001)[u0.n0.0,w:8,w:8,w:8,w:8]->[1x8x8x8*]};"
        "pool{MaxPool(k=3x3,s=2x2,d=1x1,p=0,0,1,1,cip=false,ceil=true)[x0:1x8x8x8]->[1x8x4x4*]}");
}

TEST_CASE("stage signatures: 16-bit tensors carry their type; float32 stages are unchanged",
          "[cost][signature]") {
  // One convolution with its ReLU, then the same graph converted to float16
  // and to bfloat16 (inputs and outputs too, so the unit is all 16-bit), and
  // with float32 inputs and outputs (Casts around it).
  auto build = [] {
    Builder b;
    const auto x = b.input("x", {1, 8, 16, 16});
    ir::ConvAttrs conv;
    conv.kernel = {3, 3};
    conv.stride = {1, 1};
    conv.dilation = {1, 1};
    conv.pads = {1, 1, 1, 1};
    const auto y = b.one("conv", ir::OpKind::kConv,
                         {x, b.weight("conv_w", {16, 8, 3, 3}), b.weight("conv_b", {16})}, conv);
    b.g.outputs().push_back(b.one("relu", ir::OpKind::kRelu, {y}));
    return std::move(b.g);
  };
  auto signature_of = [](const ir::Graph& graph) {
    const UnitGraph units = UnitGraph::form(graph);
    const auto u = units.find("relu");
    REQUIRE(u.has_value());
    return stage_signature(units, stage(Strategy::kConcurrent, {{*u}}));
  };
  const ir::Graph fp32 = build();
  // Pinned: the key of the databases written before the IR had types.
  const std::string fp32_key =
      "concurrent|conv{Conv(k=3x3,s=1x1,d=1x1,p=1,1,1,1,g=1)[x0:1x8x16x16,w:16x8x3x3,w:16]"
      "->[1x16x16x16] Relu()[u0.n0.0]->[1x16x16x16*]}";
  CHECK(signature_of(fp32) == fp32_key);

  ir::Graph fp16 = build();
  ir::convert_to_half(fp16, {ir::ElementType::kFloat16, /*half_io=*/true, {}}, "test");
  const std::string fp16_key = signature_of(fp16);
  CHECK(fp16_key ==
        "concurrent|conv{Conv(k=3x3,s=1x1,d=1x1,p=1,1,1,1,g=1)[x0:1x8x16x16:fp16,"
        "w:16x8x3x3:fp16,w:16:fp16]->[1x16x16x16:fp16] Relu()[u0.n0.0]->[1x16x16x16:fp16*]}");

  ir::Graph bf16 = build();
  ir::convert_to_half(bf16, {ir::ElementType::kBFloat16, /*half_io=*/true, {}}, "test");
  const std::string bf16_key = signature_of(bf16);
  CHECK(bf16_key != fp16_key);
  CHECK(bf16_key != fp32_key);
  CHECK(bf16_key.find(":bf16") != std::string::npos);
  CHECK(bf16_key.find(":fp16") == std::string::npos);

  // Float32 inputs and outputs: the conv unit reads the Cast's float16
  // output, and the Casts' own units carry both types.
  ir::Graph casts = build();
  ir::convert_to_half(casts, {ir::ElementType::kFloat16, /*half_io=*/false, {}}, "test");
  const UnitGraph units = UnitGraph::form(casts);
  std::vector<std::string> keys;
  for (UnitId u = 0; u < units.size(); ++u) {
    keys.push_back(stage_signature(units, stage(Strategy::kConcurrent, {{u}})));
  }
  CHECK(std::find(keys.begin(), keys.end(), fp32_key) == keys.end());
  CHECK(std::count_if(keys.begin(), keys.end(), [](const std::string& k) {
          return k.find("Cast(") != std::string::npos && k.find(":fp16") != std::string::npos;
        }) == 2);
}
