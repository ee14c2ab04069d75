#include "ir/precision.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/json_limits.h"

namespace ios::ir {

const char* math_mode_name(MathMode math) {
  switch (math) {
#define IOS_MATH_MODE_NAME(e, name) \
  case MathMode::e:                 \
    return name;
    IOS_MATH_MODES(IOS_MATH_MODE_NAME)
#undef IOS_MATH_MODE_NAME
  }
  return "";  // not reached: every mode is a case
}

const char* Precision::name() const {
  return is_half() ? short_name(storage_) : math_mode_name(math_);
}

const std::vector<Precision>& all_precisions() {
  static const std::vector<Precision> all = [] {
    std::vector<Precision> v;
#define IOS_MATH_MODE_PRECISION(e, name) v.push_back(Precision::float32(MathMode::e));
    IOS_MATH_MODES(IOS_MATH_MODE_PRECISION)
#undef IOS_MATH_MODE_PRECISION
    for (const ElementTypeInfo& t : kElementTypes) {
      if (ir::is_half(t.type)) v.push_back(Precision::narrow(t.type));
    }
    return v;
  }();
  return all;
}

std::vector<std::string> precision_names(bool narrow_only) {
  std::vector<std::string> names;
  for (const Precision& p : all_precisions()) {
    if (!narrow_only || p.is_half()) names.emplace_back(p.name());
  }
  return names;
}

std::string precision_names_text(bool narrow_only, std::string_view prefix) {
  const std::vector<std::string> names = precision_names(narrow_only);
  std::string text;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) text += i + 1 == names.size() ? " or " : ", ";
    text += fmt::format("{}{}", prefix, names[i]);
  }
  return text;
}

std::string element_type_names_text() {
  std::string text;
  for (int i = 0; i < kNumElementTypes; ++i) {
    if (i > 0) text += i + 1 == kNumElementTypes ? " and " : ", ";
    text += kElementTypes[i].name;
  }
  return text;
}

std::optional<Precision> parse_precision(std::string_view name) {
  for (const Precision& p : all_precisions()) {
    if (name == p.name()) return p;
  }
  return std::nullopt;
}

Precision parse_precision(std::string_view name, std::string_view what) {
  if (const auto p = parse_precision(name)) return *p;
  user_error("{} {}: expected {}", what, quote_excerpt(std::string(name)), precision_names_text());
}

}  // namespace ios::ir
