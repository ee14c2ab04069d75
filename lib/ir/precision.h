// The precision a model is scheduled and run at, as one value: the element
// type a conversion stores tensors in, and the math of float32 convolutions
// and matrix products. --precision, the schedule file's "precision", the
// engine API's options and the Python module's arguments are parsed into it
// once, where they enter (parse_precision); the library passes the value.
//
//   tf32  float32 storage, TF32 tensor cores allowed (the default)
//   fp32  float32 storage, strict FP32
//   fp16  float16 storage (a float32 model converted, or a model typed in it);
//   bf16  bfloat16 storage       float32 regions left compute in strict FP32
//
// The names come from the tables: a float32 precision is named by its math
// mode, a 16-bit one by its element type's short name (ir/element_type.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/element_type.h"

namespace ios::ir {

// How float32 convolutions and matrix products compute: TF32 tensor cores
// allowed, or strict FP32 kernels. 16-bit tensors use their own type's
// tensor cores either way; every other float32 operator is FP32 either way.
// X(enumerator, name)
#define IOS_MATH_MODES(X) \
  X(kTf32, "tf32")        \
  X(kFp32, "fp32")

enum class MathMode : uint8_t {
#define IOS_MATH_MODE_ENUMERATOR(e, name) e,
  IOS_MATH_MODES(IOS_MATH_MODE_ENUMERATOR)
#undef IOS_MATH_MODE_ENUMERATOR
};

// "tf32", "fp32": the name the options, the profile database's key and the
// kernel-choice caches use.
const char* math_mode_name(MathMode math);

class Precision {
 public:
  // tf32: float32 tensors, TF32 math.
  constexpr Precision() = default;
  // A float32 graph computed with `math`.
  static constexpr Precision float32(MathMode math) { return Precision(ElementType::kFloat32, math); }
  // A graph stored in the 16-bit (or narrower) `type`; its float32 regions
  // compute in strict FP32.
  static constexpr Precision narrow(ElementType type) { return Precision(type, MathMode::kFp32); }
  // The precision of a graph stored in `type`: narrow(type), or float32 with `math`.
  static constexpr Precision of(ElementType type, MathMode math) {
    return ir::is_half(type) ? narrow(type) : float32(math);
  }

  ElementType storage() const { return storage_; }
  MathMode math() const { return math_; }
  bool is_half() const { return ir::is_half(storage_); }
  // "tf32", "fp32", "fp16", "bf16".
  const char* name() const;

  constexpr bool operator==(const Precision&) const = default;

 private:
  constexpr Precision(ElementType storage, MathMode math) : storage_(storage), math_(math) {}
  ElementType storage_ = ElementType::kFloat32;
  MathMode math_ = MathMode::kTf32;
};

// Every precision, in the order options list them: the float32 ones by math
// mode (tf32, fp32), then one per narrower element type (fp16, bf16).
const std::vector<Precision>& all_precisions();
// Their names, in that order; `narrow_only`: those of the 16-bit ones
// (fp16, bf16), which convert a float32 model.
std::vector<std::string> precision_names(bool narrow_only = false);
// The names for messages, each after `prefix`: "tf32, fp32, fp16 or bf16";
// (true, "--precision "): "--precision fp16 or --precision bf16".
std::string precision_names_text(bool narrow_only = false, std::string_view prefix = "");

// The element types' ONNX names, for messages: "float32, float16 and bfloat16".
std::string element_type_names_text();

// The precision named `name`, if one is.
std::optional<Precision> parse_precision(std::string_view name);
// The same, or UserError "<what> '<name>': expected tf32, fp32, fp16 or bf16".
Precision parse_precision(std::string_view name, std::string_view what);

}  // namespace ios::ir
