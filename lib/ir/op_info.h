// The operator table: one entry per ir::OpKind, holding everything the
// program knows about an operator apart from its kernels. Each entry is made
// by its operator's definition in lib/ir/ops (ir/op_definition.h), named by
// the operator's line in IOS_OPERATORS (ir/op_kind.h).
//
//  - its ONNX name and the opset range ios follows for it (the importer
//    looks operators up here and rejects the rest by name);
//  - attribute parsing, over an AttributeReader that lib/onnx implements for
//    an ONNX NodeProto (so this table knows no ONNX protobuf);
//  - the shape function (ir/shape_inference.h runs it);
//  - traits: element-wise (fuses into the kernel before it), fusable as an
//    epilogue or a prologue (unit formation), in place (the executors may
//    write the output over the input), view / zero-copy (no data movement);
//  - work: FLOPs and reduction length per output (the cost model's
//    unit_work.cpp adds the bytes, which belong to kernels, not nodes).
//
// The backends keep their own kernel tables keyed by OpKind (cpu/kernels.cpp,
// cuda/lowering_table.cpp); each has a test that fails when this table
// declares an operator the backend lacks. Element-wise math is shared by
// both backends in ir/elementwise.h. docs/architecture.md ("Adding an
// operator") walks through adding one.
//
// Modelled on TVM's RELAY_REGISTER_OP (shape relation, pattern and compute
// registered together) and ONNX Runtime's kernel registry.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "ir/elementwise.h"
#include "ir/graph.h"

namespace ios::ir {

// Reads one node's attributes in the source format (lib/onnx implements it
// over an ONNX NodeProto). Every failure names the file and the node.
class AttributeReader {
 public:
  virtual ~AttributeReader() = default;

  virtual int64_t opset() const = 0;             // of the default domain
  virtual std::string_view op_type() const = 0;  // as written in the file
  virtual bool has(std::string_view name) const = 0;
  virtual int64_t get_int(std::string_view name, int64_t fallback) const = 0;
  virtual float get_float(std::string_view name, float fallback) const = 0;
  virtual std::string get_string(std::string_view name, std::string_view fallback) const = 0;
  virtual std::optional<std::vector<int64_t>> get_ints(std::string_view name) const = 0;
  virtual std::optional<std::vector<float>> get_floats(std::string_view name) const = 0;

  virtual int num_outputs() const = 0;
  virtual bool has_input(int index) const = 0;         // present and not the empty name
  virtual std::string output_name(int index) const = 0;
  virtual bool output_used(int index) const = 0;       // named, and read by a node or a graph output
  // A constant input read as an attribute (Reshape's target, Slice's bounds,
  // Clip's bounds...): std::nullopt when absent; a UserError naming `what`
  // when it is computed at run time.
  virtual std::optional<std::vector<int64_t>> constant_ints(int index, const char* what) const = 0;
  virtual std::optional<std::vector<double>> constant_values(int index, const char* what) const = 0;
  // Whether input `index` is present and a constant (an initializer, or a
  // Constant folded into one), not computed at run time.
  virtual bool input_is_constant(int index) const = 0;

  // The element type an attribute names (Cast's `to`) as the file declared
  // it, before the importer stored 16-bit tensors as float32
  // (onnx/element_types.h); std::nullopt for any other type.
  virtual std::optional<ElementType> element_type_attribute(std::string_view name) const = 0;

  // "<file>: node <label>", the start of every message about this node.
  virtual std::string where() const = 0;

  // Throws the UserError "<where>: <message>".
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> what, Args&&... args) const {
    user_error("{}: {}", where(), fmt::format(what, std::forward<Args>(args)...));
  }
};

// How an element-wise operator combines its operands.
enum class Elementwise {
  kNone,    // not element-wise
  kUnary,   // one activation (plus per-channel or scalar constants: BatchNorm)
  kBinary,  // two operands broadcast to each other (Add, Sub, Mul, Div, Pow); an epilogue
            // only when one of them is a constant
};

// What unit formation makes of a node that is not element-wise (rule 1 of
// docs/unit-formation.md): the kind of unit it anchors.
enum class OpClass {
  kConv,
  kMatMul,  // Gemm, MatMul
  kPool,    // pools, mean reductions, Resize, LayerNormalization (per-row mean, then element-wise)
  kSoftmax,
  kConcat,
  kLayout,  // data movement only: Split, Slice, Flatten, Reshape, Transpose, Pad
  kElementwise,
};

struct OpTraits {
  Elementwise elementwise = Elementwise::kNone;
  OpClass op_class = OpClass::kElementwise;
  bool prologue = false;  // may join the Conv that reads it, in front (IOS's ReLU-SepConv)
  bool in_place = false;  // may write its output over its activation input 0
  bool view = false;      // the output aliases the input (Flatten, Reshape)
  bool zero_copy = false; // producers write straight into the output (Concat)
};

// Parses a node's attributes; `in` holds the shapes of its data inputs.
using ParseAttrsFn = Attrs (*)(const AttributeReader& reader, const std::vector<Shape>& in);
// Output shapes from input shapes; throws UserError naming the node.
using ShapeFn = std::vector<Shape> (*)(const Node& node, const std::vector<Shape>& in);
// Work of one node given its graph (shapes set).
using WorkFn = double (*)(const Graph& graph, const Node& node);
// How many leading inputs of the ONNX node are IR tensors (the rest are
// attribute-like constants, read by the attribute parser).
using DataInputsFn = int (*)(int onnx_inputs);

struct OpInfo {
  OpKind kind = OpKind::kCount;
  std::string_view onnx_name;  // the ONNX op type in the default domain
  int since_opset = 1;         // the first opset whose semantics ios implements
  int until_opset = 0;         // the last one (0: every later opset so far)
  // An older ONNX op type imported as this operator (Upsample for Resize),
  // with its own opset range; empty when there is none.
  std::string_view legacy_name;
  int legacy_since_opset = 1;
  int legacy_until_opset = 0;
  ParseAttrsFn parse_attrs = nullptr;  // null: no attributes (std::monostate)
  DataInputsFn data_inputs = nullptr;  // null: one data input
  int required_inputs = 2;             // leading data inputs that must be present
  bool every_output = false;           // computes every ONNX output (Split), not just the first
  ShapeFn shape = nullptr;
  OpTraits traits;
  // FLOPs (a multiply-add counts 2): `flops` when set, else
  // flops_per_output * output elements.
  double flops_per_output = 0.0;
  WorkFn flops = nullptr;
  // Reduction length per output element (1 when null): Cin/g*kh*kw for a conv.
  WorkFn reduction = nullptr;
};

// The entry of `op` (every OpKind has one).
const OpInfo& op_info(OpKind op);
// Every entry, in OpKind order.
const std::vector<OpInfo>& all_ops();
// The entry whose ONNX name (or legacy name) is `onnx_name`, or null.
const OpInfo* find_onnx_op(std::string_view onnx_name);

// Traits in one word each, for the passes that ask.
inline bool is_elementwise(OpKind op) { return op_info(op).traits.elementwise != Elementwise::kNone; }

// Whether `node` may join the unit of its input's producer as an epilogue
// (or become an element-wise unit's epilogue): a unary element-wise
// operator, or a binary one with exactly one activation operand; not a Cast
// that changes the element type.
bool is_epilogue_candidate(const Graph& graph, const Node& node);

// The scalar attributes an element-wise kernel applies (ir/elementwise.h):
// the node's attribute struct's ew_params() (Clip's {min, max},
// HardSigmoid's {alpha, beta}, Gelu's {tanh form ? 1 : 0}); zero for
// operators whose attributes have none.
ew::Params elementwise_params(const Node& node);

// Output shapes of `node` from its input shapes (the table's shape function).
std::vector<Shape> node_output_shapes(const Node& node, const std::vector<Shape>& in);

// FLOPs and reduction length of one node (its table entry's work).
double node_flops(const Graph& graph, NodeId node);
double node_reduction(const Graph& graph, const Node& node);

}  // namespace ios::ir
