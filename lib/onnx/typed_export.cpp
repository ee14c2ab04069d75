#include "onnx/typed_export.h"

#include <fmt/format.h>

#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "core/error.h"
#include "core/file_io.h"
#include "core/output_files.h"
#include "ir/op_info.h"
#include "onnx/const_tensor.h"
#include "onnx/model_file.h"

namespace ios::onnx {
namespace {

using ::onnx::NodeProto;
using ::onnx::TensorProto;

int32_t onnx_type(ir::ElementType type) { return ir::info(type).onnx_type; }

// A float32 tensor's values in `type`, as raw little-endian bit patterns of the type.
TensorProto narrowed(const TensorProto& t, ir::ElementType type, const std::string& name,
                     const std::string& file) {
  const std::vector<float> values = decode_float_weights(t, file);
  TensorProto out;
  out.set_name(name);
  *out.mutable_dims() = t.dims();
  out.set_data_type(onnx_type(type));
  const auto size = static_cast<size_t>(ir::bytes_of(type));
  std::string raw(values.size() * size, '\0');
  for (size_t k = 0; k < values.size(); ++k) ir::store_element(raw.data() + size * k, values[k], type);
  out.set_raw_data(std::move(raw));
  return out;
}

// The inputs that keep their own type whatever the node computes in.
bool keeps_own_type(const NodeProto& node, int input) {
  const std::string& op = node.op_type();
  return (op == "Resize" && input >= 1) || (op == "Upsample" && input >= 1);
}

class Writer {
 public:
  Writer(const std::string& source, const ir::Graph& graph)
      : source_(source), model_(read_model_proto(source)) {
    for (const ir::Tensor& t : graph.tensors()) {
      if (!t.is_constant()) ir_types_[t.name] = t.type;
    }
  }

  ::onnx::ModelProto take() {
    auto& graph = *model_.mutable_graph();
    for (const TensorProto& t : graph.initializer()) initializers_[t.name()] = &t;
    for (const auto& in : graph.input()) {
      if (!initializers_.count(in.name()))
        value_types_[in.name()] = ir_type(in.name()).value_or(ir::ElementType::kFloat32);
    }
    find_chain_types(graph);
    google::protobuf::RepeatedPtrField<NodeProto> nodes;
    for (const NodeProto& original : graph.node()) write_node(original, nodes);
    graph.mutable_node()->Swap(&nodes);
    // Float32 weights that every reader now reads narrowed are dropped.
    std::set<std::string> read;
    for (const NodeProto& n : graph.node()) read.insert(n.input().begin(), n.input().end());
    for (const auto& o : graph.output()) read.insert(o.name());
    google::protobuf::RepeatedPtrField<TensorProto> kept;
    std::set<std::string> dropped;
    for (TensorProto& t : *graph.mutable_initializer()) {
      if (read.count(t.name()))
        *kept.Add() = std::move(t);
      else
        dropped.insert(t.name());
    }
    graph.mutable_initializer()->Swap(&kept);
    initializers_.clear();
    for (auto& [key, t] : new_initializers_) *graph.add_initializer() = std::move(t);
    google::protobuf::RepeatedPtrField<::onnx::ValueInfoProto>
        inputs;  // IR < 4 lists weights as inputs too
    for (auto& in : *graph.mutable_input()) {
      if (!dropped.count(in.name())) *inputs.Add() = std::move(in);
    }
    graph.mutable_input()->Swap(&inputs);
    // Declared types: inputs and outputs as the IR has them; intermediate
    // value_info is dropped (ONNX infers it).
    graph.clear_value_info();
    for (auto* list : {graph.mutable_input(), graph.mutable_output()}) {
      for (auto& v : *list) {
        if (!v.type().has_tensor_type()) continue;
        if (auto it = value_types_.find(v.name()); it != value_types_.end()) {
          v.mutable_type()->mutable_tensor_type()->set_elem_type(onnx_type(it->second));
        }
      }
    }
    model_.set_producer_name(std::string(kOnnxProducer));
    return std::move(model_);
  }

 private:
  std::optional<ir::ElementType> ir_type(const std::string& name) const {
    auto it = ir_types_.find(name);
    if (it == ir_types_.end()) return std::nullopt;
    return it->second;
  }

  // The type node `n` computes in: its IR output's (the producer's tensor
  // "<output>/half" where the IR cast a graph output back to float32); an
  // Identity or Dropout its input's; every other node (folded, or inside a
  // chain ios fused) float32.
  ir::ElementType compute_type(const NodeProto& n) const {
    if ((n.op_type() == "Identity" || n.op_type() == "Dropout") && n.input_size() > 0) {
      auto it = value_types_.find(n.input(0));
      if (it != value_types_.end()) return it->second;
    }
    if (n.output_size() > 0) {
      if (auto renamed = ir_type(n.output(0) + "/half")) return *renamed;
      if (auto t = ir_type(n.output(0))) return *t;
    }
    return ir::ElementType::kFloat32;
  }

  // The type of the fused IR node each unprocessed node (a link of a chain
  // ios fused: a GELU's Div, Erf and Add) belongs to: the compute type of
  // the processed nodes its outputs reach through unprocessed ones, where
  // they agree. Reverse order, so linear in the graph.
  void find_chain_types(const ::onnx::GraphProto& graph) {
    std::unordered_map<std::string, std::vector<int>> readers;
    for (int k = 0; k < graph.node_size(); ++k) {
      for (const std::string& in : graph.node(k).input()) readers[in].push_back(k);
    }
    std::vector<std::optional<ir::ElementType>> type(static_cast<size_t>(graph.node_size()));
    std::vector<char> mixed(static_cast<size_t>(graph.node_size()), 0);
    for (int k = graph.node_size() - 1; k >= 0; --k) {
      const NodeProto& n = graph.node(k);
      if (processed(n)) continue;
      std::optional<ir::ElementType> found;
      bool conflict = false;
      for (const std::string& out : n.output()) {
        auto it = readers.find(out);
        if (it == readers.end()) continue;
        for (int r : it->second) {
          const NodeProto& reader = graph.node(r);
          std::optional<ir::ElementType> t;
          if (processed(reader)) {
            t = ir_type(reader.output(0) + "/half") ? ir_type(reader.output(0) + "/half")
                                                    : ir_type(reader.output(0));
          } else if (mixed[static_cast<size_t>(r)]) {
            conflict = true;
          } else {
            t = type[static_cast<size_t>(r)];
          }
          if (!t) continue;
          if (found && *found != *t) conflict = true;
          found = t;
        }
      }
      if (conflict) {
        mixed[static_cast<size_t>(k)] = 1;
      } else if (found) {
        type[static_cast<size_t>(k)] = found;
        if (n.output_size() > 0) chain_types_[n.output(0)] = *found;
      }
    }
  }

  // ios rounds an activation to the 16-bit type before a fused node that
  // computes in it reads it (the IR's "<tensor>/to_half" Cast); the links
  // of that node's chain, written as float32 ONNX nodes, must read it
  // rounded too (a LayerNorm kept float32 feeding a GELU).
  bool reads_rounded(const NodeProto& n, const std::string& input) const {
    if (n.output_size() == 0 || n.op_type() == "Shape" || n.op_type() == "Size") return false;
    auto chain = chain_types_.find(n.output(0));
    if (chain == chain_types_.end() || !ir::is_half(chain->second)) return false;
    auto known = value_types_.find(input);
    if (known == value_types_.end() || ir::is_half(known->second)) return false;
    return ir_type(input + "/to_half") == chain->second;
  }

  bool processed(const NodeProto& n) const {
    return n.output_size() > 0 && (ir_type(n.output(0)) || ir_type(n.output(0) + "/half") ||
                                   n.op_type() == "Identity" || n.op_type() == "Dropout");
  }

  void write_node(const NodeProto& original, google::protobuf::RepeatedPtrField<NodeProto>& out) {
    NodeProto node = original;
    // An Identity of a weight (exporters share equal biases so) is the
    // weight to its readers.
    if ((node.op_type() == "Identity" || node.op_type() == "Dropout") && node.input_size() > 0 &&
        node.output_size() > 0 && initializers_.count(node.input(0))) {
      initializers_[node.output(0)] = initializers_.at(node.input(0));
      *out.Add() = std::move(node);
      return;
    }
    const ir::ElementType compute = compute_type(node);
    const bool ours = processed(node);
    const ir::OpInfo* info = ir::find_onnx_op(node.op_type());
    const int data_inputs = info && info->data_inputs ? info->data_inputs(node.input_size()) : 1;
    for (int i = 0; i < node.input_size(); ++i) {
      const std::string& name = node.input(i);
      if (name.empty() || keeps_own_type(node, i)) continue;
      if (auto it = value_types_.find(name); it != value_types_.end()) {
        // A value whose type is known: an IR tensor or a pass-through of one.
        if (!ours && reads_rounded(node, name)) {
          const ir::ElementType half = chain_types_.at(node.output(0));
          const std::string rounded = cast(name, it->second, half, out);
          node.set_input(i, cast(rounded, half, ir::ElementType::kFloat32, out));
        } else if (it->second != compute) {
          node.set_input(i, cast(name, it->second, compute, out));
        }
        continue;
      }
      if (!ours || compute == ir::ElementType::kFloat32) continue;
      if (auto init = initializers_.find(name); init != initializers_.end()) {
        // A float32 weight or attribute input of the node's type (Clip's bounds).
        if (init->second->data_type() == TensorProto::FLOAT) {
          node.set_input(i, narrowed_initializer(*init->second, compute));
        }
        continue;
      }
      auto constant = constant_types_.find(name);
      const bool float_constant =
          constant != constant_types_.end() && constant->second == TensorProto::FLOAT;
      // A float32 Constant, or a value from a chain ios fused (the node's
      // data inputs only: the others are shapes and axes): cast down.
      if (float_constant || (constant == constant_types_.end() && i < data_inputs)) {
        node.set_input(i, cast(name, ir::ElementType::kFloat32, compute, out));
      }
    }
    if (node.op_type() == "Constant" && node.output_size() == 1) {
      for (const auto& attr : node.attribute()) {
        if (attr.has_t()) constant_types_[node.output(0)] = attr.t().data_type();
      }
    }
    if (!ours) {
      *out.Add() = std::move(node);
      return;
    }
    // Outputs: a graph output the IR casts back to float32 is written by
    // this node as "<output>/half" and a Cast.
    for (int o = 0; o < node.output_size(); ++o) {
      const std::string name = node.output(o);
      if (name.empty()) continue;
      if (o == 0 && ir_type(name + "/half") && ir_type(name) && *ir_type(name) != compute) {
        node.set_output(o, name + "/half");
        value_types_[name + "/half"] = compute;
        *out.Add() = std::move(node);
        add_cast(name + "/half", name, *ir_type(name), out);
        value_types_[name] = *ir_type(name);
        return;
      }
      value_types_[name] = compute;
    }
    *out.Add() = std::move(node);
  }

  std::string cast(const std::string& from, ir::ElementType have, ir::ElementType want,
                   google::protobuf::RepeatedPtrField<NodeProto>& out) {
    (void)have;
    const std::string name = fmt::format("{}/to_{}", from, ir::is_half(want) ? "half" : "float32");
    if (casts_.insert(name).second) add_cast(from, name, want, out);
    return name;
  }

  void add_cast(const std::string& from, const std::string& to, ir::ElementType type,
                google::protobuf::RepeatedPtrField<NodeProto>& out) {
    NodeProto& c = *out.Add();
    c.set_op_type("Cast");
    c.set_name(to);
    c.add_input(from);
    c.add_output(to);
    auto& attr = *c.add_attribute();
    attr.set_name("to");
    attr.set_type(::onnx::AttributeProto::INT);
    attr.set_i(onnx_type(type));
    value_types_[to] = type;
  }

  std::string narrowed_initializer(const TensorProto& t, ir::ElementType type) {
    const std::string name = fmt::format("{}/{}", t.name(), ir::is_half(type) ? "half" : "float32");
    if (!new_initializers_.count(name)) new_initializers_[name] = narrowed(t, type, name, source_);
    return name;
  }

  std::string source_;
  ::onnx::ModelProto model_;
  std::unordered_map<std::string, ir::ElementType> ir_types_;     // the IR's activations
  std::unordered_map<std::string, ir::ElementType> value_types_;  // values written so far, by type
  std::unordered_map<std::string, const TensorProto*> initializers_;
  std::map<std::string, TensorProto> new_initializers_;
  std::set<std::string> casts_;
  // Unprocessed nodes' first outputs: the type of the fused node they are a link of.
  std::unordered_map<std::string, ir::ElementType> chain_types_;
  std::unordered_map<std::string, int32_t>
      constant_types_;  // Constant nodes' outputs, by data type
};

}  // namespace

void write_typed_model(const std::string& source, const ir::Graph& graph, const std::string& out) {
  ::onnx::ModelProto model = Writer(source, graph).take();
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    user_error("{}: the converted model does not serialize", out);
  create_parent_folder(out);
  write_file_atomically(out, bytes);
}

}  // namespace ios::onnx
