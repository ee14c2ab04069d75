// ios's own shape inference, operator by operator. Expected sizes follow
// the formulas in the ONNX operator documentation, worked out by hand.
#include <catch2/catch.hpp>

#include "core/error.h"
#include "ir/shape_inference.h"
#include "ir_test_util.h"

namespace {

using namespace ios::ir;

Shape one(OpKind op, const std::vector<Shape>& in, Attrs attrs = {}, size_t outputs = 1) {
  Node n;
  n.name = "n";
  n.op = op;
  n.attrs = std::move(attrs);
  n.outputs.resize(outputs);
  return infer_node_shapes(n, in).at(0);
}

std::string error_of(OpKind op, const std::vector<Shape>& in, Attrs attrs = {}) {
  Node n;
  n.name = "bad_node";
  n.op = op;
  n.attrs = std::move(attrs);
  n.outputs.resize(1);
  try {
    infer_node_shapes(n, in);
  } catch (const ios::UserError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("Conv output sizes with stride dilation groups and asymmetric pads", "[ir][shapes]") {
  ConvAttrs a;
  a.kernel = {3, 3};
  a.stride = {2, 2};
  a.pads = {1, 1, 1, 1};
  CHECK(one(OpKind::kConv, {{1, 3, 224, 224}, {64, 3, 3, 3}}, a) == Shape{1, 64, 112, 112});
  a = ConvAttrs{};
  a.kernel = {3, 5};
  a.dilation = {2, 1};
  a.pads = {0, 2, 1, 0};  // H: 10 + 1 - 5 + 1 = 7; W: 10 + 2 - 5 + 1 = 8
  a.group = 4;
  CHECK(one(OpKind::kConv, {{2, 8, 10, 10}, {12, 2, 3, 5}, {12}}, a) == Shape{2, 12, 7, 8});
  a = ConvAttrs{};
  a.kernel = {7, 1};
  a.pads = {3, 0, 3, 0};
  CHECK(one(OpKind::kConv, {{1, 128, 17, 17}, {192, 128, 7, 1}}, a) == Shape{1, 192, 17, 17});

  ConvAttrs bad;
  bad.kernel = {3, 3};
  const std::string message = error_of(OpKind::kConv, {{1, 4, 8, 8}, {8, 3, 3, 3}}, bad);
  CHECK(message.find("bad_node") != std::string::npos);
  CHECK(message.find("Conv") != std::string::npos);
  CHECK(message.find("1x4x8x8") != std::string::npos);
  CHECK(error_of(OpKind::kConv, {{1, 3, 2, 2}, {8, 3, 3, 3}}, bad).find("does not fit") != std::string::npos);
  CHECK(error_of(OpKind::kConv, {{1, 3, 8, 8}, {8, 3, 3, 3}, {4}}, bad).find("bias") != std::string::npos);
}

TEST_CASE("pooling sizes with and without ceil_mode", "[ir][shapes]") {
  PoolAttrs a;
  a.kernel = {3, 3};
  a.stride = {2, 2};
  CHECK(one(OpKind::kMaxPool, {{1, 64, 112, 112}}, a) == Shape{1, 64, 55, 55});
  a.ceil_mode = true;  // GoogLeNet: 112 -> ceil(109 / 2) + 1 = 56
  CHECK(one(OpKind::kMaxPool, {{1, 64, 112, 112}}, a) == Shape{1, 64, 56, 56});
  a.ceil_mode = false;
  a.pads = {1, 1, 1, 1};
  a.stride = {1, 1};
  CHECK(one(OpKind::kAveragePool, {{1, 192, 35, 35}}, a) == Shape{1, 192, 35, 35});
  CHECK(one(OpKind::kGlobalAveragePool, {{2, 7, 5, 3}}) == Shape{2, 7, 1, 1});
  // ceil_mode whose last window would start in the padding: refused.
  PoolAttrs edge;
  edge.kernel = {2, 2};
  edge.stride = {2, 2};
  edge.pads = {0, 0, 1, 1};
  edge.ceil_mode = true;
  CHECK(error_of(OpKind::kMaxPool, {{1, 1, 4, 4}}, edge).find("ceil_mode") != std::string::npos);
  CHECK(window_output_size(5, 3, 2, 1, 0, 0, true) == 2);
  CHECK(window_output_size(6, 3, 2, 1, 0, 0, true) == 3);
  CHECK(window_output_size(6, 3, 2, 1, 0, 0, false) == 2);
}

TEST_CASE("broadcasting concat split and slice shapes", "[ir][shapes]") {
  CHECK(broadcast_shapes({1, 3, 4, 4}, {3, 1, 1}) == Shape{1, 3, 4, 4});
  CHECK(broadcast_shapes({2, 1}, {1, 5}) == Shape{2, 5});
  CHECK(broadcast_shapes({}, {4}) == Shape{4});
  CHECK_FALSE(broadcast_shapes({3}, {4}).has_value());
  CHECK(error_of(OpKind::kAdd, {{1, 3}, {1, 4}}).find("broadcast") != std::string::npos);

  CHECK(one(OpKind::kConcat, {{1, 2, 5, 5}, {1, 3, 5, 5}, {1, 1, 5, 5}}, AxisAttrs{1}) == Shape{1, 6, 5, 5});
  CHECK(error_of(OpKind::kConcat, {{1, 2, 5, 5}, {1, 3, 4, 5}}, AxisAttrs{1}).find("axis 2") != std::string::npos);

  Node split;
  split.name = "split";
  split.op = OpKind::kSplit;
  split.attrs = SplitAttrs{1, {2, 6}};
  split.outputs.resize(2);
  const auto parts = infer_node_shapes(split, {{1, 8, 3, 3}});
  CHECK(parts == std::vector<Shape>{{1, 2, 3, 3}, {1, 6, 3, 3}});
  split.attrs = SplitAttrs{1, {2, 5}};
  CHECK_THROWS_AS(infer_node_shapes(split, {{1, 8, 3, 3}}), ios::UserError);

  SliceAttrs s;
  s.axes = {2, 3};
  s.starts = {1, 4};
  s.ends = {6, -1};
  s.steps = {2, -2};  // H: 1,3,5 -> 3; W: 4,2,0 -> 3
  CHECK(one(OpKind::kSlice, {{1, 2, 7, 5}}, s) == Shape{1, 2, 3, 3});
  s.starts = {3, 0};
  s.ends = {3, 0};
  s.steps = {1, 1};
  CHECK(one(OpKind::kSlice, {{1, 2, 7, 5}}, s) == Shape{1, 2, 0, 0});
}

TEST_CASE("layout and matrix operators", "[ir][shapes]") {
  CHECK(one(OpKind::kFlatten, {{2, 3, 4, 5}}, AxisAttrs{1}) == Shape{2, 60});
  CHECK(one(OpKind::kFlatten, {{2, 3, 4, 5}}, AxisAttrs{0}) == Shape{1, 120});
  CHECK(one(OpKind::kFlatten, {{2, 3, 4, 5}}, AxisAttrs{4}) == Shape{120, 1});
  CHECK(one(OpKind::kReshape, {{2, 3, 4}}, ReshapeAttrs{{6, 4}}) == Shape{6, 4});
  CHECK(error_of(OpKind::kReshape, {{2, 3, 4}}, ReshapeAttrs{{5, 5}}).find("reshape") != std::string::npos);
  CHECK(one(OpKind::kTranspose, {{2, 3, 4}}, TransposeAttrs{{2, 0, 1}}) == Shape{4, 2, 3});
  GemmAttrs g;
  g.trans_b = true;
  CHECK(one(OpKind::kGemm, {{8, 2048}, {1000, 2048}, {1000}}, g) == Shape{8, 1000});
  CHECK(error_of(OpKind::kGemm, {{8, 2048}, {2048, 1000}}, g).find("inner") != std::string::npos);
  CHECK(one(OpKind::kMatMul, {{2, 5, 3}, {3, 4}}) == Shape{2, 5, 4});
  CHECK(one(OpKind::kMatMul, {{3}, {3, 4}}) == Shape{4});
  CHECK(one(OpKind::kMatMul, {{6, 1, 5, 3}, {2, 3, 4}}) == Shape{6, 2, 5, 4});
  CHECK(one(OpKind::kReduceMean, {{2, 8, 7, 7}}, ReduceAttrs{{2, 3}, true}) == Shape{2, 8, 1, 1});
  CHECK(one(OpKind::kReduceMean, {{2, 8, 7, 7}}, ReduceAttrs{{2, 3}, false}) == Shape{2, 8});
  CHECK(one(OpKind::kSoftmax, {{2, 10}}, AxisAttrs{1}) == Shape{2, 10});
  PadAttrs p;
  p.pads = {0, 0, 1, 2, 0, 0, 3, 4};
  CHECK(one(OpKind::kPad, {{1, 3, 5, 5}}, p) == Shape{1, 3, 9, 11});
  CHECK(one(OpKind::kBatchNorm, {{1, 3, 5, 5}, {3}, {3}, {3}, {3}}, BatchNormAttrs{}) == Shape{1, 3, 5, 5});
  CHECK(error_of(OpKind::kBatchNorm, {{1, 3, 5, 5}, {4}, {3}, {3}, {3}}, BatchNormAttrs{}).find("parameter") !=
        std::string::npos);
  CHECK(one(OpKind::kHardSwish, {{1, 3, 5, 5}}) == Shape{1, 3, 5, 5});
  CHECK(one(OpKind::kClip, {{1, 3}}, ClipAttrs{}) == Shape{1, 3});
}

TEST_CASE("infer_shapes walks the graph in topological order", "[ir][shapes]") {
  Graph g;
  const TensorId x = ios::test::graph_input(g, "x", {1, 3, 8, 8});
  const TensorId a = ios::test::activation(g, "a"), b = ios::test::activation(g, "b");
  // Inserted out of order: the Relu reads the conv's output.
  ios::test::add(g, OpKind::kRelu, "relu", {a}, {b});
  ConvAttrs c;
  c.kernel = {1, 1};
  ios::test::add(g, OpKind::kConv, "conv", {x, ios::test::weight(g, "w", {5, 3, 1, 1}, ios::test::pattern(15, 1))},
                 {a}, c);
  g.outputs() = {b};
  infer_shapes(g);
  CHECK(g.tensor(a).shape == Shape{1, 5, 8, 8});
  CHECK(g.tensor(b).shape == Shape{1, 5, 8, 8});
}
