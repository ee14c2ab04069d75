// The lowering driver (lowering.h): one Launch per plan kernel, values at the
// storage plan's regions, constants, and each node lowered through the
// kernel table (lowering_table.cpp) by its operator's op_<name>.cpp.
#include "cuda/lowering.h"

#include <algorithm>

#include "core/error.h"

namespace ios::cuda {

using ir::NodeId;
using ir::TensorId;

Lowerer::Lowerer(const sched::UnitGraph& units, const exec::ExecPlan& plan,
                 const LowerOptions& options)
    : ug_(units),
      g_(*units.ir()),
      plan_(plan),
      options_(options),
      storage_(units, plan, exec::StoragePlanOptions{options.partial}) {}

Program Lowerer::run() {
  value_of_.assign(g_.num_tensors(), -1);
  // The storage plan's storages are the program's first buffers, same index.
  for (const exec::Storage& s : storage_.storages())
    p_.buffers.push_back({s.name, s.elements, s.type, s.persistent});
  for (TensorId t : storage_.inputs()) p_.inputs.emplace_back(g_.tensor(t).name, value_for(t));
  p_.concat_inputs_zero_copy = storage_.zero_copy_concat_inputs();
  p_.num_streams = plan_.num_streams;
  p_.num_events = plan_.num_events;
  p_.steps = plan_.steps;
  p_.launches.resize(plan_.kernels.size());
  for (const exec::Step& step : plan_.steps) {
    if (step.kind == exec::Step::Kind::kLaunch) {
      p_.launches.at(static_cast<size_t>(step.kernel)).stream = step.stream;
    }
  }
  for (size_t k = 0; k < plan_.kernels.size(); ++k) {
    const exec::Kernel& kernel = plan_.kernels[k];
    Launch& launch = p_.launches[k];
    launch.units = kernel.units;
    launch.merged = kernel.merged;
    for (size_t i = 0; i < kernel.units.size(); ++i) {
      launch.name += (i ? "+" : "") + ug_.unit(kernel.units[i]).id;
    }
    if (kernel.merged) {
      const int index = static_cast<int>(k);
      if (storage_.merge_spec(index).kind == sched::MergeKind::kMatMul) {
        lower_merged_product(*this, launch, index);
      } else {
        lower_merged_conv(*this, launch, index);
      }
    } else {
      IOS_ASSERT(kernel.units.size() == 1, "launch {} has {} units but is not a merge", k,
                 kernel.units.size());
      lower_unit(launch, ug_.unit(kernel.units[0]));
    }
  }
  for (TensorId t : storage_.outputs()) {
    IOS_ASSERT(value_of_[static_cast<size_t>(t)] >= 0, "output '{}' is never computed",
               g_.tensor(t).name);
    p_.outputs.emplace_back(g_.tensor(t).name, value_of_[static_cast<size_t>(t)]);
  }
  return std::move(p_);
}

// Each node in the unit's order, except those that run in place in the
// epilogue of an earlier one (lowered with it).
void Lowerer::lower_unit(Launch& launch, const sched::Unit& unit) {
  for (NodeId n : unit.nodes) {
    if (storage_.in_epilogue(n)) continue;
    lower_node(launch, n, storage_.epilogue(n));
  }
}

void Lowerer::lower_node(Launch& launch, NodeId n, const std::vector<NodeId>& chain) {
  const ir::Node& node = g_.node(n);
  const OpLowering& lowering = lowering_for(node.op);
  if (!lowering)
    user_error("node '{}' ({}) is not supported by the CUDA backend", node.name,
               ir::op_name(node.op));
  if (lowering.whole != nullptr) {
    lowering.whole(*this, launch, n, chain);
    return;
  }
  // The node writes its one output at the chain's target, and the chain then
  // runs on it in place.
  const int y = chain_target(n, chain);
  lowering.into(*this, launch, n, y);
  in_place_steps(launch, y, n, chain, 0);
}

int Lowerer::value_for(TensorId t) {
  int& v = value_of_.at(static_cast<size_t>(t));
  if (v < 0) {
    const ir::Tensor& tensor = g_.tensor(t);
    IOS_ASSERT(!tensor.is_constant(), "constant '{}' used as a value", tensor.name);
    const exec::Region& r = storage_.region(t);
    v = add_value(tensor.name, r.shape, r.storage, r.offset, r.batch_stride);
  }
  return v;
}

int Lowerer::add_value(const std::string& name, const ir::Shape& shape, int buffer, int64_t offset,
                       int64_t batch_stride) {
  Value v;
  v.name = name;
  v.shape = shape;
  v.buffer = buffer;
  v.offset = offset;
  v.batch_stride = batch_stride;
  v.type = p_.buffers.at(static_cast<size_t>(buffer)).type;
  p_.values.push_back(std::move(v));
  return static_cast<int>(p_.values.size() - 1);
}

int Lowerer::scratch(Launch& launch, const std::string& name, const ir::Shape& shape, ir::ElementType type) {
  const std::ptrdiff_t kernel = &launch - p_.launches.data();
  IOS_ASSERT(kernel >= 0 && kernel < static_cast<std::ptrdiff_t>(p_.launches.size()),
             "scratch '{}' requested outside the program's launches", name);
  const int storage =
      storage_.add_scratch(name, ir::num_elements(shape), static_cast<int>(kernel), type);
  const int v = p_.add_scratch(name, shape, type);
  IOS_ASSERT(val(v).buffer == storage, "scratch '{}' is buffer {} but storage {}", name,
             val(v).buffer, storage);
  return v;
}

int Lowerer::merged_value(int kernel) {
  const exec::Region& whole = storage_.merged_region(kernel);
  return add_value(storage_.storages().at(static_cast<size_t>(whole.storage)).name, whole.shape,
                   whole.storage, whole.offset, whole.batch_stride);
}

TensorId Lowerer::member_output(sched::UnitId u) const {
  const sched::Unit& unit = ug_.unit(u);
  return g_.node(unit.nodes.back()).outputs.at(0);
}

int Lowerer::constant(TensorId t, const ir::Shape& shape) {
  const auto key = std::make_pair(t, shape);
  auto it = const_of_.find(key);
  if (it != const_of_.end()) return it->second;
  const ir::Tensor& tensor = g_.tensor(t);
  IOS_ASSERT(tensor.is_constant(), "'{}' is not a constant", tensor.name);
  IOS_ASSERT(ir::num_elements(shape) == static_cast<int64_t>(tensor.data->size()),
             "constant '{}' reshaped to {}", tensor.name, ir::to_string(shape));
  p_.constants.push_back({tensor.name, shape, tensor.data, tensor.type});
  return const_of_[key] = static_cast<int>(p_.constants.size() - 1);
}

int Lowerer::constant(TensorId t) { return constant(t, g_.tensor(t).shape); }

int Lowerer::new_constant(const std::string& name, ir::Shape shape, std::vector<float> data,
                          ir::ElementType type) {
  std::shared_ptr<const std::vector<float>> shared;
  if (options_.derived != nullptr) {
    auto it = options_.derived->find(name);
    if (it != options_.derived->end() && *it->second == data) {
      shared = it->second;
    } else {
      shared = std::make_shared<const std::vector<float>>(std::move(data));
      (*options_.derived)[name] = shared;
    }
  } else {
    shared = std::make_shared<const std::vector<float>>(std::move(data));
  }
  p_.constants.push_back({name, std::move(shape), std::move(shared), type});
  return static_cast<int>(p_.constants.size() - 1);
}

// A per-channel vector [C] shaped to broadcast along dim 1 of a rank-`rank` tensor.
ir::Shape Lowerer::channel_shape(int64_t channels, size_t rank) {
  ir::Shape s(std::max<size_t>(rank, 2), 1);
  s[1] = channels;
  return s;
}

Ref Lowerer::ref_for(TensorId t) {
  return g_.tensor(t).is_constant() ? Ref::constant(constant(t)) : Ref::value(value_for(t));
}

Program lower_program(const sched::UnitGraph& graph, const exec::ExecPlan& plan,
                      const LowerOptions& options) {
  IOS_ASSERT(graph.ir() != nullptr, "the CUDA backend needs a unit graph with an IR");
  return Lowerer(graph, plan, options).run();
}

}  // namespace ios::cuda
