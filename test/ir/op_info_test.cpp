// The operator table (ir/op_info.h): one entry per OpKind, found by its ONNX
// name, with traits that agree with each other.
#include <catch2/catch.hpp>

#include <set>

#include "ir/elementwise.h"
#include "ir/op_info.h"

namespace ios::ir {
namespace {

TEST_CASE("the operator table has one entry per operator, found by its ONNX name", "[ir][op_info]") {
  REQUIRE(all_ops().size() == static_cast<size_t>(kNumOpKinds));
  std::set<std::string_view> names;
  for (int i = 0; i < kNumOpKinds; ++i) {
    const auto op = static_cast<OpKind>(i);
    const OpInfo& info = op_info(op);
    INFO(info.onnx_name);
    CHECK(info.kind == op);
    CHECK(op_name(op) == info.onnx_name);
    CHECK(names.insert(info.onnx_name).second);
    REQUIRE(find_onnx_op(info.onnx_name) == &info);
    CHECK(info.shape != nullptr);
    CHECK(info.since_opset >= 1);
    CHECK((info.until_opset == 0 || info.until_opset >= info.since_opset));
    if (!info.legacy_name.empty()) {  // an older name, with its own range, found too and unique
      CHECK(names.insert(info.legacy_name).second);
      CHECK(find_onnx_op(info.legacy_name) == &info);
      CHECK((info.legacy_until_opset == 0 || info.legacy_until_opset >= info.legacy_since_opset));
    }
  }
  CHECK(find_onnx_op("Upsample") == &op_info(OpKind::kResize));
  CHECK(find_onnx_op("Identity") == nullptr);  // removed at import, not an IR operator
  CHECK(find_onnx_op("relu") == nullptr);       // names are case-sensitive, as in ONNX
}

TEST_CASE("operator traits agree with each other", "[ir][op_info]") {
  for (const OpInfo& info : all_ops()) {
    INFO(info.onnx_name);
    const OpTraits& t = info.traits;
    const bool elementwise = t.elementwise != Elementwise::kNone;
    CHECK(is_elementwise(info.kind) == elementwise);
    // Element-wise operators form no unit of their own kind and move data.
    if (elementwise) {
      CHECK(t.op_class == OpClass::kElementwise);
      CHECK_FALSE(t.view);
      CHECK_FALSE(t.zero_copy);
    } else {
      CHECK(t.op_class != OpClass::kElementwise);
      CHECK_FALSE(t.in_place);
      CHECK_FALSE(t.prologue);
    }
    // The shared math exists exactly for element-wise operators (BatchNorm's
    // per-channel math is each backend's own).
    if (info.kind != OpKind::kBatchNorm) {
      CHECK(ew::has_unary(info.kind) == (t.elementwise == Elementwise::kUnary));
      CHECK(ew::has_binary(info.kind) == (t.elementwise == Elementwise::kBinary));
    }
  }
}

TEST_CASE("element-wise parameters come from the node's attributes", "[ir][op_info]") {
  Node clip;
  clip.op = OpKind::kClip;
  ClipAttrs c;
  c.min = -1.5f;
  c.max = 4.0f;
  clip.attrs = c;
  CHECK(elementwise_params(clip).p0 == -1.5f);
  CHECK(elementwise_params(clip).p1 == 4.0f);
  Node hs;
  hs.op = OpKind::kHardSigmoid;
  hs.attrs = HardSigmoidAttrs{0.25f, 0.75f};
  CHECK(elementwise_params(hs).p0 == 0.25f);
  CHECK(elementwise_params(hs).p1 == 0.75f);
  Node relu;
  relu.op = OpKind::kRelu;
  CHECK(elementwise_params(relu).p0 == 0.0f);
  CHECK(ew::Clip{}(7.0f, elementwise_params(clip)) == 4.0f);
  CHECK(ew::HardSigmoid{}(-10.0f, elementwise_params(hs)) == 0.0f);
}

}  // namespace
}  // namespace ios::ir
