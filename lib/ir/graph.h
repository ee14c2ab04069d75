// The ios intermediate representation: a static-shape dataflow graph of CNN
// operators. The ONNX importer (lib/onnx) is the only code that builds it from
// a file; everything downstream (unit formation, cost models, executors) reads
// it. Tensors are NCHW float32 with fully static shapes.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

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
// Spatial arrays are {H, W}; pads are {top, left, bottom, right}.

struct ConvAttrs {
  std::array<int64_t, 2> kernel{1, 1};
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 2> dilation{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};
  int64_t group = 1;
};

struct PoolAttrs {  // MaxPool, AveragePool
  std::array<int64_t, 2> kernel{1, 1};
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};
  bool count_include_pad = false;  // AveragePool only
  bool ceil_mode = false;
};

struct ClipAttrs {
  float min = -3.4028235e38f;
  float max = 3.4028235e38f;
};

struct HardSigmoidAttrs {  // y = max(0, min(1, alpha * x + beta))
  float alpha = 0.2f;
  float beta = 0.5f;
};

struct AxisAttrs {  // Concat, Softmax, Flatten: axis normalized to >= 0
  int64_t axis = 1;
};

struct SplitAttrs {
  int64_t axis = 1;
  std::vector<int64_t> sizes;  // one per output
};

struct SliceAttrs {  // normalized: one entry per sliced axis, clamped to the shape
  std::vector<int64_t> axes, starts, ends, steps;
};

struct ReduceAttrs {  // ReduceMean
  std::vector<int64_t> axes;
  bool keepdims = true;
};

struct ReshapeAttrs {  // target shape, fully resolved (no 0 / -1)
  Shape shape;
};

struct TransposeAttrs {
  std::vector<int64_t> perm;
};

struct GemmAttrs {
  float alpha = 1.0f;
  float beta = 1.0f;
  bool trans_a = false;
  bool trans_b = false;
};

struct PadAttrs {  // ONNX layout: begins of every axis, then ends
  enum class Mode { kConstant, kReflect, kEdge };
  Mode mode = Mode::kConstant;
  std::vector<int64_t> pads;
  float value = 0.0f;
};

struct BatchNormAttrs {
  float epsilon = 1e-5f;
};

struct ResizeAttrs {  // Resize and Upsample of a 4-D NCHW tensor on H and W
  resize::Mode mode = resize::Mode::kNearest;
  resize::Coordinates coordinates = resize::Coordinates::kHalfPixel;
  resize::Nearest nearest = resize::Nearest::kRoundPreferFloor;
  std::array<float, 2> scale{1.0f, 1.0f};  // output / input of H and W, as the coordinate transform uses it
  std::array<int64_t, 2> size{1, 1};       // output H and W
};

struct LayerNormAttrs {  // normalizes over dims axis..rank-1 (axis >= 0)
  int64_t axis = 1;
  float epsilon = 1e-5f;
};

struct GeluAttrs {  // approximate = "tanh": 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))); else the erf form
  bool tanh = false;
};

using Attrs = std::variant<std::monostate, ConvAttrs, PoolAttrs, ClipAttrs, HardSigmoidAttrs,
                           AxisAttrs, SplitAttrs, SliceAttrs, ReduceAttrs, ReshapeAttrs,
                           TransposeAttrs, GemmAttrs, PadAttrs, BatchNormAttrs, ResizeAttrs,
                           LayerNormAttrs, GeluAttrs>;

// A tensor: a graph input, a weight (data set), or a node output.
struct Tensor {
  std::string name;  // the ONNX name; unique in the graph
  Shape shape;
  NodeId producer = kNone;           // kNone for graph inputs and weights
  std::vector<NodeId> consumers;     // kept up to date by Graph
  std::shared_ptr<const std::vector<float>> data;  // set for weights/constants

  bool is_constant() const { return data != nullptr; }
};

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
