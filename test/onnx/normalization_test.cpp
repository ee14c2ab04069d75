// Shape-arithmetic folding and attribute normalization, on small models
// written the way exporters write them.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "model_builder.h"
#include "onnx/importer.h"

namespace {

using ios::ir::Graph;
using ios::ir::OpKind;
using ios::ir::Shape;
using ios::test::ModelBuilder;

int count(const Graph& g, OpKind op) {
  int n = 0;
  for (const auto& node : g.nodes()) n += node.op == op;
  return n;
}

const ios::ir::Node& only(const Graph& g, OpKind op) {
  REQUIRE(count(g, op) == 1);
  for (const auto& node : g.nodes()) {
    if (node.op == op) return node;
  }
  FAIL("unreachable");
  return g.nodes().front();
}

ios::onnx::ImportedModel import(const ModelBuilder& b, const std::string& file,
                                const ios::onnx::ImportOptions& options = {}) {
  return ios::onnx::import_model(b.save(file), options);
}

// x.view(x.size(0), -1) as PyTorch exports it.
ModelBuilder view_model(int64_t batch, int64_t opset = 13) {
  ModelBuilder b(opset);
  b.input("x", {batch, 3, 4, 4});
  b.node("Shape", {"x"}, {"shape"});
  b.int_constant("zero", {}, {0});
  auto& g = b.node("Gather", {"shape", "zero"}, {"n"});
  ModelBuilder::integer(g, "axis", 0);
  if (opset >= 13) {
    b.int_constant("axes0", {1}, {0});
    b.node("Unsqueeze", {"n", "axes0"}, {"n1"});
  } else {
    ModelBuilder::ints(b.node("Unsqueeze", {"n"}, {"n1"}), "axes", {0});
  }
  b.int_constant("minus1", {1}, {-1});
  auto& c = b.node("Concat", {"n1", "minus1"}, {"target"});
  ModelBuilder::integer(c, "axis", 0);
  b.node("Reshape", {"x", "target"}, {"flat"}, "view");
  b.node("Relu", {"flat"}, {"y"});
  b.output("y", 2);
  return b;
}

}  // namespace

TEST_CASE("Shape/Gather/Unsqueeze/Concat reshape targets fold into a static Reshape", "[onnx][fold]") {
  const auto model = import(view_model(2), "view.onnx");
  const Graph& g = model.graph;
  CHECK(g.num_nodes() == 2);  // Reshape + Relu: the shape arithmetic is gone
  CHECK(only(g, OpKind::kReshape).attr<ios::ir::ReshapeAttrs>().shape == Shape{2, 48});
  CHECK(only(g, OpKind::kReshape).inputs.size() == 1);
  CHECK(g.tensor(g.outputs()[0]).shape == Shape{2, 48});

  ios::onnx::ImportOptions options;
  options.batch = 5;
  const auto dynamic = import(view_model(-1), "view_dyn.onnx", options);
  CHECK(only(dynamic.graph, OpKind::kReshape).attr<ios::ir::ReshapeAttrs>().shape == Shape{5, 48});
  const auto opset11 = import(view_model(-1, 11), "view_dyn11.onnx", options);
  CHECK(opset11.graph.num_nodes() == 2);
  CHECK(only(opset11.graph, OpKind::kReshape).attr<ios::ir::ReshapeAttrs>().shape == Shape{5, 48});
}

TEST_CASE("the F.pad paddings chain folds and the Pad joins the conv", "[onnx][fold]") {
  // What torch's exporter writes for F.pad(x, [1, 1, 2, 2]) when it does not
  // fold it: ConstantOfShape, Concat, Reshape, reversing Slice, Transpose,
  // Reshape, Cast, then Pad.
  ModelBuilder b;
  b.input("x", {1, 2, 5, 5});
  b.int_constant("torch_pads", {4}, {1, 1, 2, 2});
  b.int_constant("extension", {1}, {4});
  auto& zeros = b.node("ConstantOfShape", {"extension"}, {"zeros"});
  auto* value = zeros.add_attribute();
  value->set_name("value");
  value->set_type(::onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(::onnx::TensorProto::INT64);
  value->mutable_t()->add_dims(1);
  value->mutable_t()->add_int64_data(0);
  ModelBuilder::integer(b.node("Concat", {"torch_pads", "zeros"}, {"all"}), "axis", 0);
  b.int_constant("pairs_shape", {2}, {-1, 2});
  b.node("Reshape", {"all", "pairs_shape"}, {"pairs"});
  b.int_constant("rs", {1}, {-1});
  b.int_constant("re", {1}, {-9223372036854775807LL});
  b.int_constant("ra", {1}, {0});
  b.int_constant("rst", {1}, {-1});
  b.node("Slice", {"pairs", "rs", "re", "ra", "rst"}, {"reversed"});
  ModelBuilder::ints(b.node("Transpose", {"reversed"}, {"transposed"}), "perm", {1, 0});
  b.int_constant("flat_shape", {1}, {-1});
  b.node("Reshape", {"transposed", "flat_shape"}, {"flat"});
  ModelBuilder::integer(b.node("Cast", {"flat"}, {"onnx_pads"}), "to", ::onnx::TensorProto::INT64);
  b.node("Pad", {"x", "onnx_pads"}, {"padded"}, "pad");
  b.ramp_weight("w", {3, 2, 3, 3});
  b.node("Conv", {"padded", "w"}, {"y"}, "conv");
  b.output("y", 4);
  const auto model = import(b, "torch_pad_chain.onnx");
  REQUIRE(model.graph.num_nodes() == 1);
  CHECK(model.graph.node(0).attr<ios::ir::ConvAttrs>().pads == ios::ir::Dims{2, 1, 2, 1});
  CHECK(model.graph.tensor(model.graph.outputs()[0]).shape == Shape{1, 3, 7, 5});
}

TEST_CASE("Range Equal Where Expand Squeeze and integer arithmetic fold", "[onnx][fold]") {
  ModelBuilder b;
  b.input("x", {2, 3, 4, 4});
  b.node("Shape", {"x"}, {"s"});
  b.int_constant("zero", {}, {0});
  b.node("Gather", {"s", "zero"}, {"n"});                     // 2
  b.int_constant("ax", {1}, {0});
  b.node("Unsqueeze", {"n", "ax"}, {"n_1"});
  b.node("Squeeze", {"n_1", "ax"}, {"n_back"});               // 2 again
  b.int_constant("one", {}, {1});
  b.int_constant("two", {}, {2});
  b.node("Div", {"n_back", "one"}, {"d"});
  b.node("Mul", {"d", "two"}, {"m"});
  b.node("Sub", {"m", "n_back"}, {"n2"});                     // 2 * 2 - 2 = 2
  b.int_constant("three", {}, {3});
  b.node("Range", {"zero", "three", "one"}, {"r"});           // [0, 1, 2]
  b.node("Equal", {"r", "one"}, {"is1"});                     // [F, T, F]
  b.int_constant("minus1", {1}, {-1});
  b.int_constant("len3", {1}, {3});
  b.node("Expand", {"minus1", "len3"}, {"all_minus1"});       // [-1, -1, -1]
  b.node("Unsqueeze", {"n2", "ax"}, {"n2_1"});
  b.int_constant("four", {1}, {4});
  ModelBuilder::integer(b.node("Concat", {"n2_1", "four", "four"}, {"base"}), "axis", 0);  // [2, 4, 4]
  b.node("Where", {"is1", "all_minus1", "base"}, {"target"});  // [2, -1, 4]
  b.node("Reshape", {"x", "target"}, {"y"}, "reshape");
  b.output("y", 3);
  const auto model = import(b, "fold_misc.onnx");
  REQUIRE(model.graph.num_nodes() == 1);
  CHECK(model.graph.node(0).attr<ios::ir::ReshapeAttrs>().shape == Shape{2, 12, 4});
}

TEST_CASE("opset 11 and opset 13 spellings normalize alike", "[onnx][fold]") {
  for (int64_t opset : {11, 13}) {
    SECTION("opset " + std::to_string(opset)) {
      ModelBuilder b(opset);
      b.input("x", {1, 6, 4, 4});
      // Split into 2 + 4 channels.
      auto& split = b.node("Split", opset >= 13 ? std::vector<std::string>{"x", "sizes"} : std::vector<std::string>{"x"},
                           {"s0", "s1"}, "split");
      ModelBuilder::integer(split, "axis", -3);
      if (opset >= 13) b.int_weight("sizes", {2}, {2, 4});
      else ModelBuilder::ints(split, "split", {2, 4});
      // Clip(0, 6) from inputs (opset 11+).
      b.weight("lo", {}, {0.0f});
      b.weight("hi", {}, {6.0f});
      b.node("Clip", {"s0", "lo", "hi"}, {"c0"}, "relu6");
      // Squeeze/Unsqueeze of a shape on the side: folded.
      // Reverse the channels of s1 with a negative-step slice.
      b.int_weight("st", {1}, {-1});
      b.int_weight("en", {1}, {std::numeric_limits<int64_t>::min()});
      b.int_weight("ax", {1}, {1});
      b.int_weight("sp", {1}, {-1});
      b.node("Slice", {"s1", "st", "en", "ax", "sp"}, {"rev"}, "reverse");
      auto& cat = b.node("Concat", {"c0", "rev"}, {"y"}, "cat");
      ModelBuilder::integer(cat, "axis", -3);
      b.output("y", 4);
      const auto model = import(b, "opset" + std::to_string(opset) + ".onnx");
      const Graph& g = model.graph;
      const auto& s = only(g, OpKind::kSplit).attr<ios::ir::SplitAttrs>();
      CHECK(s.axis == 1);
      CHECK(s.sizes == std::vector<int64_t>{2, 4});
      const auto& clip = only(g, OpKind::kClip);
      CHECK(clip.inputs.size() == 1);
      CHECK(clip.attr<ios::ir::ClipAttrs>().min == 0.0f);
      CHECK(clip.attr<ios::ir::ClipAttrs>().max == 6.0f);
      const auto& sl = only(g, OpKind::kSlice).attr<ios::ir::SliceAttrs>();
      CHECK(sl.axes == std::vector<int64_t>{1});
      CHECK(sl.starts == std::vector<int64_t>{3});  // -1 + 4
      CHECK(sl.ends == std::vector<int64_t>{-1});   // clamped: before index 0
      CHECK(sl.steps == std::vector<int64_t>{-1});
      CHECK(only(g, OpKind::kConcat).attr<ios::ir::AxisAttrs>().axis == 1);
      CHECK(g.tensor(g.outputs()[0]).shape == Shape{1, 6, 4, 4});
    }
  }
}

TEST_CASE("Split without sizes splits evenly and Slice clamps huge ends", "[onnx][fold]") {
  ModelBuilder b;
  b.input("x", {1, 8, 5, 5});
  b.node("Split", {"x"}, {"a", "b"}, "halves");  // axis 0 default: wrong on purpose below
  auto& split = *b.model.mutable_graph()->mutable_node(0);
  ModelBuilder::integer(split, "axis", 1);
  b.int_weight("st", {2}, {1, 1});
  b.int_weight("en", {2}, {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::max()});
  b.int_weight("ax", {2}, {-2, -1});
  b.node("Slice", {"a", "st", "en", "ax"}, {"c"}, "shift");
  b.node("Add", {"c", "c"}, {"y"});
  b.node("Relu", {"b"}, {"z"});
  b.output("y", 4);
  b.output("z", 4);
  const auto model = import(b, "split_even.onnx");
  const auto& s = only(model.graph, OpKind::kSplit).attr<ios::ir::SplitAttrs>();
  CHECK(s.sizes == std::vector<int64_t>{4, 4});
  const auto& sl = only(model.graph, OpKind::kSlice).attr<ios::ir::SliceAttrs>();
  CHECK(sl.axes == std::vector<int64_t>{2, 3});
  CHECK(sl.starts == std::vector<int64_t>{1, 1});
  CHECK(sl.ends == std::vector<int64_t>{5, 5});
  CHECK(sl.steps == std::vector<int64_t>{1, 1});
  CHECK(model.graph.tensor(model.graph.outputs()[0]).shape == Shape{1, 4, 4, 4});
}

TEST_CASE("Conv attributes: groups dilation asymmetric pads and auto_pad", "[onnx][fold]") {
  ModelBuilder b;
  b.input("x", {1, 8, 9, 10});
  b.ramp_weight("w1", {8, 2, 3, 3});
  auto& c1 = b.node("Conv", {"x", "w1"}, {"a"}, "grouped");
  ModelBuilder::integer(c1, "group", 4);
  ModelBuilder::ints(c1, "dilations", {2, 1});
  ModelBuilder::ints(c1, "pads", {2, 0, 1, 3});  // top, left, bottom, right
  b.ramp_weight("w2", {4, 8, 3, 3});
  auto& c2 = b.node("Conv", {"a", "w2"}, {"y"}, "same");
  ModelBuilder::text(c2, "auto_pad", "SAME_UPPER");
  ModelBuilder::ints(c2, "strides", {2, 2});
  b.output("y", 4);
  const auto model = import(b, "conv_attrs.onnx");
  const Graph& g = model.graph;
  REQUIRE(g.num_nodes() == 2);
  const auto& a1 = g.node(0).attr<ios::ir::ConvAttrs>();
  CHECK(a1.group == 4);
  CHECK(a1.dilation == ios::ir::Dims{2, 1});
  CHECK(a1.pads == ios::ir::Dims{2, 0, 1, 3});
  CHECK(a1.kernel == ios::ir::Dims{3, 3});
  // H: 9 + 3 - 5 + 1 = 8; W: 10 + 3 - 3 + 1 = 11
  CHECK(g.tensor(g.node(0).outputs[0]).shape == Shape{1, 8, 8, 11});
  const auto& a2 = g.node(1).attr<ios::ir::ConvAttrs>();
  // SAME_UPPER, stride 2: H 8 -> 4 needs total pad 1 (0 top, 1 bottom); W 11 -> 6 needs 2.
  CHECK(a2.pads == ios::ir::Dims{0, 1, 1, 1});
  CHECK(g.tensor(g.outputs()[0]).shape == Shape{1, 4, 4, 6});
}

TEST_CASE("pooling attributes and Pad folding through the importer", "[onnx][fold]") {
  ModelBuilder b;
  b.input("x", {1, 4, 8, 8});
  b.node("Relu", {"x"}, {"r"});
  b.int_constant("pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
  b.node("Pad", {"r", "pads"}, {"p"}, "pad_for_avg");
  auto& avg = b.node("AveragePool", {"p"}, {"a"}, "avg");
  ModelBuilder::ints(avg, "kernel_shape", {3, 3});
  ModelBuilder::ints(avg, "strides", {1, 1});
  auto& mp = b.node("MaxPool", {"a"}, {"m"}, "max");
  ModelBuilder::ints(mp, "kernel_shape", {3, 3});
  ModelBuilder::ints(mp, "strides", {2, 2});
  ModelBuilder::integer(mp, "ceil_mode", 1);
  b.node("GlobalAveragePool", {"m"}, {"g"});
  b.node("Flatten", {"g"}, {"f"});
  b.ramp_weight("fc", {3, 4});
  b.ramp_weight("fcb", {3});
  auto& gemm = b.node("Gemm", {"f", "fc", "fcb"}, {"logits"}, "fc");
  ModelBuilder::integer(gemm, "transB", 1);
  auto& sm = b.node("Softmax", {"logits"}, {"y"});
  ModelBuilder::integer(sm, "axis", -1);
  b.output("y", 2);
  const auto model = import(b, "pools.onnx");
  const Graph& g = model.graph;
  CHECK(count(g, OpKind::kPad) == 0);
  const auto& pa = only(g, OpKind::kAveragePool).attr<ios::ir::PoolAttrs>();
  CHECK(pa.pads == ios::ir::Dims{1, 1, 1, 1});
  CHECK(pa.count_include_pad);
  const auto& pm = only(g, OpKind::kMaxPool).attr<ios::ir::PoolAttrs>();
  CHECK(pm.ceil_mode);
  CHECK(g.tensor(only(g, OpKind::kMaxPool).outputs[0]).shape == Shape{1, 4, 4, 4});  // ceil(5/2)+1
  CHECK(only(g, OpKind::kGemm).attr<ios::ir::GemmAttrs>().trans_b);
  CHECK(only(g, OpKind::kFlatten).attr<ios::ir::AxisAttrs>().axis == 1);
  CHECK(only(g, OpKind::kSoftmax).attr<ios::ir::AxisAttrs>().axis == 1);
  CHECK(g.tensor(g.outputs()[0]).shape == Shape{1, 3});
}

TEST_CASE("BatchNorm after a conv folds and a standalone one stays and Identity/Dropout vanish", "[onnx][fold]") {
  ModelBuilder b;
  b.input("x", {1, 2, 4, 4});
  b.ramp_weight("w", {3, 2, 1, 1}, 0.5f);
  b.node("Conv", {"x", "w"}, {"c"}, "conv");
  for (const char* p : {"g", "be", "m"}) b.ramp_weight(p, {3}, 0.1f);
  b.weight("v", {3}, {1.0f, 2.0f, 0.5f});
  b.node("BatchNormalization", {"c", "g", "be", "m", "v"}, {"bn"}, "bn_after_conv");
  b.node("Identity", {"bn"}, {"id"}, "identity");
  b.node("Dropout", {"id"}, {"dr"}, "dropout");
  b.node("Relu", {"dr"}, {"r"}, "relu");
  for (const char* p : {"g2", "be2", "m2"}) b.ramp_weight(p, {3}, 0.1f);
  b.weight("v2", {3}, {1.0f, 1.0f, 1.0f});
  b.node("BatchNormalization", {"r", "g2", "be2", "m2", "v2"}, {"y"}, "standalone_bn");
  b.output("y", 4);
  const auto model = import(b, "bn.onnx");
  const Graph& g = model.graph;
  REQUIRE(g.num_nodes() == 3);
  CHECK(g.node(0).op == OpKind::kConv);
  CHECK(g.node(0).inputs.size() == 3);  // folded bias
  CHECK(g.tensor(g.node(0).outputs[0]).name == "bn");
  CHECK(g.node(1).op == OpKind::kRelu);
  CHECK(g.tensor(g.node(1).inputs[0]).name == "bn");
  CHECK(g.node(2).op == OpKind::kBatchNorm);
  CHECK(g.node(2).name == "standalone_bn");
}

TEST_CASE("nested Concats on one axis become one", "[onnx][fold]") {
  ModelBuilder b;
  b.input("x", {1, 2, 3, 3});
  b.node("Relu", {"x"}, {"a"});
  b.node("Sigmoid", {"x"}, {"s"});
  auto& inner = b.node("Concat", {"a", "s"}, {"in1"}, "inner");
  ModelBuilder::integer(inner, "axis", 1);
  auto& inner2 = b.node("Concat", {"s", "in1"}, {"in2"}, "inner2");
  ModelBuilder::integer(inner2, "axis", -3);
  auto& outer = b.node("Concat", {"in2", "a"}, {"y"}, "outer");
  ModelBuilder::integer(outer, "axis", 1);
  b.output("y", 4);
  const auto model = import(b, "nested_concat.onnx");
  const auto& cat = only(model.graph, OpKind::kConcat);
  std::vector<std::string> names;
  for (auto t : cat.inputs) names.push_back(model.graph.tensor(t).name);
  CHECK(names == std::vector<std::string>{"s", "a", "s", "a"});
  CHECK(model.graph.tensor(model.graph.outputs()[0]).shape == Shape{1, 8, 3, 3});
}

TEST_CASE("HardSigmoid HardSwish Mul Transpose MatMul ReduceMean and reflect Pad", "[onnx][fold]") {
  ModelBuilder b(14);
  b.input("x", {1, 4, 6, 6});
  auto& hs = b.node("HardSigmoid", {"x"}, {"h"}, "hsig");
  ModelBuilder::real(hs, "alpha", 1.0f / 6.0f);
  b.node("Mul", {"x", "h"}, {"m"}, "gate");
  b.node("HardSwish", {"m"}, {"w"}, "hswish");
  b.int_weight("pads", {8}, {0, 0, 1, 2, 0, 0, 1, 2});
  auto& pad = b.node("Pad", {"w", "pads"}, {"p"}, "reflect_pad");
  ModelBuilder::text(pad, "mode", "reflect");
  auto& rm = b.node("ReduceMean", {"p"}, {"r"}, "mean_hw");
  ModelBuilder::ints(rm, "axes", {-1, -2});
  ModelBuilder::integer(rm, "keepdims", 0);
  b.ramp_weight("proj", {4, 5});
  b.node("MatMul", {"r", "proj"}, {"mm"}, "proj");
  auto& tr = b.node("Transpose", {"mm"}, {"y"}, "transpose");
  ModelBuilder::ints(tr, "perm", {1, 0});
  b.output("y", 2);
  const auto model = import(b, "misc_ops.onnx");
  const Graph& g = model.graph;
  CHECK(only(g, OpKind::kHardSigmoid).attr<ios::ir::HardSigmoidAttrs>().alpha == Approx(1.0 / 6.0));
  CHECK(only(g, OpKind::kHardSigmoid).attr<ios::ir::HardSigmoidAttrs>().beta == 0.5f);
  CHECK(count(g, OpKind::kHardSwish) == 1);
  const auto& pa = only(g, OpKind::kPad).attr<ios::ir::PadAttrs>();  // reflect: never folded
  CHECK(pa.mode == ios::ir::PadAttrs::Mode::kReflect);
  CHECK(pa.pads == std::vector<int64_t>{0, 0, 1, 2, 0, 0, 1, 2});
  CHECK(g.tensor(only(g, OpKind::kPad).outputs[0]).shape == Shape{1, 4, 8, 10});
  const auto& ra = only(g, OpKind::kReduceMean).attr<ios::ir::ReduceAttrs>();
  CHECK(ra.axes == std::vector<int64_t>{2, 3});
  CHECK_FALSE(ra.keepdims);
  CHECK(only(g, OpKind::kTranspose).attr<ios::ir::TransposeAttrs>().perm == std::vector<int64_t>{1, 0});
  CHECK(g.tensor(g.outputs()[0]).shape == Shape{5, 1});
}

TEST_CASE("weights keep their values whether stored as raw_data or float_data", "[onnx][fold]") {
  for (bool raw : {true, false}) {
    ModelBuilder b;
    b.input("x", {1, 3});
    b.weight("bias", {3}, {1.5f, -2.25f, 3.0f}, raw);
    b.node("Add", {"x", "bias"}, {"y"});
    b.output("y", 2);
    const auto model = import(b, raw ? "raw.onnx" : "float_data.onnx");
    const auto id = model.graph.find_tensor("bias");
    REQUIRE(id);
    REQUIRE(model.graph.tensor(*id).is_constant());
    CHECK(*model.graph.tensor(*id).data == std::vector<float>{1.5f, -2.25f, 3.0f});
  }
}

TEST_CASE("constant weight arithmetic folds into a new initializer", "[onnx][fold]") {
  ModelBuilder b;
  b.input("x", {1, 3});
  b.weight("scale", {3}, {1.0f, 2.0f, 3.0f});
  b.weight("two", {}, {2.0f});
  b.node("Mul", {"scale", "two"}, {"scaled"}, "fold_me");
  b.node("Mul", {"x", "scaled"}, {"y"}, "keep_me");
  b.output("y", 2);
  const auto model = import(b, "weight_arith.onnx");
  REQUIRE(model.graph.num_nodes() == 1);
  CHECK(model.graph.node(0).name == "keep_me");
  const auto& w = model.graph.tensor(model.graph.node(0).inputs[1]);
  REQUIRE(w.is_constant());
  CHECK(*w.data == std::vector<float>{2.0f, 4.0f, 6.0f});
}

TEST_CASE("nodes listed out of order are sorted before the checker sees them", "[onnx][fold]") {
  ModelBuilder b;
  b.input("x", {1, 3});
  b.node("Sigmoid", {"r"}, {"y"}, "second");
  b.node("Relu", {"x"}, {"r"}, "first");
  b.output("y", 2);
  const auto model = import(b, "unsorted.onnx");
  REQUIRE(model.graph.num_nodes() == 2);
  CHECK(model.graph.node(0).name == "first");
  CHECK(model.graph.node(1).name == "second");
}

TEST_CASE("Pow Reciprocal Exp and Erf of constants fold, an integer exponent included", "[onnx][fold]") {
  ModelBuilder b;
  b.input("x", {1, 4});
  b.weight("c", {4}, {2.0f, 4.0f, 8.0f, -1.0f});
  b.int_constant("two", {}, {2});
  b.node("Pow", {"c", "two"}, {"squared"});        // 4 16 64 1
  b.node("Reciprocal", {"squared"}, {"inverse"});  // 0.25 0.0625 0.015625 1
  b.node("Exp", {"inverse"}, {"grown"});
  b.node("Erf", {"grown"}, {"scale"});
  b.node("Mul", {"x", "scale"}, {"y"}, "scale_x");
  b.output("y", 2);
  const auto model = import(b, "fold_elementwise.onnx");
  const auto& mul = only(model.graph, OpKind::kMul);
  REQUIRE(model.graph.num_nodes() == 1);
  const auto& scale = model.graph.tensor(mul.inputs.at(1));
  REQUIRE(scale.is_constant());
  const std::vector<double> c{2.0, 4.0, 8.0, -1.0};
  for (size_t k = 0; k < c.size(); ++k) {
    CHECK((*scale.data)[k] == Approx(std::erf(std::exp(1.0 / (c[k] * c[k])))).epsilon(1e-6));
  }
}

namespace {

// x [2, 3, 4, 4] reshaped to a target that Mod computes from constants:
// [Mod(p, q), -1].
ModelBuilder mod_target_model(int64_t p, int64_t q, bool c_fmod) {
  ModelBuilder b;
  b.input("x", {2, 3, 4, 4});
  b.int_constant("p", {1}, {p});
  b.int_constant("q", {1}, {q});
  auto& mod = b.node("Mod", {"p", "q"}, {"rows"});
  if (c_fmod) ModelBuilder::integer(mod, "fmod", 1);
  b.int_constant("rest", {1}, {-1});
  ModelBuilder::integer(b.node("Concat", {"rows", "rest"}, {"target"}), "axis", 0);
  b.node("Reshape", {"x", "target"}, {"flat"});
  b.node("Relu", {"flat"}, {"y"});
  b.output("y", 2);
  return b;
}

}  // namespace

TEST_CASE("Mod folds with the divisor's sign (fmod 0) and the dividend's (fmod 1)", "[onnx][fold]") {
  // -8 mod 5: 2 as Python computes it, -3 as C's fmod does.
  const auto python = import(mod_target_model(-8, 5, false), "mod_python.onnx");
  CHECK(only(python.graph, OpKind::kReshape).attr<ios::ir::ReshapeAttrs>().shape == Shape{2, 48});
  // 8 mod -5: 3 with fmod 1 (-2 with fmod 0, not a valid row count).
  const auto c = import(mod_target_model(8, -5, true), "mod_c.onnx");
  CHECK(only(c.graph, OpKind::kReshape).attr<ios::ir::ReshapeAttrs>().shape == Shape{3, 32});
  CHECK_THROWS_WITH(import(mod_target_model(8, 0, false), "mod_zero.onnx"),
                    Catch::Contains("mod_zero.onnx") && Catch::Contains("'rows_node' (Mod)") &&
                        Catch::Contains("integer modulo by zero"));
}

TEST_CASE("ScatterND on constants folds (Swin's attention mask is built this way)", "[onnx][fold]") {
  // data [9, 12, 9] with rows 0 and 2 replaced by 2 and 4: the target [2, 12, 4].
  auto model = [](std::vector<int64_t> indices, std::vector<int64_t> index_dims) {
    ModelBuilder b;
    b.input("x", {2, 3, 4, 4});
    b.int_constant("data", {3}, {9, 12, 9});
    b.int_constant("indices", index_dims, indices);
    b.int_constant("updates", {2}, {2, 4});
    b.node("ScatterND", {"data", "indices", "updates"}, {"target"}, "mask/ScatterND");
    b.node("Reshape", {"x", "target"}, {"y"});
    b.output("y", 3);
    return b;
  };
  const auto folded = import(model({0, 2}, {2, 1}), "scatter.onnx");
  CHECK(folded.graph.num_nodes() == 1);
  CHECK(only(folded.graph, OpKind::kReshape).attr<ios::ir::ReshapeAttrs>().shape == Shape{2, 12, 4});
  CHECK(folded.graph.tensor(folded.graph.outputs()[0]).shape == Shape{2, 12, 4});
  // Negative indices count from the end, as in ONNX.
  const auto negative = import(model({-3, -1}, {2, 1}), "scatter_negative.onnx");
  CHECK(only(negative.graph, OpKind::kReshape).attr<ios::ir::ReshapeAttrs>().shape == Shape{2, 12, 4});
  CHECK_THROWS_WITH(import(model({0, 3}, {2, 1}), "scatter_out.onnx"),
                    Catch::Contains("scatter_out.onnx") && Catch::Contains("'mask/ScatterND'") &&
                        Catch::Contains("index 3 out of range"));
}
