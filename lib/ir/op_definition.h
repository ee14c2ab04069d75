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
// Windows (Conv, ConvTranspose, MaxPool, AveragePool) take 1 to 3 spatial
// axes: input ranks 3 (N,C,L), 4 (N,C,H,W) and 5 (N,C,T,H,W). Fails on
// another rank, naming `what`; returns the number of spatial axes.
// The largest window extent, stride or pad ios accepts along one axis: the
// attributes are file data, and bounding them keeps the size arithmetic of
// every window far from int64 overflow.
inline constexpr int64_t kMaxWindowExtent = int64_t{1} << 24;
size_t window_rank(const AttributeReader& r, const Shape& x, std::string_view what);
// Pads of a window over `x`'s spatial axes from pads or auto_pad: the
// begins, then the ends.
Dims window_pads(const AttributeReader& r, const Shape& x, const Dims& kernel, const Dims& stride,
                 const Dims& dilation);
// An attribute of one value per spatial axis (kernel_shape, strides,
// dilations), or `fallback` where the file has none.
Dims spatial_attr(const AttributeReader& r, const char* name, size_t rank, Dims fallback);
// One value per spatial axis, each `value`.
inline Dims filled(size_t rank, int64_t value) { return Dims(rank, value); }
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
// The output of a window (conv, pool) over input 0's spatial axes.
Shape window_op(const Node& node, const Shapes& in, int64_t channels, const Dims& kernel,
                const Dims& stride, const Dims& dilation, const Dims& pads, bool ceil_mode);
// `axis` checked to lie in [0, rank), or [0, rank] with allow_rank.
int64_t checked_axis(const Node& node, const Shapes& in, int64_t axis, size_t rank,
                     bool allow_rank = false);

// The shape functions of element-wise operators.
Shapes same_as_input(const Node& node, const Shapes& in);  // one input, same shape out
Shapes broadcast(const Node& node, const Shapes& in);      // two inputs broadcast to each other

}  // namespace ios::ir::ops
