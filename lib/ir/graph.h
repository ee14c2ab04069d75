// The ios intermediate representation: a static-shape dataflow graph of CNN
// operators. The ONNX importer (lib/onnx) is the only code that builds it from
// a file; everything downstream (unit formation, cost models, executors) reads
// it. Tensors have fully static shapes (windows read N,C,L, N,C,H,W or
// N,C,T,H,W) and an element type (ir/element_type.h): float32, float16 or
// bfloat16.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <variant>
#include <vector>

#include "ir/element_type.h"
#include "ir/elementwise.h"
#include "ir/op_kind.h"
#include "ir/resize_math.h"

namespace ios::ir {

using Shape = std::vector<int64_t>;
using TensorId = int32_t;
using NodeId = int32_t;
inline constexpr int32_t kNone = -1;

int64_t num_elements(const Shape& shape);
std::string to_string(const Shape& shape);  // "1x3x224x224"

std::string_view op_name(OpKind op);  // the ONNX op type, e.g. "Conv" (from ir/op_info.h)

// --- Attributes: one struct per operator family, held in Node::attrs. -------
// Windows (convolutions, pools, Resize) work on the spatial axes of their
// input, every axis after N and C: one for N,C,L (audio), two for N,C,H,W,
// three for N,C,T,H,W (video). Their arrays (ir::Dims) hold one entry per
// spatial axis, and pads the begins then the ends, ONNX's order
// ({top, left, bottom, right} in 2-D). The defaults are a 2-D window.
//
// Each struct is defined once, here: its members, `operator==` (defaulted)
// and `fields()`, the list of its members with their names. Everything
// generic over attributes reads that list: operator merge compares fused
// element-wise nodes with Attrs's operator== (sched/fused_epilogue.cpp), and
// the profile database prints `name=value` for each field, in list order,
// into its stage signatures (cost/profile_db.cpp). The names are those keys:
// renaming or reordering a field orphans every cached measurement (the
// `cost` test "stage signatures: the text of every attribute struct is
// pinned" fails). Every member must be listed; the check after `Attrs`
// counts them.

// How a field's value prints: a list as "1,2,3", dimensions as "2x3" (an
// empty one as "scalar", like to_string(Shape)). Scalars print with fmt's
// "{}" (bools as true/false), enums as their number.
enum class FieldText { kList, kDims };

// One field of attribute struct S: its name and member.
template <typename S, typename M>
struct AttrField {
  std::string_view name;
  M S::*member;
  FieldText text = FieldText::kList;
};

template <typename S, typename M>
constexpr AttrField<S, M> field(std::string_view name, M S::*member,
                                FieldText text = FieldText::kList) {
  return {name, member, text};
}

using Dims = std::vector<int64_t>;

struct ConvAttrs {
  Dims kernel{1, 1};
  Dims stride{1, 1};
  Dims dilation{1, 1};
  Dims pads{0, 0, 0, 0};
  int64_t group = 1;

  size_t spatial_rank() const { return kernel.size(); }

  bool operator==(const ConvAttrs&) const = default;
  static constexpr auto fields() {
    using A = ConvAttrs;
    return std::tuple{field("k", &A::kernel, FieldText::kDims),
                      field("s", &A::stride, FieldText::kDims),
                      field("d", &A::dilation, FieldText::kDims), field("p", &A::pads),
                      field("g", &A::group)};
  }
};

struct PoolAttrs {  // MaxPool, AveragePool
  Dims kernel{1, 1};
  Dims stride{1, 1};
  Dims dilation{1, 1};  // MaxPool only (ONNX's AveragePool has none before opset 19)
  Dims pads{0, 0, 0, 0};
  bool count_include_pad = false;  // AveragePool only
  bool ceil_mode = false;

  size_t spatial_rank() const { return kernel.size(); }

  bool operator==(const PoolAttrs&) const = default;
  static constexpr auto fields() {
    using A = PoolAttrs;
    return std::tuple{
        field("k", &A::kernel, FieldText::kDims),   field("s", &A::stride, FieldText::kDims),
        field("d", &A::dilation, FieldText::kDims), field("p", &A::pads),
        field("cip", &A::count_include_pad),        field("ceil", &A::ceil_mode)};
  }
};

struct ClipAttrs {
  float min = -3.4028235e38f;
  float max = 3.4028235e38f;

  bool operator==(const ClipAttrs&) const = default;
  static constexpr auto fields() {
    return std::tuple{field("min", &ClipAttrs::min), field("max", &ClipAttrs::max)};
  }
  ew::Params ew_params() const { return {min, max}; }  // ew::Clip's
};

struct HardSigmoidAttrs {  // y = max(0, min(1, alpha * x + beta))
  float alpha = 0.2f;
  float beta = 0.5f;

  bool operator==(const HardSigmoidAttrs&) const = default;
  static constexpr auto fields() {
    using A = HardSigmoidAttrs;
    return std::tuple{field("alpha", &A::alpha), field("beta", &A::beta)};
  }
  ew::Params ew_params() const { return {alpha, beta}; }  // ew::HardSigmoid's
};

struct AxisAttrs {  // Concat, Softmax, Flatten: axis normalized to >= 0
  int64_t axis = 1;

  bool operator==(const AxisAttrs&) const = default;
  static constexpr auto fields() { return std::tuple{field("axis", &AxisAttrs::axis)}; }
};

struct SplitAttrs {
  int64_t axis = 1;
  std::vector<int64_t> sizes;  // one per output

  bool operator==(const SplitAttrs&) const = default;
  static constexpr auto fields() {
    return std::tuple{field("axis", &SplitAttrs::axis), field("sizes", &SplitAttrs::sizes)};
  }
};

struct SliceAttrs {  // normalized: one entry per sliced axis, clamped to the shape
  std::vector<int64_t> axes, starts, ends, steps;

  bool operator==(const SliceAttrs&) const = default;
  static constexpr auto fields() {
    using A = SliceAttrs;
    return std::tuple{field("axes", &A::axes), field("starts", &A::starts),
                      field("ends", &A::ends), field("steps", &A::steps)};
  }
};

struct ReduceAttrs {  // ReduceMean, ReduceSum, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
                     // ReduceSumSquare, ReduceLogSumExp; no axes: every axis
  std::vector<int64_t> axes;
  bool keepdims = true;

  bool operator==(const ReduceAttrs&) const = default;
  static constexpr auto fields() {
    return std::tuple{field("axes", &ReduceAttrs::axes),
                      field("keepdims", &ReduceAttrs::keepdims)};
  }
};

struct ReshapeAttrs {  // target shape, fully resolved (no 0 / -1)
  Shape shape;

  bool operator==(const ReshapeAttrs&) const = default;
  static constexpr auto fields() {
    return std::tuple{field("shape", &ReshapeAttrs::shape, FieldText::kDims)};
  }
};

struct TransposeAttrs {
  std::vector<int64_t> perm;

  bool operator==(const TransposeAttrs&) const = default;
  static constexpr auto fields() { return std::tuple{field("perm", &TransposeAttrs::perm)}; }
};

struct GemmAttrs {
  float alpha = 1.0f;
  float beta = 1.0f;
  bool trans_a = false;
  bool trans_b = false;

  bool operator==(const GemmAttrs&) const = default;
  static constexpr auto fields() {
    using A = GemmAttrs;
    return std::tuple{field("alpha", &A::alpha), field("beta", &A::beta),
                      field("ta", &A::trans_a), field("tb", &A::trans_b)};
  }
};

struct PadAttrs {  // ONNX layout: begins of every axis, then ends
  enum class Mode { kConstant, kReflect, kEdge };
  Mode mode = Mode::kConstant;
  std::vector<int64_t> pads;
  float value = 0.0f;

  bool operator==(const PadAttrs&) const = default;
  static constexpr auto fields() {
    using A = PadAttrs;
    return std::tuple{field("mode", &A::mode), field("pads", &A::pads),
                      field("value", &A::value)};
  }
};

struct BatchNormAttrs {
  float epsilon = 1e-5f;

  bool operator==(const BatchNormAttrs&) const = default;
  static constexpr auto fields() { return std::tuple{field("eps", &BatchNormAttrs::epsilon)}; }
};

struct ResizeAttrs {  // Resize and Upsample on the spatial axes (N and C keep their sizes)
  resize::Mode mode = resize::Mode::kNearest;
  resize::Coordinates coordinates = resize::Coordinates::kHalfPixel;
  resize::Nearest nearest = resize::Nearest::kRoundPreferFloor;
  std::vector<float> scale{
      1.0f, 1.0f};  // output / input per spatial axis, as the coordinate transform uses it
  Dims size{1, 1};  // output size per spatial axis

  size_t spatial_rank() const { return size.size(); }

  bool operator==(const ResizeAttrs&) const = default;
  static constexpr auto fields() {
    using A = ResizeAttrs;
    return std::tuple{field("mode", &A::mode), field("coord", &A::coordinates),
                      field("nearest", &A::nearest), field("scale", &A::scale, FieldText::kDims),
                      field("size", &A::size, FieldText::kDims)};
  }
};

// LayerNormalization normalizes X over its dims axis..rank-1 (the normalized
// dims, flattened to one row per outer index) and then computes
// y = normalized * Scale + B, with Scale and B that broadcast to the
// normalized dims (ir/broadcast.h).
struct LayerNormAttrs {
  int64_t axis = 1;  // >= 0
  float epsilon = 1e-5f;

  Shape normalized_dims(const Shape& x) const { return Shape(x.begin() + axis, x.end()); }

  bool operator==(const LayerNormAttrs&) const = default;
  static constexpr auto fields() {
    return std::tuple{field("axis", &LayerNormAttrs::axis),
                      field("eps", &LayerNormAttrs::epsilon)};
  }
};

struct GeluAttrs {  // approximate = "tanh": 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))); else the erf form
  bool tanh = false;

  bool operator==(const GeluAttrs&) const = default;
  static constexpr auto fields() { return std::tuple{field("tanh", &GeluAttrs::tanh)}; }
  ew::Params ew_params() const { return {tanh ? 1.0f : 0.0f, 0.0f}; }  // ew::Gelu's
};

struct ConvTransposeAttrs {  // weights [C_in, C_out / group, k...]
  Dims kernel{1, 1};
  Dims stride{1, 1};
  Dims dilation{1, 1};
  Dims pads{0, 0, 0, 0};  // removed from the full output: the begins, then the ends
  Dims output_padding{0, 0};
  int64_t group = 1;

  size_t spatial_rank() const { return kernel.size(); }

  bool operator==(const ConvTransposeAttrs&) const = default;
  static constexpr auto fields() {
    using A = ConvTransposeAttrs;
    return std::tuple{field("k", &A::kernel, FieldText::kDims), field("s", &A::stride, FieldText::kDims),
                      field("d", &A::dilation, FieldText::kDims), field("p", &A::pads),
                      field("op", &A::output_padding), field("g", &A::group)};
  }
};

struct TileAttrs {  // one repeat count (>= 1) per input axis
  std::vector<int64_t> repeats;

  bool operator==(const TileAttrs&) const = default;
  static constexpr auto fields() { return std::tuple{field("repeats", &TileAttrs::repeats)}; }
};

// The scalar parameters of an activation: LeakyRelu's, Elu's, Celu's and
// ThresholdedRelu's alpha; Selu's alpha and gamma (in beta).
struct ActivationAttrs {
  float alpha = 0.0f;
  float beta = 0.0f;

  bool operator==(const ActivationAttrs&) const = default;
  static constexpr auto fields() {
    using A = ActivationAttrs;
    return std::tuple{field("alpha", &A::alpha), field("beta", &A::beta)};
  }
  ew::Params ew_params() const { return {alpha, beta}; }
};

// Cast between float types: the output is the input rounded to `to`.
struct CastAttrs {
  ElementType to = ElementType::kFloat32;

  bool operator==(const CastAttrs&) const = default;
  static constexpr auto fields() { return std::tuple{field("to", &CastAttrs::to)}; }
  ew::Params ew_params() const {
    return {static_cast<float>(static_cast<int>(to)), 0.0f};
  }  // ew::Cast's
};

using Attrs =
    std::variant<std::monostate, ConvAttrs, PoolAttrs, ClipAttrs, HardSigmoidAttrs, AxisAttrs,
                 SplitAttrs, SliceAttrs, ReduceAttrs, ReshapeAttrs, TransposeAttrs, GemmAttrs,
                 PadAttrs, BatchNormAttrs, ResizeAttrs, LayerNormAttrs, GeluAttrs, ActivationAttrs,
                 TileAttrs, ConvTransposeAttrs, CastAttrs>;

// Calls f(name, value, text) for every field of attribute struct `a`, in
// the order of its fields().
template <typename A, typename F>
void for_each_field(const A& a, F&& f) {
  std::apply([&](const auto&... fd) { (f(fd.name, a.*fd.member, fd.text), ...); }, A::fields());
}

namespace detail {

// Converts to any member type: counts an aggregate's members by how many of
// these brace-initialize it.
struct AnyMember {
  template <typename T>
  operator T() const;  // NOLINT(google-explicit-constructor): never called, only named
};

template <typename T, typename... Members>
constexpr size_t member_count() {
  if constexpr (requires { T{Members{}..., AnyMember{}}; }) {
    return member_count<T, Members..., AnyMember>();
  } else {
    return sizeof...(Members);
  }
}

template <typename T>
constexpr bool fields_complete() {
  return std::tuple_size_v<decltype(T::fields())> == member_count<T>();
}

template <typename V>
struct EveryAttrsComplete;
template <typename... Ts>
struct EveryAttrsComplete<std::variant<std::monostate, Ts...>>
    : std::bool_constant<(fields_complete<Ts>() && ...)> {};

}  // namespace detail

// A member missing from fields() would print nowhere: two nodes differing
// only in it would share a profile key.
static_assert(detail::EveryAttrsComplete<Attrs>::value,
              "an attribute struct's fields() does not list every member");

// A tensor: a graph input, a weight (data set), or a node output.
struct Tensor {
  std::string name;  // the ONNX name; unique in the graph
  Shape shape;
  NodeId producer = kNone;           // kNone for graph inputs and weights
  std::vector<NodeId> consumers;     // kept up to date by Graph
  std::shared_ptr<const std::vector<float>> data;  // set for weights/constants
  // How the tensor is stored. A weight's values are exactly representable in
  // it (ir/element_types.h assigns types and rounds weights).
  ElementType type = ElementType::kFloat32;

  bool is_constant() const { return data != nullptr; }
};

// Bytes the tensor takes in device memory: its elements at its type's size.
inline int64_t tensor_bytes(const Tensor& t) {
  return (t.is_constant() ? static_cast<int64_t>(t.data->size()) : num_elements(t.shape)) *
         bytes_of(t.type);
}

// An operator. Input order follows ONNX (Conv: X, W, [B]; Gemm: A, B, [C];
// BatchNorm: X, scale, bias, mean, var). Optional inputs absent at the end.
struct Node {
  std::string name;  // the ONNX node name; may be empty or repeated
  OpKind op = OpKind::kRelu;
  std::vector<TensorId> inputs;
  std::vector<TensorId> outputs;
  Attrs attrs;

  template <typename T>
  const T& attr() const { return std::get<T>(attrs); }
  template <typename T>
  T& attr() { return std::get<T>(attrs); }
};

class Graph {
 public:
  TensorId add_tensor(Tensor tensor);
  NodeId add_node(Node node);  // wires producer/consumer links

  const Tensor& tensor(TensorId id) const { return tensors_.at(static_cast<size_t>(id)); }
  Tensor& tensor(TensorId id) { return tensors_.at(static_cast<size_t>(id)); }
  const Node& node(NodeId id) const { return nodes_.at(static_cast<size_t>(id)); }
  Node& node(NodeId id) { return nodes_.at(static_cast<size_t>(id)); }
  const std::vector<Tensor>& tensors() const { return tensors_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  size_t num_nodes() const { return nodes_.size(); }
  size_t num_tensors() const { return tensors_.size(); }

  std::optional<TensorId> find_tensor(std::string_view name) const;

  // Graph inputs (activations fed by the user) and outputs, in ONNX order.
  std::vector<TensorId>& inputs() { return inputs_; }
  const std::vector<TensorId>& inputs() const { return inputs_; }
  std::vector<TensorId>& outputs() { return outputs_; }
  const std::vector<TensorId>& outputs() const { return outputs_; }
  bool is_graph_output(TensorId id) const;

  // Node ids in a topological order (stable: ties keep insertion order).
  // Throws UserError naming a node on the cycle if the graph has one.
  std::vector<NodeId> topological_order() const;

  // Rewrites every use of `from` (node inputs, graph outputs) to `to`.
  void replace_uses(TensorId from, TensorId to);

  // Removes the nodes marked in `dead` (indexed by NodeId) and every tensor no
  // longer referenced; renumbers ids and re-sorts nodes topologically. Passes
  // mark what they delete and compact once.
  void compact(const std::vector<bool>& dead);

  // Rebuilds Tensor::producer/consumers from the nodes.
  void relink();

 private:
  std::vector<Tensor> tensors_;
  std::vector<Node> nodes_;
  std::vector<TensorId> inputs_;
  std::vector<TensorId> outputs_;
};

}  // namespace ios::ir
