// Resize (opset 10+) and Upsample (opset 7-9): what the importer reads from
// each form, the output shape ONNX defines, and a named error for every form
// ios does not run.
#include <catch2/catch.hpp>

#include "import_error.h"
#include "ir/graph.h"
#include "model_builder.h"
#include "onnx/importer.h"

namespace {

using ios::ir::ResizeAttrs;
using ios::test::import_error;
using ios::test::ModelBuilder;
namespace resize = ios::ir::resize;

const ios::ir::Node& resize_node(const ios::ir::Graph& g) {
  for (const auto& n : g.nodes()) {
    if (n.op == ios::ir::OpKind::kResize) return n;
  }
  FAIL("no Resize node");
  return g.nodes().front();
}

// x [1, 2, 5, 6] -> Resize(x, "", scales [1, 1, sh, sw]) -> y, opset `opset`.
ModelBuilder scales_model(int64_t opset, float sh, float sw) {
  ModelBuilder b(opset);
  b.input("x", {1, 2, 5, 6});
  b.weight("scales", {4}, {1.0f, 1.0f, sh, sw});
  b.node("Resize", {"x", "", "scales"}, {"y"}, "up");
  b.output("y", 4);
  return b;
}

// The same with sizes [1, 2, h, w].
ModelBuilder sizes_model(int64_t opset, int64_t h, int64_t w, int64_t channels = 2) {
  ModelBuilder b(opset);
  b.input("x", {1, 2, 5, 6});
  b.int_weight("sizes", {4}, {1, channels, h, w});
  b.node("Resize", {"x", "", "", "sizes"}, {"y"}, "up");
  b.output("y", 4);
  return b;
}

}  // namespace

TEST_CASE("Resize scales give floor(input * scale) rows and columns", "[onnx][resize]") {
  ModelBuilder b = scales_model(13, 2.0f, 1.5f);
  ModelBuilder::text(*b.model.mutable_graph()->mutable_node(0), "mode", "linear");
  ModelBuilder::text(*b.model.mutable_graph()->mutable_node(0), "coordinate_transformation_mode",
                     "pytorch_half_pixel");
  const auto model = ios::onnx::import_model(b.save("resize_scales.onnx"));
  const auto& n = resize_node(model.graph);
  const auto& a = n.attr<ResizeAttrs>();
  CHECK(model.graph.tensor(n.outputs[0]).shape == ios::ir::Shape{1, 2, 10, 9});
  CHECK(a.mode == resize::Mode::kLinear);
  CHECK(a.coordinates == resize::Coordinates::kPytorchHalfPixel);
  CHECK(a.scale == std::vector<float>{2.0f, 1.5f});
  CHECK(a.size == ios::ir::Dims{10, 9});
}

TEST_CASE("Resize sizes give the output and the scales out / in", "[onnx][resize]") {
  ModelBuilder b = sizes_model(13, 3, 12);
  ModelBuilder::text(*b.model.mutable_graph()->mutable_node(0), "nearest_mode", "ceil");
  const auto model = ios::onnx::import_model(b.save("resize_sizes.onnx"));
  const auto& a = resize_node(model.graph).attr<ResizeAttrs>();
  CHECK(a.mode == resize::Mode::kNearest);
  CHECK(a.coordinates == resize::Coordinates::kHalfPixel);
  CHECK(a.nearest == resize::Nearest::kCeil);
  CHECK(a.size == ios::ir::Dims{3, 12});
  CHECK(a.scale == std::vector<float>{3.0f / 5.0f, 2.0f});
}

TEST_CASE("Upsample (opset 9) and Resize-10 read as asymmetric Resize", "[onnx][resize]") {
  for (const char* op : {"Upsample", "Resize"}) {
    INFO(op);
    ModelBuilder b(std::string(op) == "Upsample" ? 9 : 10);
    b.input("x", {1, 2, 5, 6});
    b.weight("scales", {4}, {1.0f, 1.0f, 2.0f, 3.0f});
    ModelBuilder::text(b.node(op, {"x", "scales"}, {"y"}, "up"), "mode", "linear");
    b.output("y", 4);
    const auto model = ios::onnx::import_model(b.save(std::string(op) + "_legacy.onnx"));
    const auto& n = resize_node(model.graph);
    CHECK(model.graph.tensor(n.outputs[0]).shape == ios::ir::Shape{1, 2, 10, 18});
    CHECK(n.attr<ResizeAttrs>().coordinates == resize::Coordinates::kAsymmetric);
    CHECK(n.attr<ResizeAttrs>().mode == resize::Mode::kLinear);
  }
}

TEST_CASE("unsupported Resize forms are named errors", "[onnx][resize][errors]") {
  auto with = [](ModelBuilder b, const char* name, const char* value) {
    ModelBuilder::text(*b.model.mutable_graph()->mutable_node(0), name, value);
    return b;
  };
  struct Bad {
    const char* file;
    ModelBuilder model;
    const char* says;
  };
  std::vector<Bad> bad = {
      {"resize_cubic.onnx", with(scales_model(13, 2, 2), "mode", "cubic"),
       "mode 'cubic' is not supported"},
      {"resize_crop.onnx",
       with(scales_model(13, 2, 2), "coordinate_transformation_mode", "tf_crop_and_resize"),
       "coordinate_transformation_mode 'tf_crop_and_resize' is not supported"},
      {"resize_tf_nn.onnx",
       with(scales_model(13, 2, 2), "coordinate_transformation_mode", "tf_half_pixel_for_nn"),
       "coordinate_transformation_mode 'tf_half_pixel_for_nn'"},
      {"resize_channels.onnx", scales_model(13, 2, 2), "resizes the batch or channel axis"},
      {"resize_channel_sizes.onnx", sizes_model(13, 4, 4, 3), "resizes the batch or channel axis"},
      // 5 * 1.5 = 7.5 rows: ONNX's reference and ONNX Runtime place align_corners samples
      // differently.
      {"resize_align_fraction.onnx",
       with(scales_model(13, 1.5f, 2), "coordinate_transformation_mode", "align_corners"),
       "align_corners with scale 1.5 on length 5 gives the non-integer length 7.5"},
  };
  // Scales on the channel axis.
  bad[3].model.model.mutable_graph()->mutable_initializer(0)->set_raw_data(
      std::string("\0\0\x80\x3f\0\0\0\x40\0\0\0\x40\0\0\0\x40", 16));  // [1, 2, 2, 2]
  {
    ModelBuilder b = scales_model(13, 2, 2);
    ModelBuilder::integer(*b.model.mutable_graph()->mutable_node(0), "exclude_outside", 1);
    bad.push_back({"resize_exclude.onnx", b, "exclude_outside 1 is not supported"});
  }
  {  // scales computed at run time
    ModelBuilder b(13);
    b.input("x", {1, 2, 5, 6});
    b.input("s", {4});
    b.node("Resize", {"x", "", "s"}, {"y"}, "up");
    b.output("y", 4);
    bad.push_back({"resize_runtime_scales.onnx", b, "computed at run time"});
  }
  for (const Bad& c : bad) {
    INFO(c.file);
    const std::string message = import_error(c.model.save(c.file));
    CHECK(message.find("'up' (Resize)") != std::string::npos);
    CHECK(message.find(c.says) != std::string::npos);
  }
}
