// ConvTranspose as the importer reads it: PyTorch's nn.ConvTranspose2d
// export (strides, pads, output_padding), output_shape and auto_pad, and
// the hostile attributes refused in one line naming the node.
#include <catch2/catch.hpp>

#include <array>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "import_error.h"
#include "ir/graph.h"
#include "model_builder.h"
#include "onnx/importer.h"

namespace {

using ios::test::import_error;
using ios::test::ModelBuilder;

// x [1, 4, 5, 5] -> ConvTranspose (weights [4, 6 / group, 3, 3]) -> y.
ModelBuilder conv_transpose(const std::function<void(::onnx::NodeProto&)>& attrs, int64_t group = 1,
                            std::vector<int64_t> x_dims = {1, 4, 5, 5}) {
  ModelBuilder b(13);
  b.input("x", x_dims);
  std::vector<int64_t> w_dims{x_dims[1], 6 / group};
  for (size_t d = 2; d < x_dims.size(); ++d) w_dims.push_back(3);
  b.ramp_weight("w", w_dims);
  auto& n = b.node("ConvTranspose", {"x", "w"}, {"y"}, "up");
  attrs(n);
  b.output("y", static_cast<int>(x_dims.size()));
  return b;
}

ios::ir::Shape output_shape(const ios::onnx::ImportedModel& m) { return m.graph.tensor(m.graph.outputs()[0]).shape; }

}  // namespace

TEST_CASE("ConvTranspose over one and three spatial axes", "[onnx][conv_transpose]") {
  SECTION("nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1): twice the length") {
    const auto m = ios::onnx::import_model(conv_transpose(
                                               [](auto& n) {
                                                 ModelBuilder::ints(n, "strides", {2});
                                                 ModelBuilder::ints(n, "pads", {1, 1});
                                                 ModelBuilder::ints(n, "output_padding", {1});
                                               },
                                               1, {1, 4, 5})
                                               .save("ct_1d.onnx"));
    CHECK(output_shape(m) == ios::ir::Shape{1, 6, 10});
  }
  SECTION(
      "nn.ConvTranspose3d(4, 6, 3, stride=(1, 2, 2)): frames kept, H and W doubled plus the "
      "kernel") {
    const auto m = ios::onnx::import_model(conv_transpose(
                                               [](auto& n) {
                                                 ModelBuilder::ints(n, "strides", {1, 2, 2});
                                               },
                                               1, {1, 4, 2, 3, 3})
                                               .save("ct_3d.onnx"));
    CHECK(output_shape(m) == ios::ir::Shape{1, 6, 4, 7, 7});
    const auto& a = m.graph.node(0).attr<ios::ir::ConvTransposeAttrs>();
    CHECK(a.pads == ios::ir::Dims{0, 0, 0, 0, 0, 0});
    CHECK(a.output_padding == ios::ir::Dims{0, 0, 0});
  }
}

TEST_CASE("ConvTranspose's output length: strides, pads, output_padding, output_shape, auto_pad", "[onnx][conv_transpose]") {
  SECTION("nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1): twice the input") {
    const auto m = ios::onnx::import_model(conv_transpose([](auto& n) {
                                             ModelBuilder::ints(n, "strides", {2, 2});
                                             ModelBuilder::ints(n, "pads", {1, 1, 1, 1});
                                             ModelBuilder::ints(n, "output_padding", {1, 1});
                                           }).save("ct.onnx"));
    CHECK(output_shape(m) == ios::ir::Shape{1, 6, 10, 10});
    const auto& a = m.graph.node(0).attr<ios::ir::ConvTransposeAttrs>();
    CHECK(a.pads == ios::ir::Dims{1, 1, 1, 1});
  }
  SECTION("output_shape gives the pads (the extra one at the start)") {
    const auto m = ios::onnx::import_model(conv_transpose([](auto& n) {
                                             ModelBuilder::ints(n, "strides", {2, 2});
                                             ModelBuilder::ints(n, "output_shape", {10, 9});
                                           }).save("ct_shape.onnx"));
    CHECK(output_shape(m) == ios::ir::Shape{1, 6, 10, 9});
    // Full length 11: one row of padding, at the start; two columns, one each side.
    CHECK(m.graph.node(0).attr<ios::ir::ConvTransposeAttrs>().pads == ios::ir::Dims{1, 1, 0, 1});
  }
  SECTION("auto_pad SAME_UPPER: input times stride, the extra pad at the end") {
    const auto m = ios::onnx::import_model(conv_transpose([](auto& n) {
                                             ModelBuilder::ints(n, "strides", {2, 2});
                                             ModelBuilder::text(n, "auto_pad", "SAME_UPPER");
                                           }).save("ct_same.onnx"));
    CHECK(output_shape(m) == ios::ir::Shape{1, 6, 10, 10});
    CHECK(m.graph.node(0).attr<ios::ir::ConvTransposeAttrs>().pads == ios::ir::Dims{0, 0, 1, 1});
  }
  SECTION("an output_shape past the full output: the extra rows are output padding") {
    const auto m = ios::onnx::import_model(conv_transpose([](auto& n) {
                                             ModelBuilder::ints(n, "strides", {3, 2});
                                             ModelBuilder::ints(n, "output_shape", {16, 10});
                                           }).save("ct_longer.onnx"));
    CHECK(output_shape(m) == ios::ir::Shape{1, 6, 16, 10});
    const auto& a = m.graph.node(0).attr<ios::ir::ConvTransposeAttrs>();
    CHECK(a.output_padding == ios::ir::Dims{1, 0});  // 3 * 4 + 3 = 15 rows, one more
    CHECK(a.pads == ios::ir::Dims{0, 1, 0, 0});      // 11 columns, one pad at the start
  }
  SECTION("groups") {
    const auto m = ios::onnx::import_model(conv_transpose([](auto& n) { ModelBuilder::integer(n, "group", 2); }, 2).save("ct_group.onnx"));
    CHECK(output_shape(m) == ios::ir::Shape{1, 6, 7, 7});
  }
}

TEST_CASE("hostile ConvTranspose attributes are refused in one line naming the node", "[onnx][conv_transpose][errors]") {
  const auto refused = [](const std::string& file, ModelBuilder b, const std::string& expected) {
    const std::string message = import_error(b.save(file));
    INFO(message);
    CHECK(message.find("'up' (ConvTranspose)") != std::string::npos);
    CHECK(message.find(expected) != std::string::npos);
  };
  refused("ct_op.onnx", conv_transpose([](auto& n) {
            ModelBuilder::ints(n, "strides", {2, 2});
            ModelBuilder::ints(n, "output_padding", {2, 0});
          }),
          "output_padding [2, 0] must be at least 0 and smaller than the stride (2) or the dilation (1)");
  refused("ct_op_negative.onnx", conv_transpose([](auto& n) { ModelBuilder::ints(n, "output_padding", {-1, 0}); }),
          "output_padding [-1, 0]");
  // Four spatial axes: windows take one to three.
  refused("ct_4d.onnx", conv_transpose([](auto&) {}, 1, {1, 4, 3, 3, 3, 3}),
          "or 3-D (N,C,T,H,W) input");
  refused("ct_group.onnx", conv_transpose([](auto& n) { ModelBuilder::integer(n, "group", 3); }, 2), "group 3");
  refused("ct_huge.onnx", conv_transpose([](auto& n) {
            ModelBuilder::ints(n, "dilations", {1 << 20, 1});
            ModelBuilder::ints(n, "strides", {1 << 20, 1});
          }, 1, {1, 4, 32, 1}),
          "more than 2^24");
  // An output_shape too large or empty is caught before the parser, by the
  // importer's size check and by ONNX's shape inference, each naming the node.
  refused("ct_shape_huge.onnx", conv_transpose([](auto& n) { ModelBuilder::ints(n, "output_shape", {1 << 30, 5}); }),
          "more than 2^34 elements");
  CHECK(import_error(conv_transpose([](auto& n) { ModelBuilder::ints(n, "output_shape", {0, 5}); })
                         .save("ct_shape_zero.onnx"))
            .find("node name: up") != std::string::npos);
  // auto_pad SAME where ONNX's shape inference and the specification give
  // different lengths (an output_padding; a stride past the kernel, in 1-D
  // and 3-D): refused, not an internal error when the two shapes meet.
  refused("ct_same_op.onnx", conv_transpose([](auto& n) {
            ModelBuilder::ints(n, "strides", {2, 2});
            ModelBuilder::ints(n, "output_padding", {1, 0});
            ModelBuilder::text(n, "auto_pad", "SAME_UPPER");
          }),
          "auto_pad SAME_UPPER with kernel 3, stride 2, dilation 1 and output_padding 1 on axis 2: "
          "ONNX's shape "
          "inference gives length 11, the ONNX specification 10");
  refused("ct_same_1d.onnx",
          conv_transpose(
              [](auto& n) {
                ModelBuilder::ints(n, "strides", {5});
                ModelBuilder::text(n, "auto_pad", "SAME_LOWER");
              },
              1, {1, 4, 8}),
          "gives length 38, the ONNX specification 40; re-export with explicit pads");
  refused("ct_same_3d.onnx",
          conv_transpose(
              [](auto& n) {
                ModelBuilder::ints(n, "strides", {1, 4, 2});
                ModelBuilder::text(n, "auto_pad", "SAME_LOWER");
              },
              1, {1, 4, 2, 3, 3}),
          "on axis 3: ONNX's shape inference gives length 11, the ONNX specification 12");
  SECTION("zero and negative strides are refused before shape inference") {
    for (int64_t stride : {0, -2}) {
      const std::string message =
          import_error(conv_transpose([&](auto& n) { ModelBuilder::ints(n, "strides", {stride, 1}); }).save("ct_stride.onnx"));
      CHECK(message.find("'up' (ConvTranspose): attribute 'strides' has the value " + std::to_string(stride)) !=
            std::string::npos);
    }
  }
}

TEST_CASE("Conv and ConvTranspose with weights of another rank than the input never crash",
          "[onnx][conv_transpose][errors]") {
  // Found by the ONNX import fuzzer: without kernel_shape, ONNX 1.12's
  // inference takes a kernel length per spatial axis of the weights and a
  // dilation per spatial axis of the input, and read from address 0 (input
  // N,C: no spatial axis) or past its list (1-D input, 3-D weights). The
  // opset-1 model goes through the version converter's inference first.
  for (const char* op : {"Conv", "ConvTranspose"}) {
    for (const auto& [opset, x_dims, w_dims] :
         {std::tuple<int64_t, std::vector<int64_t>, std::vector<int64_t>>{13, {1, 4}, {4, 4, 3}},
          {1, {1, 4}, {4, 4, 3}},
          {13, {1, 4, 8}, {4, 4, 3, 3, 3}}}) {
      ModelBuilder b(opset);
      b.input("x", x_dims);
      b.ramp_weight("w", w_dims);
      b.node(op, {"x", "w"}, {"y"}, "c");
      b.output("y", 3);
      const std::string message = import_error(b.save("window_weight_rank.onnx"));
      INFO(op << " at opset " << opset << ": " << message);
      CHECK(message.find("node name: c") != std::string::npos);
      CHECK(message.find("the weights have rank " + std::to_string(w_dims.size()) +
                         " and the input rank " + std::to_string(x_dims.size())) !=
            std::string::npos);
    }
  }
}
