#include "onnx/graph_builder.h"

#include <algorithm>
#include <cfloat>
#include <unordered_map>

#include "core/error.h"
#include "onnx/attributes.h"
#include "onnx/const_tensor.h"

namespace ios::onnx {
namespace {

using ::onnx::NodeProto;
using ::onnx::TensorProto;
using ir::OpKind;

const std::vector<std::pair<std::string, OpKind>>& op_table() {
  static const std::vector<std::pair<std::string, OpKind>> table = {
      {"Conv", OpKind::kConv},
      {"Relu", OpKind::kRelu},
      {"Clip", OpKind::kClip},
      {"Sigmoid", OpKind::kSigmoid},
      {"HardSigmoid", OpKind::kHardSigmoid},
      {"HardSwish", OpKind::kHardSwish},
      {"Add", OpKind::kAdd},
      {"Mul", OpKind::kMul},
      {"Concat", OpKind::kConcat},
      {"Split", OpKind::kSplit},
      {"Slice", OpKind::kSlice},
      {"MaxPool", OpKind::kMaxPool},
      {"AveragePool", OpKind::kAveragePool},
      {"GlobalAveragePool", OpKind::kGlobalAveragePool},
      {"ReduceMean", OpKind::kReduceMean},
      {"Flatten", OpKind::kFlatten},
      {"Reshape", OpKind::kReshape},
      {"Transpose", OpKind::kTranspose},
      {"Gemm", OpKind::kGemm},
      {"MatMul", OpKind::kMatMul},
      {"Softmax", OpKind::kSoftmax},
      {"Pad", OpKind::kPad},
      {"BatchNormalization", OpKind::kBatchNorm},
  };
  return table;
}

std::optional<OpKind> lookup(const std::string& op_type) {
  for (const auto& [name, kind] : op_table()) {
    if (name == op_type) return kind;
  }
  return std::nullopt;
}

class Builder {
 public:
  Builder(const ::onnx::ModelProto& model, const ShapeMap& shapes, const std::string& file)
      : graph_proto_(model.graph()), shapes_(shapes), file_(file), opset_(default_opset(model)) {
    for (const auto& t : graph_proto_.initializer()) initializers_[t.name()] = &t;
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
      graph_.outputs().push_back(it->second);
    }
    return std::move(graph_);
  }

 private:
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
    if (init->second->data_type() != TensorProto::FLOAT) {
      fail(node, "reads weight '{}' of type {}; ios runs float32 models only (integer tensors are "
                 "allowed only in shape arithmetic), re-export the model in float32",
           name, type_name(init->second->data_type()));
    }
    ir::Tensor t;
    t.name = name;
    t.shape.assign(init->second->dims().begin(), init->second->dims().end());
    t.data = std::make_shared<const std::vector<float>>(decode_float_weights(*init->second, file_));
    const ir::TensorId id = graph_.add_tensor(std::move(t));
    ids_[name] = id;
    return id;
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
    return decode_tensor(*init->second, file_);
  }

  int64_t normalize_axis(const NodeProto& node, int64_t axis, int64_t rank) const {
    if (axis < -rank || axis >= rank) fail(node, "axis {} out of range for rank {}", axis, rank);
    return axis < 0 ? axis + rank : axis;
  }

  std::array<int64_t, 4> window_pads(const NodeProto& node, const ir::Shape& x,
                                     const std::array<int64_t, 2>& kernel,
                                     const std::array<int64_t, 2>& stride,
                                     const std::array<int64_t, 2>& dilation) const {
    const std::string auto_pad = attr_string(node, "auto_pad", "NOTSET");
    std::array<int64_t, 4> pads{0, 0, 0, 0};
    if (auto_pad == "NOTSET") {
      const auto p = attr_ints(node, "pads").value_or(std::vector<int64_t>(4, 0));
      if (p.size() != 4) fail(node, "pads has {} entries, expected 4", p.size());
      std::copy(p.begin(), p.end(), pads.begin());  // ONNX {H_begin, W_begin, H_end, W_end}
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      for (size_t a = 0; a < 2; ++a) {
        const int64_t in = x[2 + a];
        const int64_t out = (in + stride[a] - 1) / stride[a];
        const int64_t total = std::max<int64_t>(0, (out - 1) * stride[a] + dilation[a] * (kernel[a] - 1) + 1 - in);
        const int64_t small = total / 2, large = total - small;
        pads[a] = auto_pad == "SAME_UPPER" ? small : large;
        pads[a + 2] = auto_pad == "SAME_UPPER" ? large : small;
      }
    } else if (auto_pad != "VALID") {
      fail(node, "unknown auto_pad '{}'", auto_pad);
    }
    return pads;
  }

  std::array<int64_t, 2> pair_attr(const NodeProto& node, const char* name, std::array<int64_t, 2> fallback) const {
    const auto v = attr_ints(node, name);
    if (!v) return fallback;
    if (v->size() != 2) fail(node, "{} has {} entries; only 2-D (NCHW) windows are supported", name, v->size());
    return {(*v)[0], (*v)[1]};
  }

  void need_rank(const NodeProto& node, const ir::Shape& x, size_t rank, const char* what) const {
    if (x.size() != rank) fail(node, "input has shape {}; {}", ir::to_string(x), what);
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

  ir::Attrs conv_attrs(const NodeProto& node, const ir::Shape& x, const ir::Shape& w) const {
    need_rank(node, x, 4, "only 2-D convolutions (4-D NCHW input) are supported");
    need_rank(node, w, 4, "only 2-D convolutions (4-D weights) are supported");
    ir::ConvAttrs a;
    a.kernel = pair_attr(node, "kernel_shape", {w[2], w[3]});
    a.stride = pair_attr(node, "strides", {1, 1});
    a.dilation = pair_attr(node, "dilations", {1, 1});
    a.group = attr_int(node, "group", 1);
    a.pads = window_pads(node, x, a.kernel, a.stride, a.dilation);
    return a;
  }

  ir::Attrs pool_attrs(const NodeProto& node, const ir::Shape& x, bool average) const {
    need_rank(node, x, 4, "only 2-D pooling (4-D NCHW input) is supported");
    ir::PoolAttrs a;
    if (!find_attribute(node, "kernel_shape")) fail(node, "kernel_shape is missing");
    a.kernel = pair_attr(node, "kernel_shape", {1, 1});
    a.stride = pair_attr(node, "strides", {1, 1});
    const auto dilation = pair_attr(node, "dilations", {1, 1});
    if (dilation != std::array<int64_t, 2>{1, 1}) fail(node, "dilated pooling is not supported");
    a.ceil_mode = attr_int(node, "ceil_mode", 0) != 0;
    a.count_include_pad = average && attr_int(node, "count_include_pad", 0) != 0;
    a.pads = window_pads(node, x, a.kernel, a.stride, {1, 1});
    if (!average) {
      if (attr_int(node, "storage_order", 0) != 0) fail(node, "storage_order 1 is not supported");
      only_first_output(node);
    }
    return a;
  }

  ir::Attrs clip_attrs(const NodeProto& node) const {
    ir::ClipAttrs a;
    if (opset_ < 11) {
      a.min = attr_float(node, "min", a.min);
      a.max = attr_float(node, "max", a.max);
      return a;
    }
    if (auto v = constant_input(node, 1, "min bound")) {
      if (v->size() != 1) fail(node, "the min bound must have exactly one element");
      a.min = static_cast<float>(v->as_double(0));
    }
    if (auto v = constant_input(node, 2, "max bound")) {
      if (v->size() != 1) fail(node, "the max bound must have exactly one element");
      a.max = static_cast<float>(v->as_double(0));
    }
    return a;
  }

  ir::Attrs split_attrs(const NodeProto& node, const ir::Shape& x) const {
    ir::SplitAttrs a;
    const auto rank = static_cast<int64_t>(x.size());
    a.axis = normalize_axis(node, attr_int(node, "axis", 0), rank);
    std::optional<std::vector<int64_t>> sizes;
    if (opset_ < 13) {
      sizes = attr_ints(node, "split");
    } else if (auto v = constant_input(node, 1, "split sizes")) {
      sizes = v->ints();
    }
    const int64_t dim = x[static_cast<size_t>(a.axis)];
    const auto parts = static_cast<int64_t>(node.output_size());
    if (sizes) {
      a.sizes = *sizes;
    } else {
      if (dim % parts != 0) fail(node, "cannot split {} evenly into {} outputs", dim, parts);
      a.sizes.assign(static_cast<size_t>(parts), dim / parts);
    }
    return a;
  }

  ir::Attrs slice_attrs(const NodeProto& node, const ir::Shape& x) const {
    std::vector<int64_t> starts, ends, axes, steps;
    if (opset_ < 10) {
      starts = attr_ints(node, "starts").value_or(std::vector<int64_t>{});
      ends = attr_ints(node, "ends").value_or(std::vector<int64_t>{});
      axes = attr_ints(node, "axes").value_or(std::vector<int64_t>{});
    } else {
      starts = constant_input(node, 1, "slice starts").value().ints();
      ends = constant_input(node, 2, "slice ends").value().ints();
      if (auto v = constant_input(node, 3, "slice axes")) axes = v->ints();
      if (auto v = constant_input(node, 4, "slice steps")) steps = v->ints();
    }
    if (axes.empty()) {
      for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
    }
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
      fail(node, "starts, ends, axes and steps have different lengths");
    }
    // Clamp as ONNX specifies: positive steps to [0, dim], negative steps
    // to [0, dim - 1] for starts and [-1, dim - 1] for ends.
    ir::SliceAttrs a;
    const auto rank = static_cast<int64_t>(x.size());
    for (size_t k = 0; k < starts.size(); ++k) {
      const int64_t axis = normalize_axis(node, axes[k], rank);
      if (std::find(a.axes.begin(), a.axes.end(), axis) != a.axes.end()) fail(node, "axis {} sliced twice", axis);
      const int64_t dim = x[static_cast<size_t>(axis)];
      const int64_t step = steps[k];
      if (step == 0) fail(node, "slice step 0");
      int64_t s = starts[k], e = ends[k];
      if (s < 0) s += dim;
      if (e < 0) e += dim;
      if (step > 0) {
        s = std::clamp<int64_t>(s, 0, dim);
        e = std::clamp<int64_t>(e, 0, dim);
      } else {
        s = std::clamp<int64_t>(s, 0, dim - 1);
        e = std::clamp<int64_t>(e, -1, dim - 1);
      }
      a.axes.push_back(axis);
      a.starts.push_back(s);
      a.ends.push_back(e);
      a.steps.push_back(step);
    }
    return a;
  }

  ir::Attrs reduce_attrs(const NodeProto& node, const ir::Shape& x) const {
    ir::ReduceAttrs a;
    std::vector<int64_t> axes = attr_ints(node, "axes").value_or(std::vector<int64_t>{});
    if (opset_ >= 18) {
      if (auto v = constant_input(node, 1, "reduction axes")) axes = v->ints();
    }
    for (int64_t& axis : axes) axis = normalize_axis(node, axis, static_cast<int64_t>(x.size()));
    std::sort(axes.begin(), axes.end());
    if (x.size() != 4 || axes != std::vector<int64_t>{2, 3}) {
      fail(node, "ReduceMean is supported over H and W (axes [2, 3]) of a 4-D tensor only; this one "
                 "reduces axes [{}] of shape {}", fmt::join(axes, ", "), ir::to_string(x));
    }
    a.axes = axes;
    a.keepdims = attr_int(node, "keepdims", 1) != 0;
    return a;
  }

  ir::Attrs reshape_attrs(const NodeProto& node, const ir::Shape& x) const {
    const auto shape_input = constant_input(node, 1, "target shape");
    if (!shape_input) fail(node, "has no target shape input (Reshape before opset 5 is not supported)");
    const std::vector<int64_t> target = shape_input->ints();
    const bool allow_zero = attr_int(node, "allowzero", 0) != 0;
    ir::ReshapeAttrs a;
    int64_t known = 1;
    std::optional<size_t> infer_at;
    for (size_t d = 0; d < target.size(); ++d) {
      int64_t v = target[d];
      if (v == 0 && !allow_zero) {
        if (d >= x.size()) fail(node, "target copies dimension {} that the input lacks", d);
        v = x[d];
      }
      if (v == -1) {
        if (infer_at) fail(node, "target has two -1 entries");
        infer_at = d;
        v = 1;
      } else if (v < 0) {
        fail(node, "target has a negative entry {}", v);
      } else if (__builtin_mul_overflow(known, v, &known)) {
        // The target comes from the file: its product must not wrap.
        fail(node, "target [{}] has more elements than int64 can count", fmt::join(target, ", "));
      }
      a.shape.push_back(v);
    }
    const int64_t total = ir::num_elements(x);
    if (infer_at) {
      if (known == 0 || total % known != 0) fail(node, "cannot reshape {} to [{}]", ir::to_string(x), fmt::join(target, ", "));
      a.shape[*infer_at] = total / known;
    }
    return a;
  }

  ir::Attrs pad_attrs(const NodeProto& node, const ir::Shape& x) const {
    ir::PadAttrs a;
    const std::string mode = attr_string(node, "mode", "constant");
    if (mode == "constant") a.mode = ir::PadAttrs::Mode::kConstant;
    else if (mode == "reflect") a.mode = ir::PadAttrs::Mode::kReflect;
    else if (mode == "edge") a.mode = ir::PadAttrs::Mode::kEdge;
    else fail(node, "pad mode '{}' is not supported", mode);
    if (opset_ < 11) {
      a.pads = attr_ints(node, "pads").value_or(std::vector<int64_t>{});
      a.value = attr_float(node, "value", 0.0f);
    } else {
      a.pads = constant_input(node, 1, "pads").value().ints();
      if (auto v = constant_input(node, 2, "constant value"); v && v->size() > 0) {
        a.value = static_cast<float>(v->as_double(0));
      }
      if (!input_or_empty(node, 3).empty()) fail(node, "the axes input of Pad is not supported");
    }
    if (a.pads.size() != 2 * x.size()) fail(node, "has {} pads for rank {}", a.pads.size(), x.size());
    if (std::any_of(a.pads.begin(), a.pads.end(), [](int64_t p) { return p < 0; })) {
      fail(node, "negative pads (cropping) are not supported");
    }
    return a;
  }

  ir::Attrs attributes(const NodeProto& node, OpKind op, const std::vector<ir::Shape>& in) const {
    const ir::Shape& x = in.at(0);
    const auto rank = static_cast<int64_t>(x.size());
    switch (op) {
      case OpKind::kConv: return conv_attrs(node, x, in.at(1));
      case OpKind::kMaxPool: return pool_attrs(node, x, false);
      case OpKind::kAveragePool: return pool_attrs(node, x, true);
      case OpKind::kClip: return clip_attrs(node);
      case OpKind::kHardSigmoid:
        return ir::HardSigmoidAttrs{attr_float(node, "alpha", 0.2f), attr_float(node, "beta", 0.5f)};
      case OpKind::kConcat: return ir::AxisAttrs{normalize_axis(node, attr_int(node, "axis", 0), rank)};
      case OpKind::kSoftmax: {
        const int64_t axis = normalize_axis(node, attr_int(node, "axis", opset_ < 13 ? 1 : -1), rank);
        // Before opset 13, Softmax flattens the axes from `axis` on into one.
        for (int64_t d = axis + 1; opset_ < 13 && d < rank; ++d) {
          if (x[static_cast<size_t>(d)] != 1) {
            fail(node, "Softmax-{} normalizes over axes {}.. flattened; ios supports one axis (re-export with opset 13)", opset_, axis);
          }
        }
        return ir::AxisAttrs{axis};
      }
      case OpKind::kFlatten: {
        int64_t axis = attr_int(node, "axis", 1);
        if (axis < 0) axis += rank;
        if (axis < 0 || axis > rank) fail(node, "axis out of range for rank {}", rank);
        return ir::AxisAttrs{axis};
      }
      case OpKind::kSplit: return split_attrs(node, x);
      case OpKind::kSlice: return slice_attrs(node, x);
      case OpKind::kReduceMean: return reduce_attrs(node, x);
      case OpKind::kReshape: return reshape_attrs(node, x);
      case OpKind::kTranspose: {
        ir::TransposeAttrs a;
        a.perm = attr_ints(node, "perm").value_or(std::vector<int64_t>{});
        if (a.perm.empty()) {
          for (int64_t d = rank; d-- > 0;) a.perm.push_back(d);
        }
        for (int64_t& p : a.perm) p = normalize_axis(node, p, rank);
        return a;
      }
      case OpKind::kGemm:
        return ir::GemmAttrs{attr_float(node, "alpha", 1.0f), attr_float(node, "beta", 1.0f),
                             attr_int(node, "transA", 0) != 0, attr_int(node, "transB", 0) != 0};
      case OpKind::kPad: return pad_attrs(node, x);
      case OpKind::kBatchNorm:
        if (attr_int(node, "training_mode", 0) != 0) fail(node, "training_mode BatchNormalization is not supported");
        only_first_output(node);
        return ir::BatchNormAttrs{attr_float(node, "epsilon", 1e-5f)};
      case OpKind::kGlobalAveragePool:
        need_rank(node, x, 4, "only 4-D NCHW input is supported");
        return std::monostate{};
      default:
        return std::monostate{};
    }
  }

  // How many leading inputs are tensors of the IR node (the rest are
  // attribute-like constants).
  int data_inputs(const NodeProto& node, OpKind op) const {
    switch (op) {
      case OpKind::kConv:
      case OpKind::kGemm:
        return std::min(node.input_size(), 3);
      case OpKind::kAdd:
      case OpKind::kMul:
      case OpKind::kMatMul:
        return 2;
      case OpKind::kConcat:
        return node.input_size();
      case OpKind::kBatchNorm:
        return 5;
      default:
        return 1;
    }
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
    const auto op = lookup(op_type);
    if (!op) fail(node, "operator {} is not supported; supported operators: {}", op_type, supported_ops_list());

    ir::Node n;
    n.name = node.name();
    n.op = *op;
    const int inputs = data_inputs(node, *op);
    std::vector<ir::Shape> in_shapes;
    for (int i = 0; i < inputs; ++i) {
      const std::string name = input_or_empty(node, i);
      if (name.empty()) {
        if (i < 2 || *op == OpKind::kBatchNorm) fail(node, "required input {} is missing", i);
        continue;  // optional bias / C absent
      }
      const ir::TensorId id = input_tensor(node, name);
      n.inputs.push_back(id);
      in_shapes.push_back(graph_.tensor(id).shape);
    }
    if (in_shapes.empty()) fail(node, "has no inputs");
    n.attrs = attributes(node, *op, in_shapes);

    const int outputs = *op == OpKind::kSplit ? node.output_size() : 1;
    if (*op != OpKind::kSplit) only_first_output(node);
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

  const ::onnx::GraphProto& graph_proto_;
  const ShapeMap& shapes_;
  const std::string& file_;
  int64_t opset_;
  std::unordered_map<std::string, const TensorProto*> initializers_;
  std::unordered_map<std::string, ir::TensorId> ids_;
  std::unordered_map<std::string, std::string> alias_;
  ir::Graph graph_;
};

}  // namespace

bool is_supported_op(const std::string& op_type) {
  return op_type == "Identity" || op_type == "Dropout" || lookup(op_type).has_value();
}

std::string supported_ops_list() {
  std::string out;
  for (const auto& [name, kind] : op_table()) {
    out += name;
    out += ", ";
  }
  out += "Identity, Dropout (and shape arithmetic on constants: Constant, Shape, Gather, Unsqueeze, "
         "Squeeze, Concat, Cast, Reshape, Slice, ... which are folded at import)";
  return out;
}

ir::Graph build_ir(const ::onnx::ModelProto& model, const ShapeMap& shapes, const std::string& file) {
  return Builder(model, shapes, file).build();
}

}  // namespace ios::onnx
