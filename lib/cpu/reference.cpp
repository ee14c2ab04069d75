#include "cpu/reference.h"

#include <fmt/format.h>

#include "core/error.h"
#include "cpu/kernels.h"

namespace ios::cpu {

void check_inputs(const ir::Graph& graph, const std::map<std::string, exec::HostTensor>& inputs) {
  for (ir::TensorId id : graph.inputs()) {
    const ir::Tensor& t = graph.tensor(id);
    const auto it = inputs.find(t.name);
    if (it == inputs.end()) user_error("input '{}' ({}) was not given", t.name, ir::to_string(t.shape));
    if (it->second.shape != t.shape || it->second.size() != ir::num_elements(t.shape)) {
      user_error("input '{}' has shape {} but the model expects {}", t.name, ir::to_string(it->second.shape),
                 ir::to_string(t.shape));
    }
  }
  for (const auto& [name, tensor] : inputs) {
    const auto id = graph.find_tensor(name);
    bool is_input = false;
    if (id) {
      for (ir::TensorId in : graph.inputs()) is_input = is_input || in == *id;
    }
    if (!is_input) {
      std::string names;
      for (ir::TensorId in : graph.inputs()) names += fmt::format("{}'{}'", names.empty() ? "" : ", ", graph.tensor(in).name);
      user_error("'{}' is not an input of the model (its inputs: {})", name, names);
    }
  }
}

std::map<std::string, exec::HostTensor> run_graph_reference(
    const ir::Graph& graph, const std::map<std::string, exec::HostTensor>& inputs, int threads) {
  check_inputs(graph, inputs);
  std::vector<std::vector<float>> values(graph.num_tensors());
  auto view_of = [&](ir::TensorId id) -> ConstView {
    const ir::Tensor& t = graph.tensor(id);
    if (t.is_constant()) return ConstView(t.data->data(), t.shape);
    const auto& v = values[static_cast<size_t>(id)];
    IOS_ASSERT(static_cast<int64_t>(v.size()) == ir::num_elements(t.shape), "tensor '{}' read before it is computed",
               t.name);
    return ConstView(v.data(), t.shape);
  };
  for (ir::TensorId id : graph.inputs()) {
    values[static_cast<size_t>(id)] = inputs.at(graph.tensor(id).name).data;
  }
  const KernelContext ctx{threads};
  for (ir::NodeId n : graph.topological_order()) {
    const ir::Node& node = graph.node(n);
    std::vector<ConstView> in;
    for (ir::TensorId id : node.inputs) in.push_back(view_of(id));
    std::vector<View> out;
    for (ir::TensorId id : node.outputs) {
      auto& v = values[static_cast<size_t>(id)];
      v.assign(static_cast<size_t>(ir::num_elements(graph.tensor(id).shape)), 0.0f);
      out.emplace_back(v.data(), graph.tensor(id).shape);
    }
    run_node(ctx, node, in, out);
  }
  std::map<std::string, exec::HostTensor> outputs;
  for (ir::TensorId id : graph.outputs()) {
    const ir::Tensor& t = graph.tensor(id);
    const ConstView v = view_of(id);
    outputs[t.name] = exec::HostTensor(t.shape, std::vector<float>(v.data, v.data + v.size()));
  }
  return outputs;
}

}  // namespace ios::cpu
