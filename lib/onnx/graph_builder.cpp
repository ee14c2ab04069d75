#include "onnx/graph_builder.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include <fmt/ranges.h>

#include "core/error.h"
#include "ir/op_info.h"
#include "ir/precision.h"
#include "ir/shape_inference.h"
#include "onnx/attributes.h"
#include "onnx/const_tensor.h"
#include "onnx/einsum.h"

namespace ios::onnx {
namespace {

using ::onnx::NodeProto;
using ::onnx::TensorProto;

class Builder {
 public:
  Builder(::onnx::ModelProto& model, ShapeMap& shapes, const DeclaredTypes& declared,
          const std::string& file)
      : graph_proto_(model.graph()),
        shapes_(shapes),
        declared_(declared),
        file_(file),
        opset_(default_opset(model)) {
    for (auto& t : *model.mutable_graph()->mutable_initializer()) initializers_[t.name()] = &t;
  }

  ir::Graph build() {
    for (const auto& input : graph_proto_.input()) {
      if (initializers_.count(input.name())) continue;  // a weight listed as input (IR < 4)
      ir::Tensor t;
      t.name = input.name();
      t.shape = shape_of(input.name(), nullptr);
      const ir::TensorId id = graph_.add_tensor(std::move(t));
      ids_[input.name()] = id;
      graph_.inputs().push_back(id);
    }
    for (const NodeProto& node : graph_proto_.node()) add(node);
    for (const auto& output : graph_proto_.output()) {
      const std::string name = resolve(output.name());
      auto it = ids_.find(name);
      if (it == ids_.end()) {
        user_error("{}: graph output '{}' is {}; ios needs every output computed by the graph", file_,
                   output.name(), initializers_.count(name) ? "a constant" : "not produced by any node");
      }
      if (name == output.name()) {
        graph_.outputs().push_back(it->second);
        continue;
      }
      if (auto made = ids_.find(output.name()); made != ids_.end()) {  // listed twice: copied once
        graph_.outputs().push_back(made->second);
        continue;
      }
      // An output that an Identity, a Dropout or an identity Einsum names
      // keeps its own name (what --output-dir writes, what --reference
      // names): a copy of the tensor it aliases, made under that name. Two
      // such outputs of one tensor are two copies.
      const ir::Shape shape = graph_.tensor(it->second).shape;
      shapes_.emplace(output.name(), shape);
      ir::Node copy;
      copy.name = output.name();
      copy.op = ir::OpKind::kReshape;
      copy.inputs = {it->second};
      copy.attrs = ir::ReshapeAttrs{shape};
      copy.outputs = {add_activation(output.name(), shape)};
      graph_.outputs().push_back(copy.outputs[0]);
      graph_.add_node(std::move(copy));
    }
    return std::move(graph_);
  }

 private:
  // The operator table's view of one ONNX node (ir/op_info.h): attributes,
  // constant inputs read as attributes, and messages naming the file and node.
  class NodeReader final : public ir::AttributeReader {
   public:
    NodeReader(const Builder& builder, const NodeProto& node) : builder_(builder), node_(node) {}

    int64_t opset() const override { return builder_.opset_; }
    std::string_view op_type() const override { return node_.op_type(); }
    bool has(std::string_view name) const override { return find_attribute(node_, std::string(name)) != nullptr; }
    int64_t get_int(std::string_view name, int64_t fallback) const override {
      return attr_int(node_, std::string(name), fallback);
    }
    float get_float(std::string_view name, float fallback) const override {
      return attr_float(node_, std::string(name), fallback);
    }
    std::string get_string(std::string_view name, std::string_view fallback) const override {
      return attr_string(node_, std::string(name), std::string(fallback));
    }
    std::optional<std::vector<int64_t>> get_ints(std::string_view name) const override {
      return attr_ints(node_, std::string(name));
    }
    std::optional<std::vector<float>> get_floats(std::string_view name) const override {
      return attr_floats(node_, std::string(name));
    }
    int num_outputs() const override { return node_.output_size(); }
    bool has_input(int index) const override { return !input_or_empty(node_, index).empty(); }
    std::string output_name(int index) const override { return node_.output(index); }
    bool output_used(int index) const override {
      return index < node_.output_size() && !node_.output(index).empty() && builder_.consumed(node_.output(index));
    }
    std::optional<std::vector<int64_t>> constant_ints(int index, const char* what) const override {
      auto v = builder_.constant_input(node_, index, what);
      if (!v) return std::nullopt;
      return v->ints();
    }
    std::optional<std::vector<double>> constant_values(int index, const char* what) const override {
      auto v = builder_.constant_input(node_, index, what);
      if (!v) return std::nullopt;
      std::vector<double> out(v->size());
      for (size_t k = 0; k < out.size(); ++k) out[k] = v->as_double(k);
      return out;
    }
    std::optional<ir::ElementType> element_type_attribute(std::string_view name) const override {
      if (node_.op_type() == "Cast" && name == "to" && node_.output_size() == 1) {
        if (auto it = builder_.declared_.find(node_.output(0)); it != builder_.declared_.end())
          return it->second;
      }
      const int64_t to = attr_int(node_, std::string(name), 0);
      if (to < 0 || to > std::numeric_limits<int32_t>::max()) return std::nullopt;
      return ir::from_onnx_type(static_cast<int32_t>(to));
    }
    bool input_is_constant(int index) const override {
      const std::string raw = input_or_empty(node_, index);
      return !raw.empty() && builder_.initializers_.count(builder_.resolve(raw)) > 0;
    }
    std::string where() const override { return fmt::format("{}: node {}", builder_.file_, node_label(node_)); }

   private:
    const Builder& builder_;
    const NodeProto& node_;
  };

  template <typename... Args>
  [[noreturn]] void fail(const NodeProto& node, fmt::format_string<Args...> what, Args&&... args) const {
    user_error("{}: node {}: {}", file_, node_label(node), fmt::format(what, std::forward<Args>(args)...));
  }

  std::string resolve(std::string name) const {
    for (auto it = alias_.find(name); it != alias_.end(); it = alias_.find(name)) name = it->second;
    return name;
  }

  ir::Shape shape_of(const std::string& name, const NodeProto* node) const {
    auto it = shapes_.find(name);
    if (it != shapes_.end()) return it->second;
    if (node) {
      fail(*node, "tensor '{}' has no static shape after shape inference; give every input a static "
                  "shape (--batch N, --input-shape NAME:DIMS)", name);
    }
    user_error("{}: tensor '{}' has no static shape; give every input a static shape (--batch N, "
               "--input-shape NAME:DIMS)", file_, name);
  }

  // The IR tensor an input name denotes: an activation or a float32 weight.
  ir::TensorId input_tensor(const NodeProto& node, const std::string& raw_name) {
    const std::string name = resolve(raw_name);
    if (auto it = ids_.find(name); it != ids_.end()) return it->second;
    auto init = initializers_.find(name);
    if (init == initializers_.end()) fail(node, "reads '{}', which nothing defines", name);
    // ONNX Pow takes an exponent of any numeric type (int64, double...); it
    // raises the float32 base as its float32 value does.
    const bool other_type_exponent = node.op_type() == "Pow" && node.input_size() > 1 &&
                                  resolve(node.input(1)) == name && init->second->data_type() != TensorProto::FLOAT;
    if (init->second->data_type() != TensorProto::FLOAT && !other_type_exponent) {
      fail(node,
           "reads weight '{}' of type {}; ios runs {} models only "
           "(integer tensors are "
           "allowed only in shape arithmetic), re-export the model in one of them",
           name, type_name(init->second->data_type()), ir::element_type_names_text());
    }
    ir::Tensor t;
    t.name = name;
    t.shape.assign(init->second->dims().begin(), init->second->dims().end());
    if (other_type_exponent) {
      const ConstTensor exponent = decode_tensor(*init->second, file_);
      std::vector<float> values(exponent.size());
      for (size_t k = 0; k < values.size(); ++k) values[k] = static_cast<float>(exponent.as_double(k));
      t.data = std::make_shared<const std::vector<float>>(std::move(values));
    } else {
      t.data = std::make_shared<const std::vector<float>>(decode_float_weights(*init->second, file_));
      release_weights(*init->second);
    }
    const ir::TensorId id = graph_.add_tensor(std::move(t));
    ids_[name] = id;
    return id;
  }

  // A weight now held by the IR leaves the protobuf, so that the file's
  // weights are in memory once, not twice, while the graph is built. Small
  // tensors stay: they cost nothing and are read again as attributes.
  void release_weights(TensorProto& proto) {
    constexpr int kKeepBytes = 4096;
    if (proto.raw_data().size() + 4 * static_cast<size_t>(proto.float_data_size()) <= kKeepBytes) return;
    std::string().swap(*proto.mutable_raw_data());
    proto.clear_raw_data();
    ::google::protobuf::RepeatedField<float>().Swap(proto.mutable_float_data());
    released_.insert(proto.name());
  }

  // A constant input read as attribute (Reshape target, Slice bounds, ...);
  // std::nullopt when the input is absent.
  std::optional<ConstTensor> constant_input(const NodeProto& node, int index, const char* what) const {
    const std::string raw = input_or_empty(node, index);
    if (raw.empty()) return std::nullopt;
    const std::string name = resolve(raw);
    auto init = initializers_.find(name);
    if (init == initializers_.end()) {
      fail(node, "input {} ('{}', the {}) is computed at run time; ios needs it constant (static "
                 "shapes only: pass --batch N if it depends on a symbolic batch)", index, name, what);
    }
    if (released_.count(name) > 0) {  // a weight read as an attribute too: its values are the IR's
      const ir::Tensor& weight = graph_.tensor(ids_.at(name));
      ConstTensor value;
      value.dims = weight.shape;
      value.f.assign(weight.data->begin(), weight.data->end());
      return value;
    }
    return decode_tensor(*init->second, file_);
  }

  void only_first_output(const NodeProto& node) const {
    for (int o = 1; o < node.output_size(); ++o) {
      if (!node.output(o).empty() && consumed(node.output(o))) {
        fail(node, "output {} ('{}') is used, but ios computes only the first output of {}", o,
             node.output(o), node.op_type());
      }
    }
  }

  bool consumed(const std::string& name) const {
    for (const auto& n : graph_proto_.node()) {
      if (std::find(n.input().begin(), n.input().end(), name) != n.input().end()) return true;
    }
    for (const auto& o : graph_proto_.output()) {
      if (o.name() == name) return true;
    }
    return false;
  }

  void add(const NodeProto& node) {
    const std::string& op_type = node.op_type();
    if (!node.domain().empty() && node.domain() != "ai.onnx") {
      fail(node, "operator domain '{}' is not supported; supported operators: {}", node.domain(), supported_ops_list());
    }
    if (op_type == "Identity" || op_type == "Dropout") {
      if (op_type == "Dropout") only_first_output(node);
      alias_[node.output(0)] = resolve(node.input(0));
      return;
    }
    if (op_type == "Gather") return add_gather(node);
    if (op_type == "Einsum") return add_einsum(node);
    if (op_type == "InstanceNormalization") return add_instance_norm(node);
    if (op_type == "Sum" || op_type == "Mean" || op_type == "Max" || op_type == "Min") return add_variadic(node);
    if (op_type == "Squeeze" || op_type == "Unsqueeze") return add_squeeze(node);
    const ir::OpInfo* info = ir::find_onnx_op(op_type);
    if (!info) fail(node, "operator {} is not supported; supported operators: {}", op_type, supported_ops_list());
    const bool legacy = op_type != info->onnx_name;  // Upsample, imported as Resize
    const int since = legacy ? info->legacy_since_opset : info->since_opset;
    const int until = legacy ? info->legacy_until_opset : info->until_opset;
    if (opset_ < since || (until != 0 && opset_ > until)) {
      fail(node, "ios supports {} from opset {}{}; this model imports opset {} (re-export it with opset {} or later)",
           op_type, since, until != 0 ? fmt::format(" to {}", until) : std::string(), opset_, since);
    }

    ir::Node n;
    n.name = node.name();
    n.op = info->kind;
    const int inputs = info->data_inputs ? info->data_inputs(node.input_size()) : 1;
    std::vector<ir::Shape> in_shapes;
    for (int i = 0; i < inputs; ++i) {
      const std::string name = input_or_empty(node, i);
      if (name.empty()) {
        if (i < info->required_inputs) fail(node, "required input {} is missing", i);
        continue;  // optional bias / C absent
      }
      const ir::TensorId id = input_tensor(node, name);
      n.inputs.push_back(id);
      in_shapes.push_back(graph_.tensor(id).shape);
    }
    if (in_shapes.empty()) fail(node, "has no inputs");
    if (info->parse_attrs) n.attrs = info->parse_attrs(NodeReader(*this, node), in_shapes);

    const int outputs = info->every_output ? node.output_size() : 1;
    if (!info->every_output) only_first_output(node);
    for (int o = 0; o < outputs; ++o) {
      const std::string& name = node.output(o);
      if (name.empty()) fail(node, "output {} has no name", o);
      if (ids_.count(name)) fail(node, "output '{}' is produced twice", name);
      ir::Tensor t;
      t.name = name;
      t.shape = shape_of(name, &node);
      const ir::TensorId id = graph_.add_tensor(std::move(t));
      ids_[name] = id;
      n.outputs.push_back(id);
    }
    graph_.add_node(std::move(n));
  }

  // Gather of an activation at one constant index (ViT's class token x[:, 0],
  // x[:, :, k]) is a Slice of length 1 on the axis, followed, for a scalar
  // index, by a Reshape that drops the axis. A Gather of a constant with a
  // constant index was folded before; any other Gather is refused.
  void add_gather(const NodeProto& node) {
    if (node.input_size() != 2) fail(node, "Gather needs 2 inputs, it has {}", node.input_size());
    const std::string data_name = resolve(node.input(0)), indices_name = resolve(node.input(1));
    const auto indices_init = initializers_.find(indices_name);
    if (indices_init == initializers_.end()) {
      fail(node, "Gather with indices computed at run time ('{}') is not supported; ios gathers one constant "
                 "index of an activation", indices_name);
    }
    if (!ids_.count(data_name)) {
      fail(node, "Gather of the constant '{}' is not supported; ios gathers one constant index of an activation",
           data_name);
    }
    const ConstTensor indices = decode_tensor(*indices_init->second, file_);
    const bool scalar_index = indices.dims.empty();
    if (indices.size() != 1 || !(scalar_index || indices.dims.size() == 1)) {
      fail(node, "Gather with indices of shape [{}] is not supported; ios gathers one constant index (a scalar "
                 "or a 1-element 1-D tensor)", fmt::join(indices.dims, ", "));
    }
    only_first_output(node);
    const ir::TensorId data = input_tensor(node, data_name);
    const ir::Shape data_shape = graph_.tensor(data).shape;
    const auto rank = static_cast<int64_t>(data_shape.size());
    int64_t axis = attr_int(node, "axis", 0);
    if (axis < -rank || axis >= rank) fail(node, "Gather axis {} is out of range for rank {}", axis, rank);
    if (axis < 0) axis += rank;
    const int64_t length = data_shape[static_cast<size_t>(axis)];
    int64_t index = indices.as_int(0);
    if (index < -length || index >= length) {
      fail(node, "Gather index {} is out of range for axis {} of length {} (of '{}')", index, axis, length, data_name);
    }
    if (index < 0) index += length;

    const std::string& out_name = output_name(node);
    ir::Shape sliced_shape = data_shape;
    sliced_shape[static_cast<size_t>(axis)] = 1;
    const ir::TensorId sliced =
        lowered_step(node, ir::OpKind::kSlice, {data}, ir::SliceAttrs{{axis}, {index}, {index + 1}, {1}}, sliced_shape,
                     scalar_index ? unused_name(out_name + "/gather_slice") : out_name);
    if (scalar_index) {
      const ir::Shape out_shape = shape_of(out_name, &node);
      lowered_step(node, ir::OpKind::kReshape, {sliced}, ir::ReshapeAttrs{out_shape}, out_shape, out_name);
    }
  }

  // Einsum as the IR's Transpose, Reshape and MatMul (onnx/einsum.h); steps
  // that would change nothing are left out, and the last one makes the
  // node's output.
  void add_einsum(const NodeProto& node) {
    only_first_output(node);
    const auto* equation = find_attribute(node, "equation");
    if (!equation) fail(node, "Einsum has no 'equation' attribute");
    std::vector<ir::TensorId> operands;
    std::vector<ir::Shape> shapes;
    for (int i = 0; i < node.input_size(); ++i) {
      const std::string name = input_or_empty(node, i);
      if (name.empty()) fail(node, "input {} is empty", i);
      operands.push_back(input_tensor(node, name));
      shapes.push_back(graph_.tensor(operands.back()).shape);
    }
    if (operands.empty()) fail(node, "has no inputs");
    const EinsumPlan plan = plan_einsum(equation->s(), shapes, fmt::format("{}: node {}", file_, node_label(node)));
    const std::string& out = output_name(node);
    const bool permute_output = !std::is_sorted(plan.output_perm.begin(), plan.output_perm.end());  // not the identity
    if (!plan.matmul) {
      if (!permute_output) {  // the operand itself, under the output's name
        alias_[out] = graph_.tensor(operands[0]).name;
        return;
      }
      lowered_step(node, ir::OpKind::kTranspose, {operands[0]}, ir::TransposeAttrs{plan.output_perm}, plan.output, out);
      return;
    }
    for (size_t k = 0; k < 2; ++k) {
      const std::string side = k == 0 ? "a" : "b";
      const std::vector<int64_t>& perm = plan.operand_perm[k];
      ir::Shape permuted;
      for (int64_t d : perm) permuted.push_back(shapes[k][static_cast<size_t>(d)]);
      if (!std::is_sorted(perm.begin(), perm.end())) {
        operands[k] = lowered_step(node, ir::OpKind::kTranspose, {operands[k]}, ir::TransposeAttrs{perm}, permuted,
                                   unused_name(out + "/einsum_" + side + "_transposed"));
      }
      if (permuted != plan.operand_matrix[k]) {
        operands[k] = lowered_step(node, ir::OpKind::kReshape, {operands[k]}, ir::ReshapeAttrs{plan.operand_matrix[k]},
                                   plan.operand_matrix[k], unused_name(out + "/einsum_" + side + "_matrix"));
      }
    }
    ir::Shape matmul_shape = plan.operand_matrix[0];
    matmul_shape.back() = plan.operand_matrix[1].back();
    const bool reshape_product = matmul_shape != plan.product;
    const bool last_is_matmul = !reshape_product && !permute_output;
    ir::TensorId t = lowered_step(node, ir::OpKind::kMatMul, {operands[0], operands[1]}, {}, matmul_shape,
                                  last_is_matmul ? out : unused_name(out + "/einsum_product"));
    if (reshape_product) {
      t = lowered_step(node, ir::OpKind::kReshape, {t}, ir::ReshapeAttrs{plan.product}, plan.product,
                       permute_output ? unused_name(out + "/einsum_product_dims") : out);
    }
    if (permute_output) lowered_step(node, ir::OpKind::kTranspose, {t}, ir::TransposeAttrs{plan.output_perm}, plan.output, out);
  }

  // InstanceNormalization (GroupNorm as PyTorch exports it: a Reshape to
  // [N, groups, -1] around it) is a LayerNormalization over the dims from 2
  // on, then the per-channel Scale and B as a Mul and an Add where they are
  // not ones and zeros.
  void add_instance_norm(const NodeProto& node) {
    if (node.input_size() != 3) fail(node, "InstanceNormalization needs 3 inputs (input, scale, B), it has {}", node.input_size());
    only_first_output(node);
    const ir::TensorId x = input_tensor(node, node.input(0));
    const ir::Shape x_shape = graph_.tensor(x).shape;
    if (x_shape.size() < 3) fail(node, "the input has rank {}; InstanceNormalization needs [N, C, D1, ...]", x_shape.size());
    const int64_t channels = x_shape[1];
    std::vector<std::vector<float>> affine;  // scale, B
    for (int i = 1; i < 3; ++i) {
      const char* what = i == 1 ? "scale" : "B";
      const auto value = constant_input(node, i, what);
      if (!value || !value->is_float()) fail(node, "input {} ({}) must be a float32 constant", i, what);
      if (value->dims != ir::Shape{channels}) {
        fail(node, "input {} ({}) has shape {}, expected [{}] (one value per channel)", i, what, ir::to_string(value->dims), channels);
      }
      affine.emplace_back(value->f.begin(), value->f.end());
    }
    const float epsilon = attr_float(node, "epsilon", 1e-5f);
    if (!std::isfinite(epsilon) || epsilon < 0.0f) fail(node, "epsilon {} is not a finite number >= 0", epsilon);
    const bool scaled = std::any_of(affine[0].begin(), affine[0].end(), [](float v) { return v != 1.0f; });
    const bool shifted = std::any_of(affine[1].begin(), affine[1].end(), [](float v) { return v != 0.0f; });
    const std::string& out = output_name(node);
    ir::LayerNormAttrs attrs;
    attrs.axis = 2;
    attrs.epsilon = epsilon;
    const ir::TensorId ones = add_weight(out + "/instance_norm_ones", {1}, {1.0f});
    ir::TensorId t = lowered_step(node, ir::OpKind::kLayerNorm, {x, ones}, attrs, x_shape,
                                  scaled || shifted ? unused_name(out + "/instance_normalized") : out);
    ir::Shape per_channel(x_shape.size() - 1, 1);  // [C, 1, ...]: broadcasts over N and the spatial dims
    per_channel[0] = channels;
    if (scaled) {
      t = lowered_step(node, ir::OpKind::kMul, {t, add_weight(out + "/instance_norm_scale", per_channel, affine[0])}, {},
                       x_shape, shifted ? unused_name(out + "/instance_scaled") : out);
    }
    if (shifted) {
      lowered_step(node, ir::OpKind::kAdd, {t, add_weight(out + "/instance_norm_bias", per_channel, affine[1])}, {},
                   x_shape, out);
    }
  }

  // Squeeze and Unsqueeze of an activation (PyTorch's 1-D pooling around a
  // 2-D one, an index x[:, i] then squeezed) only drop or add axes of length
  // 1: a Reshape to the output shape ONNX's inference gave. Of constants
  // they were folded before.
  void add_squeeze(const NodeProto& node) {
    only_first_output(node);
    if (node.input_size() < 1 || node.input(0).empty()) fail(node, "has no data input (input 0)");
    const std::string data_name = resolve(node.input(0));
    if (!ids_.count(data_name)) {
      fail(node, "{} of the constant '{}' was not folded; its axes must be constant", node.op_type(), data_name);
    }
    const ir::TensorId x = input_tensor(node, data_name);
    const std::string& out = output_name(node);
    const ir::Shape shape = shape_of(out, &node);
    if (ir::num_elements(shape) != ir::num_elements(graph_.tensor(x).shape)) {
      fail(node, "output shape {} holds other elements than the input's {}", ir::to_string(shape),
           ir::to_string(graph_.tensor(x).shape));
    }
    lowered_step(node, ir::OpKind::kReshape, {x}, ir::ReshapeAttrs{shape}, shape, out);
  }

  // Sum, Mean, Max and Min of any number of operands, broadcast together:
  // a chain of the binary Add, Max or Min ((a + b) + c ...), Mean's sum then
  // times 1/n. One operand is the operand itself.
  void add_variadic(const NodeProto& node) {
    const std::string& op_type = node.op_type();
    only_first_output(node);
    if (node.input_size() < 1) fail(node, "{} needs at least one input", op_type);
    std::vector<ir::TensorId> operands;
    for (int i = 0; i < node.input_size(); ++i) {
      if (node.input(i).empty()) fail(node, "input {} is empty", i);
      operands.push_back(input_tensor(node, node.input(i)));
    }
    const std::string& out = output_name(node);
    const bool mean = op_type == "Mean";
    if (operands.size() == 1) {
      if (graph_.tensor(operands[0]).is_constant()) fail(node, "{} of one constant is not supported", op_type);
      alias_[out] = graph_.tensor(operands[0]).name;
      return;
    }
    const ir::OpKind kind = op_type == "Max" ? ir::OpKind::kMax : op_type == "Min" ? ir::OpKind::kMin : ir::OpKind::kAdd;
    ir::TensorId t = operands[0];
    for (size_t k = 1; k < operands.size(); ++k) {
      const auto shape = ir::broadcast_shapes(graph_.tensor(t).shape, graph_.tensor(operands[k]).shape);
      if (!shape) {
        fail(node, "input {} has shape {}, which does not broadcast with {}", k, ir::to_string(graph_.tensor(operands[k]).shape),
             ir::to_string(graph_.tensor(t).shape));
      }
      const bool last = k + 1 == operands.size() && !mean;
      t = lowered_step(node, kind, {t, operands[k]}, {}, *shape,
                       last ? out : unused_name(fmt::format("{}/{}_{}", out, op_type, k)));
    }
    if (mean) {
      const ir::TensorId scale =
          add_weight(out + "/mean_scale", {1}, {1.0f / static_cast<float>(operands.size())});
      lowered_step(node, ir::OpKind::kMul, {t, scale}, {}, graph_.tensor(t).shape, out);
    }
  }

  const std::string& output_name(const NodeProto& node) const {
    if (node.output_size() < 1 || node.output(0).empty()) fail(node, "output 0 has no name");
    if (ids_.count(node.output(0))) fail(node, "output '{}' is produced twice", node.output(0));
    return node.output(0);
  }

  // One IR node that an ONNX node is lowered to, making `out_name` of
  // `shape`. A name the builder introduces enters the shape map (which names
  // every activation); the node's own output keeps ONNX's shape there, so
  // that the import's cross-check compares the two.
  ir::TensorId lowered_step(const NodeProto& node, ir::OpKind op, std::vector<ir::TensorId> inputs, ir::Attrs attrs,
                            const ir::Shape& shape, const std::string& out_name) {
    shapes_.emplace(out_name, shape);
    ir::Node n;
    n.name = node.name();
    n.op = op;
    n.inputs = std::move(inputs);
    n.attrs = std::move(attrs);
    n.outputs = {add_activation(out_name, shape)};
    const ir::TensorId made = n.outputs[0];
    graph_.add_node(std::move(n));
    return made;
  }

  ir::TensorId add_weight(const std::string& base, ir::Shape shape, std::vector<float> values) {
    ir::Tensor t;
    t.name = unused_name(base);
    t.shape = std::move(shape);
    t.data = std::make_shared<const std::vector<float>>(std::move(values));
    const ir::TensorId id = graph_.add_tensor(std::move(t));
    ids_[graph_.tensor(id).name] = id;
    return id;
  }

  ir::TensorId add_activation(const std::string& name, ir::Shape shape) {
    ir::Tensor t;
    t.name = name;
    t.shape = std::move(shape);
    const ir::TensorId id = graph_.add_tensor(std::move(t));
    ids_[name] = id;
    return id;
  }

  // `base`, or base_1, base_2...: a tensor name neither the file nor an
  // earlier call uses. The file's names are collected once, so a model of
  // many Gathers stays linear.
  std::string unused_name(const std::string& base) {
    if (used_names_.empty()) {
      for (const auto& v : graph_proto_.input()) used_names_.insert(v.name());
      for (const auto& n : graph_proto_.node()) used_names_.insert(n.output().begin(), n.output().end());
      for (const auto& [name, init] : initializers_) used_names_.insert(name);
    }
    std::string name = base;
    for (int k = 1; used_names_.count(name) || ids_.count(name); ++k) name = fmt::format("{}_{}", base, k);
    used_names_.insert(name);
    return name;
  }

  const ::onnx::GraphProto& graph_proto_;
  ShapeMap& shapes_;
  const DeclaredTypes& declared_;
  std::unordered_set<std::string> used_names_;  // filled by unused_name()
  const std::string& file_;
  int64_t opset_;
  std::unordered_map<std::string, TensorProto*> initializers_;
  std::unordered_set<std::string> released_;  // float weights moved into the IR (release_weights)
  std::unordered_map<std::string, ir::TensorId> ids_;
  std::unordered_map<std::string, std::string> alias_;
  ir::Graph graph_;
};

}  // namespace

bool is_supported_op(const std::string& op_type) {
  return op_type == "Identity" || op_type == "Dropout" || op_type == "Einsum" || op_type == "InstanceNormalization" ||
         op_type == "Sum" || op_type == "Mean" || op_type == "Squeeze" || op_type == "Unsqueeze" ||
         ir::find_onnx_op(op_type) != nullptr;
}

std::string supported_ops_list() {
  std::string out;
  for (const ir::OpInfo& info : ir::all_ops()) {
    out += info.onnx_name;
    out += ", ";
    if (!info.legacy_name.empty()) {
      out += info.legacy_name;
      out += ", ";
    }
  }
  out += "Identity, Dropout, Einsum of one or two operands without sums over one operand (imported as "
         "Transpose, Reshape and MatMul), InstanceNormalization (imported as LayerNormalization), Sum, Mean and Max and Min of "
         "several inputs (imported as chains of Add, Max or Min), Squeeze and Unsqueeze of an activation "
         "(imported as a Reshape), Gather of an "
         "activation at one constant index (imported as a Slice), and "
         "shape arithmetic on constants (Constant, Shape, Gather, Unsqueeze, Squeeze, Concat, Cast, Reshape, "
         "Slice, ... which are folded at import)";
  return out;
}

ir::Graph build_ir(::onnx::ModelProto& model, ShapeMap& shapes, const DeclaredTypes& declared,
                   const std::string& file) {
  return Builder(model, shapes, declared, file).build();
}

}  // namespace ios::onnx
