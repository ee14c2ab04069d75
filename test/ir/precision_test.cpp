// The element-type table (ir/element_type.h) and the precision value
// (ir/precision.h): names, sizes, ONNX ids and rounding read from one table;
// every precision parsed from its name and named back.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>
#include <string>

#include "core/error.h"
#include "ir/element_type.h"
#include "ir/precision.h"

namespace ios::ir {
namespace {

TEST_CASE("the element-type table has one line per type, in enum order", "[ir][precision]") {
  std::set<std::string> names, short_names;
  std::set<int32_t> onnx_ids;
  for (int i = 0; i < kNumElementTypes; ++i) {
    const ElementTypeInfo& t = kElementTypes[i];
    INFO(t.name);
    CHECK(static_cast<int>(t.type) == i);
    CHECK(&info(t.type) == &t);
    CHECK(names.insert(t.name).second);
    CHECK(short_names.insert(t.short_name).second);
    CHECK(onnx_ids.insert(t.onnx_type).second);
    CHECK(from_onnx_type(t.onnx_type) == t.type);
    CHECK(bytes_of(t.type) == t.bytes);
    // The largest finite value survives rounding; the next float above the
    // rounding midpoint does not.
    CHECK(round_to(max_finite(t.type), t.type) == max_finite(t.type));
    // 1 + epsilon is the next value after 1; 1 + epsilon/2 is a tie, to even (1).
    CHECK(round_to(static_cast<float>(1.0 + epsilon(t.type)), t.type) == static_cast<float>(1.0 + epsilon(t.type)));
    CHECK(round_to(static_cast<float>(1.0 + epsilon(t.type) / 2), t.type) == 1.0f);
    // Bits round-trip through the stored bytes.
    unsigned char bytes[4] = {};
    store_element(bytes, 1.5f, t.type);
    CHECK(load_element(bytes, t.type) == 1.5f);
    CHECK(from_bits(to_bits(-2.25f, t.type), t.type) == -2.25f);
  }
  CHECK_FALSE(from_onnx_type(11).has_value());  // DOUBLE
  CHECK(std::string(type_name(ElementType::kFloat16)) == "float16");
  CHECK(std::string(short_name(ElementType::kBFloat16)) == "bf16");
  CHECK(epsilon(ElementType::kFloat16) == 0x1p-10);
  CHECK(epsilon(ElementType::kBFloat16) == 0x1p-7);
  CHECK(max_finite(ElementType::kFloat16) == 65504.0f);
  CHECK(bytes_of(ElementType::kFloat32) == 4);
}

TEST_CASE("every precision parses from its name and names itself back", "[ir][precision]") {
  CHECK(precision_names() == std::vector<std::string>{"tf32", "fp32", "fp16", "bf16"});
  CHECK(precision_names(true) == std::vector<std::string>{"fp16", "bf16"});
  CHECK(precision_names_text() == "tf32, fp32, fp16 or bf16");
  CHECK(precision_names_text(true, "--precision ") == "--precision fp16 or --precision bf16");
  for (const Precision& p : all_precisions()) {
    INFO(p.name());
    REQUIRE(parse_precision(p.name()).has_value());
    CHECK(*parse_precision(p.name()) == p);
    CHECK(Precision::of(p.storage(), p.math()) == p);
  }
  // The default is tf32: float32 storage, TF32 math.
  CHECK(Precision() == *parse_precision("tf32"));
  CHECK(Precision().storage() == ElementType::kFloat32);
  CHECK(Precision().math() == MathMode::kTf32);
  const Precision fp32 = *parse_precision("fp32");
  CHECK(fp32 == Precision::float32(MathMode::kFp32));
  CHECK_FALSE(fp32.is_half());
  // A 16-bit precision stores its type; its float32 regions compute in
  // strict FP32 (its 16-bit convolutions and products run on tensor cores
  // whatever the math mode).
  for (const char* name : {"fp16", "bf16"}) {
    const Precision p = *parse_precision(name);
    CHECK(p.is_half());
    CHECK(p.math() == MathMode::kFp32);
    CHECK(std::string(short_name(p.storage())) == name);
    CHECK(Precision::of(p.storage(), MathMode::kTf32) == p);
  }
  CHECK(std::string(math_mode_name(MathMode::kTf32)) == "tf32");
  CHECK(std::string(math_mode_name(MathMode::kFp32)) == "fp32");
  CHECK_FALSE(parse_precision("fp8").has_value());
  CHECK_FALSE(parse_precision("FP16").has_value());
  CHECK_FALSE(parse_precision("").has_value());
  CHECK_THROWS_AS(parse_precision("fp8", "--precision"), UserError);
  CHECK_THROWS_WITH(parse_precision("fp8", "--precision"),
                    Catch::Matchers::Contains("--precision 'fp8': expected tf32, fp32, fp16 or bf16"));
}

}  // namespace
}  // namespace ios::ir
