// Attribute structs (ir/graph.h): defaulted equality over every member, and
// field lists that name every member.
#include <catch2/catch.hpp>

#include <string>
#include <type_traits>
#include <variant>

#include "ir/graph.h"
#include "ir/op_info.h"

namespace ios::ir {
namespace {

// `value` changed to something unequal, whatever its type.
template <typename T>
void perturb(T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    value = !value;
  } else if constexpr (std::is_enum_v<T>) {
    value = static_cast<T>(static_cast<int>(value) + 1);
  } else if constexpr (std::is_arithmetic_v<T>) {
    value = value == T(1) ? T(2) : T(1);  // not value + 1: Clip's max + 1 is itself
  } else if constexpr (requires { value.push_back(value[0]); }) {
    value.push_back(7);
  } else {
    perturb(value[0]);  // std::array
  }
}

// For each field of A: a copy differing only there is unequal (as a struct
// and as Attrs), and an unchanged copy is equal.
template <typename A>
void check_every_field_compares() {
  const A base{};
  CHECK(Attrs(base) == Attrs(A{}));
  std::apply(
      [&](const auto&... fd) {
        auto check = [&](const auto& f) {
          INFO(typeid(A).name() << " field " << f.name);
          A changed = base;
          perturb(changed.*f.member);
          CHECK_FALSE(changed == base);
          CHECK(Attrs(changed) != Attrs(base));
        };
        (check(fd), ...);
      },
      A::fields());
}

template <typename V>
struct EveryAlternative;
template <typename... Ts>
struct EveryAlternative<std::variant<std::monostate, Ts...>> {
  static void check() { (check_every_field_compares<Ts>(), ...); }
};

TEST_CASE("attributes: every field of every attribute struct takes part in equality",
          "[ir][attributes]") {
  EveryAlternative<Attrs>::check();
  CHECK(Attrs(std::monostate{}) == Attrs{});
  // Different structs never compare equal, whatever their values.
  CHECK(Attrs(AxisAttrs{1}) != Attrs(BatchNormAttrs{}));
}

// A member left out of fields() is caught at compile time (the static_assert
// after ir::Attrs); this is the check it runs.
struct Listed {
  int64_t a = 0;
  float b = 0.0f;
  static constexpr auto fields() {
    return std::tuple{field("a", &Listed::a), field("b", &Listed::b)};
  }
};
struct Unlisted {
  int64_t a = 0;
  float b = 0.0f;
  static constexpr auto fields() { return std::tuple{field("a", &Unlisted::a)}; }
};
static_assert(detail::fields_complete<Listed>());
static_assert(!detail::fields_complete<Unlisted>());
static_assert(detail::member_count<ResizeAttrs>() == 5);  // enums and {H, W} arrays count once

TEST_CASE("attributes: for_each_field visits the fields in order with their names",
          "[ir][attributes]") {
  ConvAttrs conv;
  conv.group = 4;
  std::string names;
  int64_t group = 0;
  for_each_field(conv, [&](std::string_view name, const auto& value, FieldText) {
    names += std::string(name) + ";";
    if constexpr (std::is_same_v<std::decay_t<decltype(value)>, int64_t>) group = value;
  });
  CHECK(names == "k;s;d;p;g;");
  CHECK(group == 4);
}

TEST_CASE("attributes: element-wise parameters come from the attribute struct",
          "[ir][attributes]") {
  Node gelu;
  gelu.op = OpKind::kGelu;
  gelu.attrs = GeluAttrs{true};
  CHECK(elementwise_params(gelu).p0 == 1.0f);
  gelu.attrs = GeluAttrs{false};
  CHECK(elementwise_params(gelu).p0 == 0.0f);
  Node bn;  // attributes, but none an element-wise functor reads
  bn.op = OpKind::kBatchNorm;
  bn.attrs = BatchNormAttrs{0.5f};
  CHECK(elementwise_params(bn).p0 == 0.0f);
  CHECK(elementwise_params(bn).p1 == 0.0f);
}

}  // namespace
}  // namespace ios::ir
