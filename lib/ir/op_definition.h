// What an operator's definition file (lib/ir/ops/<name>.cpp) is written with:
// the builders of its operator table entry, and the checks its attribute
// parser and shape function share with every other operator's.
//
// An operator is defined in one place on the IR side: its file in lib/ir/ops
// parses its attributes, computes its output shapes, states its traits and
// its work, and returns its table entry from `<name>_op()`, the function
// that its line in IOS_OPERATORS (ir/op_kind.h) names. Several operators of
// one family may share a file (ops/pool.cpp, ops/elementwise.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "ir/op_info.h"

namespace ios::ir::ops {

using Shapes = std::vector<Shape>;

// Every operator's entry, declared from the operator list.
#define IOS_DECLARE_OPERATOR(kind, definition) OpInfo definition();
IOS_OPERATORS(IOS_DECLARE_OPERATOR)
#undef IOS_DECLARE_OPERATOR

// --- Building an entry. Fields not given keep OpInfo's defaults. ------------

OpInfo op(OpKind kind, std::string_view onnx_name, int since_opset, ParseAttrsFn parse,
          ShapeFn shape, OpTraits traits);
// `data_inputs` leading ONNX inputs are tensors, `required` of them present.
OpInfo inputs(OpInfo info, DataInputsFn data_inputs, int required = 2);
OpInfo every_output(OpInfo info);  // computes every ONNX output (Split)
// An older ONNX op type imported as this operator, with its opset range.
OpInfo legacy(OpInfo info, std::string_view name, int since_opset, int until_opset);
// FLOPs per output element, or a function of the node; the reduction length.
OpInfo work(OpInfo info, double flops_per_output, WorkFn flops = nullptr,
            WorkFn reduction = nullptr);

OpTraits unary(bool in_place = true);
OpTraits binary();
OpTraits anchor(OpClass op_class);
OpTraits with_prologue(OpTraits t);
OpTraits as_view(OpTraits t);
OpTraits as_zero_copy(OpTraits t);

// Data inputs: how many leading ONNX inputs are IR tensors.
int up_to_three(int onnx_inputs);  // X, W, [B]; A, B, [C]
int two(int onnx_inputs);
int all(int onnx_inputs);
int five(int onnx_inputs);

// Work helpers.
double output_elements(const Graph& g, const Node& n);
const Shape& input_shape(const Graph& g, const Node& n, size_t input);
double mean_reduction(const Graph& g, const Node& n);  // input elements per output element
double mean_flops(const Graph& g, const Node& n);      // one add per input element

// --- Attribute parsers' checks (each fails naming the node). ----------------

int64_t normalize_axis(const AttributeReader& r, int64_t axis, int64_t rank);
// Pads of a 2-D window from pads or auto_pad, as {H_begin, W_begin, H_end, W_end}.
std::array<int64_t, 4> window_pads(const AttributeReader& r, const Shape& x,
                                   const std::array<int64_t, 2>& kernel,
                                   const std::array<int64_t, 2>& stride,
                                   const std::array<int64_t, 2>& dilation);
std::array<int64_t, 2> pair_attr(const AttributeReader& r, const char* name,
                                 std::array<int64_t, 2> fallback);
void need_rank(const AttributeReader& r, const Shape& x, size_t rank, const char* what);
// Fails when an output other than the first is used: ios computes only the
// first output of `r`'s operator.
void only_first_output(const AttributeReader& r);

// --- Shape functions' checks (each throws a UserError naming the node, its op
// type and its input shapes). -------------------------------------------------

std::string describe(const Node& node, const Shapes& in);

template <typename... Args>
[[noreturn]] void fail(const Node& node, const Shapes& in, fmt::format_string<Args...> what,
                       Args&&... args) {
  user_error("{}: {}", describe(node, in), fmt::format(what, std::forward<Args>(args)...));
}

void need_inputs(const Node& node, const Shapes& in, size_t lo, size_t hi);
void need_rank(const Node& node, const Shapes& in, size_t index, size_t rank);
// The output of a 2-D window (conv, pool) over NCHW input 0.
Shape window_op(const Node& node, const Shapes& in, int64_t channels,
                const std::array<int64_t, 2>& kernel, const std::array<int64_t, 2>& stride,
                const std::array<int64_t, 2>& dilation, const std::array<int64_t, 4>& pads,
                bool ceil_mode);
// `axis` checked to lie in [0, rank), or [0, rank] with allow_rank.
int64_t checked_axis(const Node& node, const Shapes& in, int64_t axis, size_t rank,
                     bool allow_rank = false);

// The shape functions of element-wise operators.
Shapes same_as_input(const Node& node, const Shapes& in);  // one input, same shape out
Shapes broadcast(const Node& node, const Shapes& in);      // two inputs broadcast to each other

}  // namespace ios::ir::ops
