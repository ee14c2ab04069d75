// Rewriting IR 9-10 / opset 18-21 models into the forms libonnx 1.12 checks.
#include "onnx/opset_adapter.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/error.h"
#include "ir/precision.h"
#include "onnx/attributes.h"
#include "onnx/const_tensor.h"
#include "onnx/constant_folding.h"
#include "onnx/import_schemas.h"

namespace ios::onnx {
namespace {

using ::onnx::GraphProto;
using ::onnx::ModelProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;

// Reductions whose `axes` attribute became an input in opset 18 (ReduceSum's
// moved in opset 13, which libonnx 1.12 knows).
const std::unordered_set<std::string>& reductions_with_axes_input() {
  static const std::unordered_set<std::string> ops = {
      "ReduceMean", "ReduceMax",    "ReduceMin",       "ReduceProd",     "ReduceL1",
      "ReduceL2",   "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
  return ops;
}

bool default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

void remove_attribute(NodeProto& node, const std::string& name) {
  auto* attrs = node.mutable_attribute();
  for (int k = 0; k < attrs->size(); ++k) {
    if (attrs->Get(k).name() == name) {
      attrs->DeleteSubrange(k, 1);
      return;
    }
  }
}

// Drops input `index` and any empty optional inputs after it would leave.
void truncate_inputs(NodeProto& node, int index) {
  while (node.input_size() > index) node.mutable_input()->RemoveLast();
  while (node.input_size() > 0 && node.input(node.input_size() - 1).empty()) node.mutable_input()->RemoveLast();
}

class Adapter {
 public:
  Adapter(ModelProto& model, const std::string& file) : model_(model), graph_(*model.mutable_graph()), file_(file) {
    for (const TensorProto& t : graph_.initializer()) initializers_[t.name()] = &t;
    for (const NodeProto& node : graph_.node()) {
      if (node.op_type() == "Constant" && default_domain(node.domain()) && node.output_size() == 1) {
        constant_nodes_[node.output(0)] = &node;
      }
      for (const std::string& out : node.output()) names_.insert(out);
    }
    for (const auto& v : graph_.input()) names_.insert(v.name());
    for (const TensorProto& t : graph_.initializer()) names_.insert(t.name());
  }

  int rewrite_opset_forms() {
    // Split and Pad need their input's shape, known only after inference;
    // everything else is rewritten from the node alone.
    std::vector<int> need_shapes;
    std::vector<int> gelus;
    int rewritten = 0;
    for (int k = 0; k < graph_.node_size(); ++k) {
      NodeProto& node = *graph_.mutable_node(k);
      if (!default_domain(node.domain())) continue;
      const std::string& op = node.op_type();
      if (reductions_with_axes_input().count(op)) {
        rewritten += reduction_axes(node);
      } else if (op == "AveragePool") {
        rewritten += average_pool_dilations(node);
      } else if (op == "Cast") {
        rewritten += find_attribute(node, "saturate") ? (remove_attribute(node, "saturate"), 1) : 0;
      } else if (op == "Pad") {
        if (attr_string(node, "mode", "constant") == "wrap") {
          fail(node, "Pad mode 'wrap' (opset 19) is not supported; use constant, reflect or edge");
        }
        if (!input_or_empty(node, 3).empty()) need_shapes.push_back(k);
      } else if (op == "Split") {
        if (find_attribute(node, "num_outputs")) need_shapes.push_back(k);
      } else if (op == "Resize") {
        rewritten += resize_attributes(node);
      } else if (op == "Gelu" || op == "Mish") {
        gelus.push_back(k);
      }
    }
    if (!need_shapes.empty()) {
      infer_ranks(need_shapes);
      for (int k : need_shapes) {
        NodeProto& node = *graph_.mutable_node(k);
        rewritten += node.op_type() == "Pad" ? pad_axes(node) : split_num_outputs(node);
      }
    }
    if (!gelus.empty()) rewritten += expand_gelus(gelus);
    for (auto& imp : *model_.mutable_opset_import()) {
      if (default_domain(imp.domain())) imp.set_version(std::min<int64_t>(imp.version(), kCheckerMaxOpset));
    }
    return rewritten;
  }

 private:
  template <typename... Args>
  [[noreturn]] void fail(const NodeProto& node, fmt::format_string<Args...> what, Args&&... args) const {
    user_error("{}: node {}: {}", file_, node_label(node), fmt::format(what, std::forward<Args>(args)...));
  }

  // The value of an initializer or a Constant node's output; nullopt for a
  // tensor computed at run time.
  std::optional<ConstTensor> constant(const std::string& name) const {
    if (auto it = initializers_.find(name); it != initializers_.end()) return decode_tensor(*it->second, file_);
    auto it = constant_nodes_.find(name);
    if (it == constant_nodes_.end()) return std::nullopt;
    const NodeProto& node = *it->second;
    if (const auto* value = find_attribute(node, "value"); value && value->has_t()) {
      return decode_tensor(value->t(), file_);
    }
    if (auto ints = attr_ints(node, "value_ints")) {
      return ConstTensor::of_ints(*ints, ir::Shape{static_cast<int64_t>(ints->size())});
    }
    return std::nullopt;
  }

  std::vector<int64_t> constant_ints(const NodeProto& node, int index, const char* what) const {
    const std::string name = input_or_empty(node, index);
    if (name.empty()) fail(node, "has no {} input (input {})", what, index);
    std::optional<ConstTensor> value = constant(name);
    if (!value) {
      fail(node, "its {} input '{}' is computed at run time; ios needs it constant to read the opset-{} "
                 "form (re-export with constant {}, or with opset 17)", what, name, default_opset(model_), what);
    }
    return value->ints();
  }

  int reduction_axes(NodeProto& node) {
    const bool noop_if_empty = attr_int(node, "noop_with_empty_axes", 0) != 0;
    int changed = find_attribute(node, "noop_with_empty_axes") ? 1 : 0;
    remove_attribute(node, "noop_with_empty_axes");
    if (input_or_empty(node, 1).empty()) {
      // No axes: opset 17 reduces every axis, as opset 18 does unless asked not to.
      if (noop_if_empty) fail(node, "noop_with_empty_axes = 1 without axes is not supported");
      if (node.input_size() > 1) truncate_inputs(node, 1), changed = 1;
      return changed;
    }
    const std::vector<int64_t> axes = constant_ints(node, 1, "axes");
    if (axes.empty() && noop_if_empty) fail(node, "noop_with_empty_axes = 1 with empty axes is not supported");
    truncate_inputs(node, 1);
    if (!axes.empty()) {
      auto* attr = node.add_attribute();
      attr->set_name("axes");
      attr->set_type(::onnx::AttributeProto::INTS);
      for (int64_t a : axes) attr->add_ints(a);
    }
    return 1;
  }

  int average_pool_dilations(NodeProto& node) {
    auto dilations = attr_ints(node, "dilations");
    if (!dilations) return 0;
    if (std::any_of(dilations->begin(), dilations->end(), [](int64_t d) { return d != 1; })) {
      fail(node, "AveragePool with dilations (opset 19) is not supported; only dilation 1");
    }
    remove_attribute(node, "dilations");
    return 1;
  }

  // Resize-18/19 attributes: their default values are the opset-17 behaviour
  // and are dropped; anything else is refused.
  int resize_attributes(NodeProto& node) {
    int changed = 0;
    if (find_attribute(node, "antialias")) {
      if (attr_int(node, "antialias", 0) != 0) fail(node, "Resize antialias = 1 (opset 18) is not supported; only 0");
      remove_attribute(node, "antialias");
      changed = 1;
    }
    if (find_attribute(node, "keep_aspect_ratio_policy")) {
      const std::string policy = attr_string(node, "keep_aspect_ratio_policy", "stretch");
      if (policy != "stretch") {
        fail(node, "Resize keep_aspect_ratio_policy '{}' (opset 18) is not supported; only stretch", policy);
      }
      remove_attribute(node, "keep_aspect_ratio_policy");
      changed = 1;
    }
    if (find_attribute(node, "axes")) {
      fail(node, "Resize with the axes attribute (opset 18) is not supported; give scales or sizes for every axis");
    }
    if (attr_string(node, "coordinate_transformation_mode", "half_pixel") == "half_pixel_symmetric") {
      fail(node, "Resize coordinate_transformation_mode 'half_pixel_symmetric' (opset 19) is not supported; use "
                 "half_pixel, pytorch_half_pixel, align_corners or asymmetric");
    }
    return changed;
  }

  // Ranks and dimensions come from a lenient run of ONNX's inference on a
  // copy in which the forms still pending are cut back to what opset 17
  // accepts (Pad without axes, Split without num_outputs): the copy passes
  // ONNX's checker first, as every model does before inference (inference
  // trusts the structure the checker verifies: a Split without outputs
  // divides by zero). Wrong pads lengths only make it give up on those
  // nodes' outputs.
  void infer_ranks(const std::vector<int>& pending) {
    ModelProto copy = model_;
    copy.set_ir_version(std::min<int64_t>(copy.ir_version(), kCheckerMaxIrVersion));
    for (auto& imp : *copy.mutable_opset_import()) {
      if (default_domain(imp.domain())) imp.set_version(std::min<int64_t>(imp.version(), kCheckerMaxOpset));
    }
    for (int k : pending) {
      NodeProto& node = *copy.mutable_graph()->mutable_node(k);
      if (node.op_type() == "Pad") {
        truncate_inputs(node, 3);
      } else {
        remove_attribute(node, "num_outputs");
      }
    }
    try {
      ::onnx::checker::check_model(copy);
    } catch (const std::exception& e) {
      const std::string what = e.what();
      user_error("{}: the ONNX checker rejected the model: {}", file_, what.substr(0, what.find('\n')));
    }
    try {
      const ::onnx::ShapeInferenceOptions options(/*check_type=*/false, /*error_mode=*/0,
                                                  /*enable_data_propagation=*/false);
      const ImportSchemas schemas;  // ONNX's own Einsum inference crashes on some valid equations
      ::onnx::shape_inference::InferShapes(copy, &schemas, options);
    } catch (const std::exception&) {
      // Lenient mode: what it could not infer stays unknown, reported below per node.
    }
    auto add = [&](const ::onnx::ValueInfoProto& info) {
      if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape()) return;
      std::vector<int64_t> dims;
      for (const auto& d : info.type().tensor_type().shape().dim()) dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
      known_[info.name()] = std::move(dims);
    };
    for (const auto& v : copy.graph().input()) add(v);
    for (const auto& v : copy.graph().value_info()) add(v);
    for (const auto& v : copy.graph().output()) add(v);
    for (const TensorProto& t : graph_.initializer()) known_[t.name()] = {t.dims().begin(), t.dims().end()};
  }

  const std::vector<int64_t>& input_dims(const NodeProto& node, const char* why) const {
    if (input_or_empty(node, 0).empty()) fail(node, "has no data input (input 0)");
    auto it = known_.find(node.input(0));
    if (it == known_.end()) {
      fail(node, "the rank of its input '{}' is unknown before shape inference, and {}; give the "
                 "model's inputs static shapes or re-export with opset 17", node.input(0), why);
    }
    return it->second;
  }

  int pad_axes(NodeProto& node) {
    const auto rank = static_cast<int64_t>(input_dims(node, "the opset-18 Pad form (axes input) needs it").size());
    const std::vector<int64_t> axes = constant_ints(node, 3, "axes");
    const std::vector<int64_t> pads = constant_ints(node, 1, "pads");
    if (pads.size() != 2 * axes.size()) {
      fail(node, "has {} pads for {} axes; the pads input must hold a begin and an end per axis", pads.size(), axes.size());
    }
    std::vector<int64_t> full(static_cast<size_t>(2 * rank), 0);
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (size_t k = 0; k < axes.size(); ++k) {
      const int64_t axis = axes[k] < 0 ? axes[k] + rank : axes[k];
      if (axis < 0 || axis >= rank) fail(node, "axis {} is out of range for rank {}", axes[k], rank);
      if (seen[static_cast<size_t>(axis)]) fail(node, "axis {} is listed twice", axes[k]);
      seen[static_cast<size_t>(axis)] = true;
      full[static_cast<size_t>(axis)] = pads[k];
      full[static_cast<size_t>(axis + rank)] = pads[k + axes.size()];
    }
    node.set_input(1, add_ints_initializer(node, "pads", full));
    truncate_inputs(node, 3);
    return 1;
  }

  int split_num_outputs(NodeProto& node) {
    const int64_t parts = attr_int(node, "num_outputs", 0);
    if (parts < 1) fail(node, "num_outputs is {}; it must be at least 1", parts);
    if (parts != node.output_size()) {
      fail(node, "num_outputs is {} but the node has {} outputs", parts, node.output_size());
    }
    if (!input_or_empty(node, 1).empty()) fail(node, "has both a split input and num_outputs; ONNX allows one");
    const std::vector<int64_t>& dims = input_dims(node, "the opset-18 Split form (num_outputs) needs it");
    const auto rank = static_cast<int64_t>(dims.size());
    int64_t axis = attr_int(node, "axis", 0);
    if (axis < -rank || axis >= rank) fail(node, "axis {} is out of range for rank {}", axis, rank);
    if (axis < 0) axis += rank;
    const int64_t length = dims[static_cast<size_t>(axis)];
    if (length < 0) {
      fail(node, "the length of axis {} of its input '{}' is unknown before shape inference; give the "
                 "model's inputs static shapes", axis, node.input(0));
    }
    // Opset 18: parts of ceil(length / num_outputs), the last one smaller.
    const int64_t chunk = (length + parts - 1) / parts;
    if (chunk * (parts - 1) >= length) {
      fail(node, "cannot split length {} into {} non-empty parts", length, parts);
    }
    std::vector<int64_t> sizes(static_cast<size_t>(parts), chunk);
    sizes.back() = length - chunk * (parts - 1);
    remove_attribute(node, "num_outputs");
    while (node.input_size() < 2) node.add_input("");
    node.set_input(1, add_ints_initializer(node, "split", sizes));
    return 1;
  }

  std::string add_ints_initializer(const NodeProto& node, const char* what, const std::vector<int64_t>& values) {
    return add_initializer(node, what, ConstTensor::of_ints(values, ir::Shape{static_cast<int64_t>(values.size())}));
  }

  std::string add_initializer(const NodeProto& node, const char* what, const ConstTensor& value) {
    const std::string name = fresh_name(node, what);
    TensorProto* t = graph_.add_initializer();
    t->set_name(name);
    encode_tensor(value, t);
    return name;
  }

  std::string fresh_name(const NodeProto& node, const char* what) {
    const std::string& label = !node.name().empty() ? node.name()
                               : node.output_size() > 0 ? node.output(0)
                                                        : node.op_type();
    std::string base = label + "/" + what;
    std::string name = base;
    for (int n = 1; names_.count(name); ++n) name = base + "_" + std::to_string(n);
    names_.insert(name);
    return name;
  }

  // Gelu (opset 20) has no opset-17 schema, so the checker and shape
  // inference cannot read it: each becomes the element-wise chain PyTorch
  // exports for nn.GELU at opset 17, which ir::fuse_gelu turns back into one
  // Gelu node after import. The chain's nodes keep the Gelu node's name, so
  // messages about them name it.
  int expand_gelus(const std::vector<int>& gelus) {
    std::vector<NodeProto> nodes(graph_.node().begin(), graph_.node().end());
    graph_.clear_node();
    size_t next = 0;
    for (int k = 0; k < static_cast<int>(nodes.size()); ++k) {
      if (next < gelus.size() && gelus[next] == k) {
        ++next;
        const NodeProto& node = nodes[static_cast<size_t>(k)];
        for (NodeProto& n : node.op_type() == "Mish" ? mish_chain(node) : gelu_chain(node)) {
          *graph_.add_node() = std::move(n);
        }
      } else {
        *graph_.add_node() = std::move(nodes[static_cast<size_t>(k)]);
      }
    }
    return static_cast<int>(gelus.size());
  }

  // Mish (opset 18) likewise: x * tanh(softplus(x)), PyTorch's export of
  // nn.Mish before opset 18, which ir::fuse_mish makes one node again.
  std::vector<NodeProto> mish_chain(const NodeProto& mish) {
    if (mish.input_size() != 1 || mish.output_size() != 1 || mish.input(0).empty()) {
      fail(mish, "Mish needs one input and one output");
    }
    std::vector<NodeProto> chain;
    auto add = [&](const char* op, std::vector<std::string> in, const std::string& out) {
      NodeProto n;
      n.set_name(mish.name());
      n.set_op_type(op);
      for (const std::string& i : in) n.add_input(i);
      n.add_output(out);
      chain.push_back(std::move(n));
    };
    const std::string softplus = fresh_name(mish, "Softplus"), tanh = fresh_name(mish, "Tanh");
    add("Softplus", {mish.input(0)}, softplus);
    add("Tanh", {softplus}, tanh);
    add("Mul", {mish.input(0), tanh}, mish.output(0));
    return chain;
  }

  std::vector<NodeProto> gelu_chain(const NodeProto& gelu) {
    const std::string approximate = attr_string(gelu, "approximate", "none");
    if (approximate != "none" && approximate != "tanh") {
      fail(gelu, "Gelu approximate '{}' is not supported; use 'none' or 'tanh'", approximate);
    }
    if (gelu.input_size() != 1 || gelu.output_size() != 1) fail(gelu, "Gelu needs one input and one output");
    const std::string x = gelu.input(0);
    std::vector<NodeProto> chain;
    // Appends op(a, b) and returns its output (the Gelu's output for the last one).
    auto add = [&](const char* op, const std::string& a, const std::string& b, bool last = false) {
      NodeProto n;
      n.set_name(gelu.name());
      n.set_op_type(op);
      n.add_input(a);
      if (!b.empty()) n.add_input(b);
      n.add_output(last ? gelu.output(0) : fresh_name(gelu, op));
      chain.push_back(std::move(n));
      return chain.back().output(0);
    };
    auto scalar = [&](const char* what, double v) {
      return add_initializer(gelu, what, ConstTensor::of_floats({v}, ir::Shape{}, TensorProto::FLOAT));
    };
    std::string core;
    if (approximate == "none") {
      core = add("Erf", add("Div", x, scalar("sqrt2", std::sqrt(2.0))), "");
    } else {
      const std::string cube = add("Mul", x, add("Mul", x, x));
      const std::string inner = add("Add", x, add("Mul", scalar("cubic_coefficient", 0.044715), cube));
      core = add("Tanh", add("Mul", scalar("sqrt_2_over_pi", std::sqrt(2.0 / std::acos(-1.0))), inner), "");
    }
    const std::string plus_one = add("Add", core, scalar("one", 1.0));
    add("Mul", add("Mul", x, plus_one), scalar("half", 0.5), true);
    return chain;
  }

  ModelProto& model_;
  GraphProto& graph_;
  const std::string& file_;
  std::unordered_map<std::string, const TensorProto*> initializers_;
  std::unordered_map<std::string, const NodeProto*> constant_nodes_;
  std::unordered_set<std::string> names_;
  std::unordered_map<std::string, std::vector<int64_t>> known_;
};

// Element types after bfloat16 (16): float8 (IR 9) and 4-bit integers (IR 10).
constexpr int32_t kLastIr8ElementType = TensorProto::BFLOAT16;

void check_element_types(const GraphProto& graph, const std::string& file) {
  auto check = [&](const ::onnx::ValueInfoProto& info) {
    if (info.type().has_tensor_type() && info.type().tensor_type().elem_type() > kLastIr8ElementType) {
      user_error(
          "{}: tensor '{}' has element type {} (float8 or int4, IR 9-10); ios runs {} models only",
          file, info.name(), info.type().tensor_type().elem_type(), ir::element_type_names_text());
    }
  };
  for (const auto& v : graph.input()) check(v);
  for (const auto& v : graph.value_info()) check(v);
  for (const auto& v : graph.output()) check(v);
  for (const NodeProto& node : graph.node()) {
    if ((node.op_type() == "Cast" || node.op_type() == "CastLike") && attr_int(node, "to", 1) > kLastIr8ElementType) {
      user_error(
          "{}: node {}: casts to element type {} (float8 or int4, IR 9-10); ios runs {} models only",
          file, node_label(node), attr_int(node, "to", 1), ir::element_type_names_text());
    }
  }
}

// PRelu before opset 7 applies a slope of C values per channel (axis 1);
// from opset 7 the slope broadcasts by numpy's rule, which would apply it
// along the last axis, and the version converter leaves it as it is. Such a
// constant slope becomes [C, 1, ...] here, an initializer of its own.
void per_channel_prelu_slopes(ModelProto& model, const std::string& file) {
  GraphProto& graph = *model.mutable_graph();
  std::unordered_map<std::string, int64_t> ranks;
  auto add_rank = [&](const ::onnx::ValueInfoProto& v) {
    if (v.type().has_tensor_type() && v.type().tensor_type().has_shape()) {
      ranks[v.name()] = v.type().tensor_type().shape().dim_size();
    }
  };
  for (const auto& v : graph.input()) add_rank(v);
  for (const auto& v : graph.value_info()) add_rank(v);
  std::unordered_map<std::string, int> initializers;
  for (int k = 0; k < graph.initializer_size(); ++k) initializers[graph.initializer(k).name()] = k;
  for (NodeProto& node : *graph.mutable_node()) {
    if (node.op_type() != "PRelu" || !default_domain(node.domain()) || node.input_size() != 2) continue;
    const auto init = initializers.find(node.input(1));
    if (init == initializers.end()) {
      user_error("{}: node {}: the slope of an opset-{} PRelu is computed at run time; ios needs it constant to read "
                 "its per-channel form (re-export with opset 7 or later)", file, node_label(node), default_opset(model));
    }
    const TensorProto slope = graph.initializer(init->second);
    const auto rank = ranks.find(node.input(0));
    if (slope.dims_size() != 1 || slope.dims(0) == 1 || rank == ranks.end() || rank->second < 3) continue;
    TensorProto channels = slope;
    channels.set_name(node.input(1) + "/per_channel");
    for (int64_t d = 2; d < rank->second; ++d) channels.add_dims(1);
    // Before IR 4 every initializer is a graph input too.
    if (model.ir_version() < 4) {
      auto* input = graph.add_input();
      input->set_name(channels.name());
      auto* type = input->mutable_type()->mutable_tensor_type();
      type->set_elem_type(channels.data_type());
      for (int64_t d : channels.dims()) type->mutable_shape()->add_dim()->set_dim_value(d);
    }
    node.set_input(1, channels.name());
    *graph.add_initializer() = std::move(channels);
  }
}

// Opsets 1-6 to opset 9 through ONNX's version converter (opset_adapter.h).
// The converter trusts its input (it asserts on structure the checker
// verifies), so the model passes libonnx's checker at its own opset first;
// what it cannot convert is a UserError naming the file.
void convert_to_min_opset(ModelProto& model, int64_t opset, const std::string& file) {
  auto converter_failed = [&](const std::exception& e) {
    const std::string what = e.what();
    user_error("{}: opset {} is older than ios reads (from {}), and ONNX's version converter could not convert "
               "it: {}; re-export the model with opset {} or later", file, opset, kMinOpset,
               what.substr(0, what.find('\n')), kMinOpset);
  };
  try {
    ::onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    user_error("{}: the ONNX checker rejected the model: {}", file, what.substr(0, what.find('\n')));
  }
  // The checker lets a graph output name a value nothing defines; the
  // converter's graph import then writes through a null pointer.
  std::unordered_set<std::string> defined;
  for (const auto& v : model.graph().input()) defined.insert(v.name());
  for (const TensorProto& t : model.graph().initializer()) defined.insert(t.name());
  for (const NodeProto& node : model.graph().node()) {
    defined.insert(node.output().begin(), node.output().end());
  }
  for (const auto& v : model.graph().output()) {
    if (!defined.count(v.name())) {
      user_error(
          "{}: graph output '{}' is not produced by any node; ios needs every output "
          "computed by the graph",
          file, v.name());
    }
  }
  // The broadcast adapters read their operands' shapes from the graph's
  // value_info; a lenient inference leaves unknown what it cannot infer.
  ModelProto inferred = model;
  try {
    const ::onnx::ShapeInferenceOptions options(/*check_type=*/false, /*error_mode=*/0,
                                                /*enable_data_propagation=*/false);
    const ImportSchemas schemas;  // ONNX's own Conv inference crashes on some ranks
    ::onnx::shape_inference::InferShapes(inferred, &schemas, options);
  } catch (const std::exception& e) {
    converter_failed(e);
  }
  per_channel_prelu_slopes(inferred, file);
  try {
    model = ::onnx::version_conversion::ConvertVersion(inferred, static_cast<int>(kConvertedOpset));
  } catch (const std::exception& e) {
    converter_failed(e);
  }
}

}  // namespace

AdaptedVersions adapt_to_checker_versions(ModelProto& model, const std::string& file) {
  AdaptedVersions result;
  result.ir_version = model.ir_version();
  result.opset = default_opset(model);
  if (result.ir_version > kMaxIrVersion) {
    user_error("{}: ONNX IR version {} is newer than ios reads (up to {}); re-export with an older "
               "exporter or convert the model (onnx.version_converter)", file, result.ir_version, kMaxIrVersion);
  }
  if (result.opset > kMaxOpset) {
    user_error("{}: opset {} is newer than ios reads (up to {}); re-export with opset_version={} or lower",
               file, result.opset, kMaxOpset, kMaxOpset);
  }
  if (result.opset < kMinOpset) {
    convert_to_min_opset(model, result.opset, file);
    result.converted = true;
  }
  if (result.opset > kCheckerMaxOpset) {
    // Initializers added for rewritten forms must not precede the checks of
    // the file's own tensors (done before this) or collide with its names.
    result.nodes_rewritten = Adapter(model, file).rewrite_opset_forms();
  }
  // IR 9 and 10 add element types (float8, int4) that the checks of stored
  // tensors and graph inputs already refuse, and function overloads, which
  // lib/onnx never reads; the rest of the file is IR 8.
  if (result.ir_version > kCheckerMaxIrVersion) {
    check_element_types(model.graph(), file);
    model.set_ir_version(kCheckerMaxIrVersion);
  }
  return result;
}

}  // namespace ios::onnx
