// Hostile ONNX files that once reached a division by zero, an overflowing
// shape product or an unbounded allocation: each must be a UserError.
#include <catch2/catch.hpp>

#include "import_error.h"
#include "model_builder.h"

using ios::test::import_error;
using ios::test::ModelBuilder;

TEST_CASE("a zero stride is refused before shape inference divides by it", "[onnx][errors][hostile]") {
  ModelBuilder b;
  b.input("x", {1, 3, 8, 8});
  b.ramp_weight("w", {4, 3, 3, 3});
  auto& conv = b.node("Conv", {"x", "w"}, {"y"}, "conv0");
  ModelBuilder::ints(conv, "strides", {0, 0});
  b.output("y", 4);
  const std::string message = import_error(b.save("zero_stride.onnx"));
  CHECK(message.find("conv0") != std::string::npos);
  CHECK(message.find("'strides'") != std::string::npos);
}

TEST_CASE("initializer dimensions whose product overflows are refused", "[onnx][errors][hostile]") {
  ModelBuilder b;
  b.input("x", {1, 3, 8, 8});
  // 2^32 x 2^32 wraps to 0 in 64-bit arithmetic: an empty tensor that
  // claims 2^64 elements.
  b.int_weight("huge", {int64_t{1} << 32, int64_t{1} << 32}, {});
  b.int_weight("starts", {2}, {0, 0});
  b.int_weight("ends", {2}, {1, 1});
  b.node("Slice", {"huge", "starts", "ends"}, {"s"}, "slice0");
  b.node("Relu", {"x"}, {"y"}, "relu0");
  b.output("y", 4);
  const std::string message = import_error(b.save("overflow_dims.onnx"));
  INFO(message);
  CHECK((message.find("overflow") != std::string::npos || message.find("huge") != std::string::npos));
}

TEST_CASE("a constant folded to an absurd size is refused", "[onnx][errors][hostile]") {
  ModelBuilder b;
  b.input("x", {1, 3, 8, 8});
  b.int_weight("shape", {1}, {int64_t{1} << 40});
  b.node("ConstantOfShape", {"shape"}, {"big"}, "cos0");
  b.node("Relu", {"x"}, {"y"}, "relu0");
  b.output("y", 4);
  const std::string message = import_error(b.save("huge_fold.onnx"));
  CHECK(message.find("too large") != std::string::npos);
}

TEST_CASE("an Einsum over inferred dimensions whose products overflow is refused", "[onnx][errors][hostile]") {
  // Expand makes an activation of shape [2^40, 2^40, 2] (nothing allocated:
  // shapes are checked after folding); Einsum 'abc,cd->abd' flattens a and b
  // into one dimension of 2^80 while its output's dims are inferred.
  ModelBuilder b;
  b.input("x", {1, 1, 1});
  b.int_weight("big", {3}, {int64_t{1} << 40, int64_t{1} << 40, 2});
  b.node("Expand", {"x", "big"}, {"e"}, "expand0");
  b.ramp_weight("w", {2, 3});
  ModelBuilder::text(b.node("Einsum", {"e", "w"}, {"y"}, "einsum0"), "equation", "abc,cd->abd");
  b.output("y", 3);
  const std::string message = import_error(b.save("einsum_overflow.onnx"));
  INFO(message);
  CHECK(message.find("einsum_overflow.onnx") != std::string::npos);
}
