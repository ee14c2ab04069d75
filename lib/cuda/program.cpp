// Lowering of an ExecPlan to GPU operations (program.h): storage decisions
// first (inputs, merged outputs, concat slices), then per launch the
// operations of its unit(s), with element-wise chains fused.
#include "cuda/program.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "core/error.h"
#include "cost/unit_work.h"
#include "ir/op_info.h"
#include "sched/merge.h"

namespace ios::cuda {

int64_t Value::item_size() const {
  int64_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

std::vector<int64_t> Value::strides() const {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  if (!s.empty()) s[0] = batch_stride;
  return s;
}

int Program::add_temp(const std::string& name, const ir::Shape& shape) {
  Buffer buffer;
  buffer.name = name;
  buffer.elements = ir::num_elements(shape);
  buffers.push_back(buffer);
  Value value;
  value.name = name;
  value.shape = shape;
  value.buffer = static_cast<int>(buffers.size() - 1);
  value.batch_stride = value.item_size();
  values.push_back(value);
  return static_cast<int>(values.size() - 1);
}

namespace {

// The values an operation reads or writes.
void op_values(const Op& op, std::vector<int>& out) {
  auto add = [&](int v) {
    if (v >= 0) out.push_back(v);
  };
  auto add_ref = [&](const Ref& r) {
    if (r.is_value()) out.push_back(r.index);
  };
  std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, ConvOp>) {
          add(o.x), add(o.y), add(o.z), add(o.x_dense), add(o.y_dense);
        } else if constexpr (std::is_same_v<T, EwOp>) {
          add_ref(o.x), add(o.y);
          for (const EwStep& s : o.steps) add_ref(s.operand);
        } else if constexpr (std::is_same_v<T, GemmOp>) {
          add_ref(o.a), add_ref(o.b), add_ref(o.c), add(o.y);
        } else if constexpr (std::is_same_v<T, CopyOp>) {
          add(o.src), add(o.dst);
        } else {
          add(o.x), add(o.y);
        }
      },
      op);
}

}  // namespace

std::vector<MemoryRequest> Program::memory_requests() const {
  const std::vector<std::vector<int>> users = buffer_users();
  std::vector<MemoryRequest> requests(buffers.size());
  for (size_t b = 0; b < buffers.size(); ++b) {
    requests[b] = {buffers[b].elements * static_cast<int64_t>(sizeof(float)), buffers[b].persistent, users[b]};
  }
  return requests;
}

std::vector<std::vector<int>> Program::buffer_users() const {
  std::vector<std::vector<int>> users(buffers.size());
  std::vector<int> vals;
  for (size_t l = 0; l < launches.size(); ++l) {
    vals.clear();
    for (const Op& op : launches[l].ops) op_values(op, vals);
    for (int v : vals) {
      auto& u = users.at(static_cast<size_t>(values.at(static_cast<size_t>(v)).buffer));
      if (u.empty() || u.back() != static_cast<int>(l)) u.push_back(static_cast<int>(l));
    }
  }
  for (auto& u : users) {
    std::sort(u.begin(), u.end());
    u.erase(std::unique(u.begin(), u.end()), u.end());
  }
  return users;
}

int Program::num_ops() const {
  int n = 0;
  for (const Launch& l : launches) n += static_cast<int>(l.ops.size());
  return n;
}

namespace {

using ir::NodeId;
using ir::OpKind;
using ir::TensorId;


// Element-wise nodes fuse as the cost model counts them (one rule for both).
using ir::is_elementwise;

int64_t item_size(const ir::Shape& shape) {
  int64_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

int64_t normalize_axis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

class Lowerer {
 public:
  Lowerer(const sched::UnitGraph& units, const exec::ExecPlan& plan, const LowerOptions& options)
      : ug_(units), g_(*units.ir()), plan_(plan), options_(options) {}

  Program run() {
    index();
    decide_io();
    decide_storage();
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
        lower_merged(launch);
      } else {
        IOS_ASSERT(kernel.units.size() == 1, "launch {} has {} units but is not a merge", k,
                   kernel.units.size());
        lower_unit(launch, ug_.unit(kernel.units[0]));
      }
    }
    // Outputs were named by IR tensor until their storage was decided.
    for (auto& io : p_.outputs) {
      IOS_ASSERT(value_of_[static_cast<size_t>(io.second)] >= 0, "output '{}' is never computed", io.first);
      io.second = value_of_[static_cast<size_t>(io.second)];
    }
    return std::move(p_);
  }

 private:
  // --- Indexing -------------------------------------------------------------

  void index() {
    node_unit_.assign(g_.num_nodes(), -1);
    for (sched::UnitId u = 0; u < ug_.size(); ++u) {
      for (NodeId n : ug_.unit(u).nodes) node_unit_[static_cast<size_t>(n)] = u;
    }
    unit_launch_.assign(static_cast<size_t>(ug_.size()), -1);
    for (size_t k = 0; k < plan_.kernels.size(); ++k) {
      for (sched::UnitId u : plan_.kernels[k].units) {
        IOS_ASSERT(u >= 0 && u < ug_.size(), "plan names unit {} of {}", u, ug_.size());
        IOS_ASSERT(unit_launch_[static_cast<size_t>(u)] == -1, "unit '{}' is launched twice",
                   ug_.unit(u).id);
        unit_launch_[static_cast<size_t>(u)] = static_cast<int>(k);
      }
    }
    if (!options_.partial) {
      for (sched::UnitId u = 0; u < ug_.size(); ++u) {
        IOS_ASSERT(unit_launch_[static_cast<size_t>(u)] != -1, "unit '{}' is never launched",
                   ug_.unit(u).id);
      }
    }
    value_of_.assign(g_.num_tensors(), -1);
    persistent_.assign(g_.num_tensors(), 0);
    position_.assign(g_.num_nodes(), 0);
    const std::vector<NodeId> order = g_.topological_order();
    for (size_t i = 0; i < order.size(); ++i) position_[static_cast<size_t>(order[i])] = static_cast<int>(i);
  }

  bool node_in_plan(NodeId n) const {
    const int u = node_unit_.at(static_cast<size_t>(n));
    return u >= 0 && unit_launch_[static_cast<size_t>(u)] >= 0;
  }

  void decide_io() {
    if (!options_.partial) {
      for (TensorId t : g_.inputs()) p_.inputs.emplace_back(g_.tensor(t).name, t);
      for (TensorId t : g_.outputs()) p_.outputs.emplace_back(g_.tensor(t).name, t);
    } else {
      std::set<TensorId> seen_in, seen_out;
      for (const exec::Kernel& kernel : plan_.kernels) {
        for (sched::UnitId u : kernel.units) {
          for (TensorId t : ug_.unit(u).inputs) {
            const NodeId p = g_.tensor(t).producer;
            if ((p == ir::kNone || !node_in_plan(p)) && seen_in.insert(t).second) {
              p_.inputs.emplace_back(g_.tensor(t).name, t);
            }
          }
          for (TensorId t : ug_.unit(u).outputs) {
            bool outside = g_.is_graph_output(t);
            for (NodeId c : g_.tensor(t).consumers) outside |= !node_in_plan(c);
            if (outside && seen_out.insert(t).second) p_.outputs.emplace_back(g_.tensor(t).name, t);
          }
        }
      }
    }
    for (auto& io : p_.inputs) persistent_[static_cast<size_t>(io.second)] = 1;
    for (auto& io : p_.outputs) persistent_[static_cast<size_t>(io.second)] = 1;
  }

  // --- Storage ----------------------------------------------------------------

  int new_buffer(const std::string& name, int64_t elements, bool persistent) {
    p_.buffers.push_back({name, elements, persistent});
    return static_cast<int>(p_.buffers.size() - 1);
  }

  int add_value(const std::string& name, const ir::Shape& shape, int buffer, int64_t offset,
                int64_t batch_stride) {
    Value v;
    v.name = name;
    v.shape = shape;
    v.buffer = buffer;
    v.offset = offset;
    v.batch_stride = batch_stride;
    p_.values.push_back(std::move(v));
    return static_cast<int>(p_.values.size() - 1);
  }

  // The value of an IR activation: a dense buffer of its own unless decided before.
  int value_for(TensorId t) {
    int& v = value_of_.at(static_cast<size_t>(t));
    if (v < 0) {
      const ir::Tensor& tensor = g_.tensor(t);
      IOS_ASSERT(!tensor.is_constant(), "constant '{}' used as a value", tensor.name);
      const int b = new_buffer(tensor.name, ir::num_elements(tensor.shape), persistent_[static_cast<size_t>(t)]);
      v = add_value(tensor.name, tensor.shape, b, 0, item_size(tensor.shape));
    }
    return v;
  }

  const Value& val(int v) const { return p_.values.at(static_cast<size_t>(v)); }

  void decide_storage() {
    for (auto& io : p_.inputs) io.second = value_for(io.second);
    // Merged convolutions: members' outputs are channel slices of one buffer.
    for (const exec::Kernel& kernel : plan_.kernels) {
      if (!kernel.merged) continue;
      const sched::MergeCheck check = sched::check_merge(ug_, kernel.units);
      IOS_ASSERT(check.spec.has_value(), "merge of {} units is illegal: {}", kernel.units.size(),
                 check.reason);
      const sched::MergeSpec& spec = *check.spec;
      const TensorId first = member_output(spec.members.front().unit);
      const ir::Shape& s = g_.tensor(first).shape;
      const ir::Shape shape{s[0], spec.out_channels, s[2], s[3]};
      bool persistent = false;
      for (const auto& m : spec.members) persistent |= persistent_[static_cast<size_t>(member_output(m.unit))] != 0;
      std::string name = "merged";
      for (const auto& m : spec.members) name += ":" + ug_.unit(m.unit).id;
      const int b = new_buffer(name, ir::num_elements(shape), persistent);
      const int merged = add_value(name, shape, b, 0, spec.out_channels * s[2] * s[3]);
      merged_value_.push_back(merged);
      for (const auto& m : spec.members) {
        const TensorId t = member_output(m.unit);
        IOS_ASSERT(value_of_[static_cast<size_t>(t)] < 0, "tensor '{}' stored twice", g_.tensor(t).name);
        value_of_[static_cast<size_t>(t)] =
            add_value(g_.tensor(t).name, g_.tensor(t).shape, b, m.channel_offset * s[2] * s[3],
                      spec.out_channels * s[2] * s[3]);
      }
    }
    // Zero-copy concat, outermost first so nested concats compose offsets.
    std::vector<NodeId> concats;
    for (const exec::Kernel& kernel : plan_.kernels) {
      for (sched::UnitId u : kernel.units) {
        for (NodeId n : ug_.unit(u).nodes) {
          if (g_.node(n).op == OpKind::kConcat) concats.push_back(n);
        }
      }
    }
    std::sort(concats.begin(), concats.end(),
              [&](NodeId a, NodeId b) { return position_[static_cast<size_t>(a)] > position_[static_cast<size_t>(b)]; });
    for (NodeId n : concats) alias_concat_inputs(n);
  }

  TensorId member_output(sched::UnitId u) const {
    const sched::Unit& unit = ug_.unit(u);
    return g_.node(unit.nodes.back()).outputs.at(0);
  }

  void alias_concat_inputs(NodeId n) {
    const ir::Node& node = g_.node(n);
    const TensorId out = node.outputs.at(0);
    const ir::Shape& shape = g_.tensor(out).shape;
    const int64_t axis = normalize_axis(node.attr<ir::AxisAttrs>().axis, shape.size());
    if (axis != 1 || shape.size() < 2) return;
    const int whole = value_for(out);
    const int64_t inner = val(whole).item_size() / shape[1];
    int64_t channel = 0;
    for (TensorId in : node.inputs) {
      const ir::Tensor& t = g_.tensor(in);
      const int64_t channels = t.shape.size() >= 2 ? t.shape[1] : 0;
      const bool once = std::count(node.inputs.begin(), node.inputs.end(), in) == 1;
      const bool aliasable = !t.is_constant() && t.producer != ir::kNone && node_in_plan(t.producer) &&
                             t.consumers.size() == 1 && once && !g_.is_graph_output(in) &&
                             !persistent_[static_cast<size_t>(in)] &&
                             value_of_[static_cast<size_t>(in)] < 0 && t.shape.size() == shape.size() &&
                             t.shape[0] == shape[0];
      if (aliasable) {
        const Value& w = val(whole);
        value_of_[static_cast<size_t>(in)] =
            add_value(t.name, t.shape, w.buffer, w.offset + channel * inner, w.batch_stride);
        aliased_.insert(in);
        ++p_.concat_inputs_zero_copy;
      }
      channel += channels;
    }
  }

  // --- Constants ---------------------------------------------------------------

  int constant(TensorId t, const ir::Shape& shape) {
    const auto key = std::make_pair(t, shape);
    auto it = const_of_.find(key);
    if (it != const_of_.end()) return it->second;
    const ir::Tensor& tensor = g_.tensor(t);
    IOS_ASSERT(tensor.is_constant(), "'{}' is not a constant", tensor.name);
    IOS_ASSERT(ir::num_elements(shape) == static_cast<int64_t>(tensor.data->size()),
               "constant '{}' reshaped to {}", tensor.name, ir::to_string(shape));
    p_.constants.push_back({tensor.name, shape, tensor.data});
    return const_of_[key] = static_cast<int>(p_.constants.size() - 1);
  }
  int constant(TensorId t) { return constant(t, g_.tensor(t).shape); }
  int new_constant(const std::string& name, ir::Shape shape, std::vector<float> data) {
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
    p_.constants.push_back({name, std::move(shape), std::move(shared)});
    return static_cast<int>(p_.constants.size() - 1);
  }
  // A per-channel vector [C] shaped to broadcast along dim 1 of a rank-`rank` tensor.
  static ir::Shape channel_shape(int64_t channels, size_t rank) {
    ir::Shape s(std::max<size_t>(rank, 2), 1);
    s[1] = channels;
    return s;
  }

  Ref ref_for(TensorId t) {
    return g_.tensor(t).is_constant() ? Ref::constant(constant(t)) : Ref::value(value_for(t));
  }

  // --- Element-wise chains -------------------------------------------------------

  // Whether the only use of `t` is the next node of an element-wise chain in `unit`.
  bool chain_continues(const sched::Unit& unit, TensorId t, NodeId* next) const {
    const ir::Tensor& tensor = g_.tensor(t);
    if (tensor.consumers.size() != 1 || g_.is_graph_output(t) || persistent_[static_cast<size_t>(t)] ||
        aliased_.count(t) || value_of_[static_cast<size_t>(t)] >= 0) {
      return false;
    }
    const NodeId m = tensor.consumers[0];
    if (node_unit_[static_cast<size_t>(m)] != node_unit_[static_cast<size_t>(unit.nodes.front())]) return false;
    const ir::Node& node = g_.node(m);
    if (!is_elementwise(node.op) || done_.count(m)) return false;
    if (g_.tensor(node.outputs[0]).shape != tensor.shape) return false;  // would broadcast the chain value
    int uses = 0;
    for (TensorId in : node.inputs) {
      if (in == t) {
        ++uses;
        continue;
      }
      const NodeId p = g_.tensor(in).producer;
      // Another operand must be ready: constant, from outside, or already computed.
      if (p != ir::kNone && node_unit_[static_cast<size_t>(p)] == node_unit_[static_cast<size_t>(m)] &&
          !done_.count(p)) {
        return false;
      }
    }
    if (uses != 1) return false;
    *next = m;
    return true;
  }

  std::vector<NodeId> chain_after(const sched::Unit& unit, NodeId n) const {
    std::vector<NodeId> chain;
    const OpKind op = g_.node(n).op;
    if (g_.node(n).outputs.size() != 1 || op == OpKind::kConcat || op == OpKind::kSplit) return chain;
    TensorId cur = g_.node(n).outputs[0];
    NodeId next = ir::kNone;
    while (chain_continues(unit, cur, &next)) {
      chain.push_back(next);
      cur = g_.node(next).outputs[0];
    }
    return chain;
  }

  // The steps of element-wise node `m` applied to the chain value `cur`.
  void append_steps(NodeId m, TensorId cur, std::vector<EwStep>& steps) {
    const ir::Node& node = g_.node(m);
    EwStep step;
    switch (node.op) {
      case OpKind::kAdd:
      case OpKind::kMul: {
        step.kind = node.op;
        const TensorId other = node.inputs[0] == cur ? node.inputs[1] : node.inputs[0];
        step.operand = ref_for(other);
        break;
      }
      case OpKind::kBatchNorm: {
        // y = x * s + (bias - mean * s), s = scale / sqrt(var + eps), per channel.
        IOS_ASSERT(node.inputs.size() == 5, "BatchNormalization '{}' needs 5 inputs", node.name);
        for (size_t i = 1; i < 5; ++i) {
          if (!g_.tensor(node.inputs[i]).is_constant()) {
            user_error("BatchNormalization '{}': input {} ('{}') must be a constant for the CUDA backend",
                       node.name, i, g_.tensor(node.inputs[i]).name);
          }
        }
        const auto& scale = *g_.tensor(node.inputs[1]).data;
        const auto& bias = *g_.tensor(node.inputs[2]).data;
        const auto& mean = *g_.tensor(node.inputs[3]).data;
        const auto& var = *g_.tensor(node.inputs[4]).data;
        const float eps = node.attr<ir::BatchNormAttrs>().epsilon;
        std::vector<float> s(scale.size()), b(scale.size());
        for (size_t c = 0; c < scale.size(); ++c) {
          s[c] = scale[c] / std::sqrt(var[c] + eps);
          b[c] = bias[c] - mean[c] * s[c];
        }
        const ir::Shape shape = channel_shape(static_cast<int64_t>(s.size()), g_.tensor(cur).shape.size());
        const std::string name = g_.tensor(node.outputs[0]).name;
        steps.push_back({OpKind::kMul, 0, 0, Ref::constant(new_constant(name + ":bn_scale", shape, s))});
        steps.push_back({OpKind::kAdd, 0, 0, Ref::constant(new_constant(name + ":bn_shift", shape, b))});
        return;
      }
      default: {
        // A unary operator with math in ir/elementwise.h, its scalar
        // attributes as the step's parameters.
        IOS_ASSERT(ir::ew::has_unary(node.op), "node '{}' ({}) is not element-wise", node.name,
                   ir::op_name(node.op));
        const ir::ew::Params params = ir::elementwise_params(node);
        step.kind = node.op;
        step.p0 = params.p0;
        step.p1 = params.p1;
        break;
      }
    }
    steps.push_back(step);
  }

  // Appends y = steps(x) as element-wise ops of at most kMaxEwStepsPerOp steps
  // each: the first reads x, the rest continue in place on y. Every EwOp the
  // lowering makes goes through here (BatchNorm adds two steps, a convolution's
  // bias one, so node counts do not bound step counts).
  static void push_elementwise(Launch& launch, Ref x, int y, std::vector<EwStep> steps) {
    const auto limit = static_cast<size_t>(kMaxEwStepsPerOp);
    if (steps.size() <= limit) {
      launch.ops.push_back(EwOp{x, y, std::move(steps)});
      return;
    }
    for (size_t from = 0; from < steps.size(); from += limit) {
      const size_t to = std::min(steps.size(), from + limit);
      launch.ops.push_back(EwOp{from == 0 ? x : Ref::value(y), y,
                                std::vector<EwStep>(steps.begin() + static_cast<std::ptrdiff_t>(from),
                                                    steps.begin() + static_cast<std::ptrdiff_t>(to))});
    }
  }

  // --- Units ---------------------------------------------------------------------

  void lower_unit(Launch& launch, const sched::Unit& unit) {
    for (NodeId n : unit.nodes) {
      if (done_.count(n)) continue;
      const ir::Node& node = g_.node(n);
      done_.insert(n);
      if (is_elementwise(node.op)) {
        lower_elementwise(launch, unit, n);
        continue;
      }
      const std::vector<NodeId> chain = chain_after(unit, n);
      for (NodeId m : chain) done_.insert(m);
      lower_anchor(launch, n, chain);
    }
  }

  // The chain value entering chain[i]: the output of the node before it.
  TensorId chain_input(NodeId anchor, const std::vector<NodeId>& chain, size_t i) const {
    return i == 0 ? g_.node(anchor).outputs[0] : g_.node(chain[i - 1]).outputs[0];
  }

  // Gives the anchor's output (and the chain's intermediates) the storage of
  // the chain's last output: the anchor writes there, the chain runs in place.
  int chain_target(NodeId anchor, const std::vector<NodeId>& chain) {
    const TensorId last = chain.empty() ? g_.node(anchor).outputs[0] : g_.node(chain.back()).outputs[0];
    const int y = value_for(last);
    if (!chain.empty()) {
      value_of_[static_cast<size_t>(g_.node(anchor).outputs[0])] = y;
      for (size_t i = 0; i + 1 < chain.size(); ++i) value_of_[static_cast<size_t>(g_.node(chain[i]).outputs[0])] = y;
    }
    return y;
  }

  void in_place_steps(Launch& launch, int y, NodeId anchor, const std::vector<NodeId>& chain, size_t from,
                      std::vector<EwStep> steps = {}) {
    for (size_t i = from; i < chain.size(); ++i) append_steps(chain[i], chain_input(anchor, chain, i), steps);
    if (!steps.empty()) push_elementwise(launch, Ref::value(y), y, std::move(steps));
  }

  void lower_elementwise(Launch& launch, const sched::Unit& unit, NodeId n) {
    const ir::Node& node = g_.node(n);
    const ir::Shape& out_shape = g_.tensor(node.outputs[0]).shape;
    std::vector<EwStep> steps;
    Ref x;
    if (node.op == OpKind::kAdd || node.op == OpKind::kMul) {
      // x: an activation operand of the output's shape when there is one.
      TensorId first = node.inputs[0], second = node.inputs[1];
      auto full = [&](TensorId t) { return !g_.tensor(t).is_constant() && g_.tensor(t).shape == out_shape; };
      if (!full(first) && full(second)) std::swap(first, second);
      if (g_.tensor(first).is_constant() && !g_.tensor(second).is_constant()) std::swap(first, second);
      x = ref_for(first);
      steps.push_back({node.op == OpKind::kAdd ? OpKind::kAdd : OpKind::kMul, 0, 0, ref_for(second)});
    } else {
      x = ref_for(node.inputs[0]);
      append_steps(n, node.inputs[0], steps);
    }
    const std::vector<NodeId> chain = chain_after(unit, n);
    for (NodeId m : chain) done_.insert(m);
    const int y = chain_target(n, chain);
    for (size_t i = 0; i < chain.size(); ++i) append_steps(chain[i], chain_input(n, chain, i), steps);
    push_elementwise(launch, x, y, std::move(steps));
  }

  void lower_anchor(Launch& launch, NodeId n, const std::vector<NodeId>& chain) {
    const ir::Node& node = g_.node(n);
    switch (node.op) {
      case OpKind::kConv: lower_conv(launch, n, chain); return;
      case OpKind::kSplit: lower_split(launch, node); return;
      case OpKind::kConcat: lower_concat(launch, n, chain); return;
      default: break;
    }
    // Every other anchor writes its one output at the chain's target, and the
    // chain then runs on it in place.
    const int y = chain_target(n, chain);
    switch (node.op) {
      case OpKind::kMaxPool:
      case OpKind::kAveragePool:
      case OpKind::kGlobalAveragePool: lower_pool(launch, n, y); break;
      case OpKind::kReduceMean: lower_reduce(launch, n, y); break;
      case OpKind::kGemm:
      case OpKind::kMatMul: lower_gemm(launch, n, y); break;
      case OpKind::kSoftmax: lower_softmax(launch, n, y); break;
      case OpKind::kFlatten:
      case OpKind::kReshape: lower_reshape(launch, value_for(node.inputs[0]), y); break;
      case OpKind::kTranspose: lower_transpose(launch, node, y); break;
      case OpKind::kSlice: lower_slice(launch, node, y); break;
      case OpKind::kPad: lower_pad(launch, node, y); break;
      default:
        user_error("node '{}' ({}) is not supported by the CUDA backend", node.name, ir::op_name(node.op));
    }
    in_place_steps(launch, y, n, chain, 0);
  }

  void lower_transpose(Launch& launch, const ir::Node& node, int y) {
    const int x = value_for(node.inputs[0]);
    const auto& perm = node.attr<ir::TransposeAttrs>().perm;
    CopyOp op;
    op.src = x;
    op.dst = y;
    op.dims = val(y).shape;
    const std::vector<int64_t> xs = val(x).strides();
    for (size_t d = 0; d < perm.size(); ++d) {
      op.src_strides.push_back(xs.at(static_cast<size_t>(normalize_axis(perm[d], perm.size()))));
    }
    op.dst_strides = val(y).strides();
    launch.ops.push_back(std::move(op));
  }

  // A copy of `dims` elements from `src` to `dst`, each with its own dense
  // strides; callers adjust offsets and source strides for views.
  CopyOp strided_copy(int src, int dst, const ir::Shape& dims) {
    CopyOp op;
    op.src = src;
    op.dst = dst;
    op.dims = dims;
    op.src_strides = val(src).strides();
    op.dst_strides = val(dst).strides();
    return op;
  }

  void lower_slice(Launch& launch, const ir::Node& node, int y) {
    const int x = value_for(node.inputs[0]);
    const auto& a = node.attr<ir::SliceAttrs>();
    CopyOp op = strided_copy(x, y, val(y).shape);
    for (size_t i = 0; i < a.axes.size(); ++i) {
      const auto axis = static_cast<size_t>(normalize_axis(a.axes[i], op.dims.size()));
      const int64_t step = i < a.steps.size() ? a.steps[i] : 1;
      op.src_offset += a.starts.at(i) * op.src_strides[axis];
      op.src_strides[axis] *= step;
    }
    launch.ops.push_back(std::move(op));
  }

  void lower_split(Launch& launch, const ir::Node& node) {
    const int x = value_for(node.inputs[0]);
    const auto& a = node.attr<ir::SplitAttrs>();
    const auto axis = static_cast<size_t>(normalize_axis(a.axis, val(x).shape.size()));
    int64_t offset = 0;
    for (TensorId out : node.outputs) {
      const int y = value_for(out);
      CopyOp op = strided_copy(x, y, val(y).shape);
      op.src_offset = offset * op.src_strides[axis];
      offset += op.dims[axis];
      launch.ops.emplace_back(std::move(op));
    }
  }

  void lower_concat(Launch& launch, NodeId n, const std::vector<NodeId>& chain) {
    const ir::Node& node = g_.node(n);
    const int y = value_for(node.outputs[0]);
    const auto axis = static_cast<size_t>(normalize_axis(node.attr<ir::AxisAttrs>().axis, val(y).shape.size()));
    const std::vector<int64_t> ys = val(y).strides();
    int64_t offset = 0;
    for (TensorId in : node.inputs) {
      const int64_t size = g_.tensor(in).shape.at(axis);
      if (!aliased_.count(in)) {
        CopyOp op;
        if (g_.tensor(in).is_constant()) {
          // A constant input: give it a value filled once per run.
          user_error("Concat '{}': constant input '{}' is not supported by the CUDA backend", node.name,
                     g_.tensor(in).name);
        }
        op.src = value_for(in);
        op.dst = y;
        op.dims = g_.tensor(in).shape;
        op.src_strides = val(op.src).strides();
        op.dst_strides = ys;
        op.dst_offset = offset * ys[axis];
        launch.ops.push_back(std::move(op));
        ++p_.concat_inputs_copied;
      }
      offset += size;
    }
    in_place_steps(launch, y, n, chain, 0);
  }

  void lower_pad(Launch& launch, const ir::Node& node, int y) {
    const auto& a = node.attr<ir::PadAttrs>();
    PadOp op;
    op.x = value_for(node.inputs[0]);
    op.y = y;
    const size_t rank = val(op.x).shape.size();
    IOS_ASSERT(a.pads.size() == 2 * rank, "Pad '{}' has {} pads for rank {}", node.name, a.pads.size(), rank);
    for (size_t d = 0; d < rank; ++d) {
      if (a.pads[d] < 0 || a.pads[d + rank] < 0) {
        user_error("Pad '{}': negative pads (cropping) are not supported by the CUDA backend", node.name);
      }
    }
    op.begin.assign(a.pads.begin(), a.pads.begin() + static_cast<std::ptrdiff_t>(rank));
    op.mode = a.mode == ir::PadAttrs::Mode::kConstant ? PadOp::Mode::kConstant
              : a.mode == ir::PadAttrs::Mode::kReflect ? PadOp::Mode::kReflect
                                                       : PadOp::Mode::kEdge;
    op.value = a.value;
    launch.ops.push_back(std::move(op));
  }

  // A dense copy of value `v` (when it is a strided slice) for operations that need one.
  int dense(Launch& launch, int v) {
    if (val(v).dense()) return v;
    const int t = p_.add_temp(val(v).name + ":dense", val(v).shape);
    launch.ops.push_back(strided_copy(v, t, val(v).shape));
    return t;
  }

  void lower_reshape(Launch& launch, int x, int y) {
    CopyOp op;
    op.dst = y;
    const Value& X = val(x);
    const Value& Y = val(y);
    if (X.batch() == Y.batch() && X.item_size() == Y.item_size()) {
      op.src = x;
      op.dims = {X.batch(), X.item_size()};
      op.src_strides = {X.batch_stride, 1};
      op.dst_strides = {Y.batch_stride, 1};
    } else if (X.dense() || Y.dense()) {
      const bool by_dst = X.dense();
      const Value& V = by_dst ? Y : X;
      op.src = x;
      op.dims = {V.batch(), V.item_size()};
      op.src_strides = {by_dst ? V.item_size() : X.batch_stride, 1};
      op.dst_strides = {by_dst ? Y.batch_stride : V.item_size(), 1};
    } else {
      lower_reshape(launch, dense(launch, x), y);
      return;
    }
    launch.ops.push_back(std::move(op));
  }

  // Pads made explicit when they are asymmetric (cuDNN pads symmetrically).
  int explicit_pad(Launch& launch, int x, std::array<int64_t, 4>& pads, const std::string& name) {
    if (pads[0] == pads[2] && pads[1] == pads[3]) return x;
    const ir::Shape& s = val(x).shape;
    const int t = p_.add_temp(name + ":padded", {s[0], s[1], s[2] + pads[0] + pads[2], s[3] + pads[1] + pads[3]});
    PadOp op;
    op.x = x;
    op.y = t;
    op.begin = {0, 0, pads[0], pads[1]};
    launch.ops.push_back(std::move(op));
    pads = {0, 0, 0, 0};
    return t;
  }

  void lower_conv(Launch& launch, NodeId n, const std::vector<NodeId>& chain) {
    const ir::Node& node = g_.node(n);
    const std::string& label = g_.tensor(node.outputs[0]).name;
    if (node.inputs.size() < 2 || !g_.tensor(node.inputs[1]).is_constant()) {
      user_error("Conv '{}' (output '{}'): the CUDA backend needs constant weights", node.name, label);
    }
    const TensorId xt = node.inputs[0];
    if (g_.tensor(xt).shape.size() != 4) {
      user_error("Conv '{}' (output '{}'): only 2-D convolutions (4-D tensors) are supported", node.name, label);
    }
    const auto& a = node.attr<ir::ConvAttrs>();
    const bool has_bias = node.inputs.size() > 2 && node.inputs[2] != ir::kNone;
    if (has_bias && !g_.tensor(node.inputs[2]).is_constant()) {
      user_error("Conv '{}' (output '{}'): the CUDA backend needs a constant bias", node.name, label);
    }
    const int y = chain_target(n, chain);
    std::array<int64_t, 4> pads = a.pads;
    ConvOp op;
    op.x = explicit_pad(launch, value_for(xt), pads, label);
    op.y = y;
    op.weight = constant(node.inputs[1]);
    op.kernel = a.kernel;
    op.stride = a.stride;
    op.dilation = a.dilation;
    op.pad = {pads[0], pads[1]};
    op.group = a.group;
    op.label = label;
    const int64_t out_channels = g_.tensor(node.inputs[1]).shape[0];

    // cuDNN fuses bias + ReLU, and bias + residual add + ReLU.
    size_t consumed = 0;
    if (!chain.empty() && g_.node(chain[0]).op == OpKind::kRelu) {
      consumed = 1;
    } else if (chain.size() >= 2 && g_.node(chain[0]).op == OpKind::kAdd && g_.node(chain[1]).op == OpKind::kRelu) {
      const ir::Node& add = g_.node(chain[0]);
      const TensorId cur = node.outputs[0];
      const TensorId other = add.inputs[0] == cur ? add.inputs[1] : add.inputs[0];
      if (!g_.tensor(other).is_constant() && g_.tensor(other).shape == g_.tensor(cur).shape) {
        op.z = value_for(other);
        consumed = 2;
      }
    }
    if (consumed > 0) {
      op.fused = true;
      op.relu = true;
      op.bias = has_bias ? constant(node.inputs[2], {out_channels})
                         : new_constant(label + ":zero_bias", {out_channels}, std::vector<float>(static_cast<size_t>(out_channels), 0.0f));
      launch.ops.push_back(op);
      in_place_steps(launch, y, n, chain, consumed);
      return;
    }
    launch.ops.push_back(op);
    std::vector<EwStep> steps;
    if (has_bias) {
      steps.push_back({OpKind::kAdd, 0, 0, Ref::constant(constant(node.inputs[2], channel_shape(out_channels, 4)))});
    }
    in_place_steps(launch, y, n, chain, 0, std::move(steps));
  }

  void lower_merged(Launch& launch) {
    const sched::MergeCheck check = sched::check_merge(ug_, launch.units);
    const sched::MergeSpec& spec = *check.spec;
    const int merged = merged_value_.at(merged_index_++);
    const sched::MergedWeights weights = sched::assemble_merged_weights(ug_, spec);
    std::array<int64_t, 4> pads = spec.conv.pads;
    ConvOp op;
    op.label = launch.name;
    op.x = explicit_pad(launch, value_for(spec.input), pads, "merged");
    op.y = merged;
    op.weight = new_constant(launch.name + ":weight", {spec.out_channels, spec.in_channels, spec.conv.kernel[0], spec.conv.kernel[1]},
                             weights.weight);
    op.kernel = spec.conv.kernel;
    op.stride = spec.conv.stride;
    op.dilation = spec.conv.dilation;
    op.pad = {pads[0], pads[1]};
    op.group = 1;

    // Each member's epilogue: the nodes after its convolution.
    std::vector<std::vector<NodeId>> chains;
    for (const auto& m : spec.members) {
      const sched::Unit& unit = ug_.unit(m.unit);
      IOS_ASSERT(unit.nodes.front() == unit.anchor, "merged unit '{}' has a prologue", unit.id);
      chains.emplace_back(unit.nodes.begin() + 1, unit.nodes.end());
      for (NodeId node : unit.nodes) done_.insert(node);
    }
    auto only_relu = [&](const std::vector<NodeId>& c) { return c.size() == 1 && g_.node(c[0]).op == OpKind::kRelu; };
    if (std::all_of(chains.begin(), chains.end(), only_relu)) {
      op.fused = true;
      op.relu = true;
      op.bias = new_constant(launch.name + ":bias", {spec.out_channels}, weights.bias);
      launch.ops.push_back(op);
      return;
    }
    launch.ops.push_back(op);
    std::vector<EwStep> whole;
    whole.push_back({OpKind::kAdd, 0, 0, Ref::constant(new_constant(launch.name + ":bias", channel_shape(spec.out_channels, 4), weights.bias))});
    // One epilogue for the whole buffer when the members' are identical and
    // need no operands; otherwise each member's on its slice.
    std::vector<std::vector<EwStep>> member_steps;
    for (size_t i = 0; i < chains.size(); ++i) {
      const sched::Unit& unit = ug_.unit(spec.members[i].unit);
      std::vector<EwStep> steps;
      for (size_t j = 0; j < chains[i].size(); ++j) {
        const TensorId cur = j == 0 ? g_.node(unit.anchor).outputs[0] : g_.node(chains[i][j - 1]).outputs[0];
        append_steps(chains[i][j], cur, steps);
      }
      member_steps.push_back(std::move(steps));
    }
    auto same = [&](const std::vector<EwStep>& a, const std::vector<EwStep>& b) {
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i) {
        if (a[i].kind != b[i].kind || a[i].p0 != b[i].p0 || a[i].p1 != b[i].p1 || a[i].operand || b[i].operand) return false;
      }
      return true;
    };
    const bool shared = std::all_of(member_steps.begin(), member_steps.end(),
                                    [&](const auto& s) { return same(s, member_steps.front()); });
    if (shared) {
      whole.insert(whole.end(), member_steps.front().begin(), member_steps.front().end());
      push_elementwise(launch, Ref::value(merged), merged, std::move(whole));
      return;
    }
    push_elementwise(launch, Ref::value(merged), merged, std::move(whole));
    for (size_t i = 0; i < spec.members.size(); ++i) {
      if (member_steps[i].empty()) continue;
      const int v = value_of_.at(static_cast<size_t>(member_output(spec.members[i].unit)));
      push_elementwise(launch, Ref::value(v), v, std::move(member_steps[i]));
    }
  }

  void lower_pool(Launch& launch, NodeId n, int y) {
    const ir::Node& node = g_.node(n);
    PoolOp op;
    op.x = value_for(node.inputs[0]);
    op.y = y;
    const ir::Shape& xs = val(op.x).shape;
    if (xs.size() != 4) {
      user_error("{} '{}': only 2-D pooling (4-D tensors) is supported by the CUDA backend", ir::op_name(node.op),
                 node.name);
    }
    if (node.op == OpKind::kGlobalAveragePool) {
      op.mode = PoolOp::Mode::kAverageIncludePad;
      op.kernel = {xs[2], xs[3]};
      op.stride = {1, 1};
    } else {
      const auto& a = node.attr<ir::PoolAttrs>();
      op.mode = node.op == OpKind::kMaxPool ? PoolOp::Mode::kMax
                : a.count_include_pad       ? PoolOp::Mode::kAverageIncludePad
                                            : PoolOp::Mode::kAverageExcludePad;
      op.kernel = a.kernel;
      op.stride = a.stride;
      op.pads = a.pads;
      op.ceil_mode = a.ceil_mode;
    }
    // cuDNN: symmetric pads smaller than the window and floor-mode sizes.
    const ir::Shape& ys = val(y).shape;
    const bool symmetric = op.pads[0] == op.pads[2] && op.pads[1] == op.pads[3];
    const bool small_pads = op.pads[0] < op.kernel[0] && op.pads[1] < op.kernel[1];
    const bool floor_size =
        ys.size() >= 2 && (xs[2] + 2 * op.pads[0] - op.kernel[0]) / op.stride[0] + 1 == (ys.size() == 4 ? ys[2] : 1) &&
        (xs[3] + 2 * op.pads[1] - op.kernel[1]) / op.stride[1] + 1 == (ys.size() == 4 ? ys[3] : 1);
    op.use_cudnn = symmetric && small_pads && floor_size;
    launch.ops.push_back(op);
  }

  void lower_reduce(Launch& launch, NodeId n, int y) {
    const ir::Node& node = g_.node(n);
    const int x = value_for(node.inputs[0]);
    const ir::Shape& xs = val(x).shape;
    std::vector<int64_t> axes = node.attr<ir::ReduceAttrs>().axes;
    if (axes.empty()) {  // ONNX: no axes means all of them
      axes.resize(xs.size());
      std::iota(axes.begin(), axes.end(), 0);
    }
    for (int64_t& a : axes) a = normalize_axis(a, xs.size());
    std::sort(axes.begin(), axes.end());
    if (xs.size() == 4 && axes == std::vector<int64_t>{2, 3}) {  // a global average pool
      PoolOp op;
      op.x = x;
      op.y = y;
      op.mode = PoolOp::Mode::kAverageIncludePad;
      op.kernel = {xs[2], xs[3]};
      launch.ops.push_back(op);
      return;
    }
    launch.ops.push_back(ReduceOp{x, y, axes});
  }

  void lower_softmax(Launch& launch, NodeId n, int y) {
    const ir::Node& node = g_.node(n);
    int x = value_for(node.inputs[0]);
    const int64_t axis = normalize_axis(node.attr<ir::AxisAttrs>().axis, val(x).shape.size());
    if (axis == 1 || (val(x).dense() && val(y).dense())) {
      launch.ops.push_back(SoftmaxOp{x, y, axis});
      return;
    }
    x = dense(launch, x);
    if (val(y).dense()) {
      launch.ops.push_back(SoftmaxOp{x, y, axis});
      return;
    }
    const int t = p_.add_temp(val(y).name + ":dense", val(y).shape);
    launch.ops.push_back(SoftmaxOp{x, t, axis});
    CopyOp copy;
    copy.src = t;
    copy.dst = y;
    copy.dims = val(y).shape;
    copy.src_strides = val(t).strides();
    copy.dst_strides = val(y).strides();
    launch.ops.push_back(std::move(copy));
  }

  void lower_gemm(Launch& launch, NodeId n, int y) {
    const ir::Node& node = g_.node(n);
    GemmOp op;
    op.y = y;
    const ir::Shape& ys = val(y).shape;
    if (node.op == OpKind::kGemm) {
      const auto& a = node.attr<ir::GemmAttrs>();
      op.a = ref_for(node.inputs[0]);
      op.b = ref_for(node.inputs[1]);
      if (node.inputs.size() > 2 && node.inputs[2] != ir::kNone) op.c = ref_for(node.inputs[2]);
      op.alpha = a.alpha;
      op.beta = op.c ? a.beta : 0.0f;
      op.trans_a = a.trans_a;
      op.trans_b = a.trans_b;
      const ir::Shape& as = g_.tensor(node.inputs[0]).shape;
      IOS_ASSERT(as.size() == 2 && ys.size() == 2, "Gemm '{}' operands must be 2-D", node.name);
      op.m = ys[0];
      op.n = ys[1];
      op.k = a.trans_a ? as[0] : as[1];
    } else {
      const ir::Shape& as = g_.tensor(node.inputs[0]).shape;
      const ir::Shape& bs = g_.tensor(node.inputs[1]).shape;
      if (as.size() < 2 || bs.size() < 2) {
        user_error("MatMul '{}': 1-D operands are not supported by the CUDA backend", node.name);
      }
      op.m = as[as.size() - 2];
      op.k = as.back();
      op.n = bs.back();
      op.batch = ir::num_elements(ys) / (op.m * op.n);
      auto batched = [&](const ir::Shape& s) {
        const int64_t b = ir::num_elements(s) / (s[s.size() - 1] * s[s.size() - 2]);
        if (b == op.batch) return true;
        if (b == 1) return false;
        user_error("MatMul '{}': partial broadcasting of batch dimensions ({} with {}) is not supported by the CUDA backend",
                   node.name, ir::to_string(as), ir::to_string(bs));
      };
      op.a_batched = batched(as);
      op.b_batched = batched(bs);
      auto operand = [&](TensorId t, const ir::Shape& s) {
        if (g_.tensor(t).is_constant()) return ref_for(t);
        int v = value_for(t);
        if (s.size() > 2) v = dense(launch, v);  // batch strides must be uniform
        return Ref::value(v);
      };
      op.a = operand(node.inputs[0], as);
      op.b = operand(node.inputs[1], bs);
      if (ys.size() > 2 && !val(y).dense()) {
        user_error("MatMul '{}': a batched output written into a concatenation is not supported", node.name);
      }
    }
    launch.ops.push_back(op);
  }

  const sched::UnitGraph& ug_;
  const ir::Graph& g_;
  const exec::ExecPlan& plan_;
  LowerOptions options_;
  Program p_;
  std::vector<int> node_unit_, unit_launch_, value_of_, position_;
  std::vector<char> persistent_;
  std::set<TensorId> aliased_;
  std::set<NodeId> done_;
  std::map<std::pair<TensorId, ir::Shape>, int> const_of_;
  std::vector<int> merged_value_;
  size_t merged_index_ = 0;
};

}  // namespace

Program lower_program(const sched::UnitGraph& graph, const exec::ExecPlan& plan, const LowerOptions& options) {
  IOS_ASSERT(graph.ir() != nullptr, "the CUDA backend needs a unit graph with an IR");
  return Lowerer(graph, plan, options).run();
}

std::string describe_program(const Program& p) {
  std::ostringstream out;
  auto vname = [&](int v) { return v < 0 ? std::string("-") : p.values.at(static_cast<size_t>(v)).name; };
  auto rname = [&](const Ref& r) {
    if (r.is_value()) return vname(r.index);
    if (r.is_constant()) return "const " + p.constants.at(static_cast<size_t>(r.index)).name;
    return std::string("-");
  };
  for (size_t l = 0; l < p.launches.size(); ++l) {
    const Launch& launch = p.launches[l];
    out << "launch " << l << " [stream " << launch.stream << "] " << (launch.merged ? "merged " : "") << launch.name
        << '\n';
    for (const Op& op : launch.ops) {
      out << "    ";
      std::visit(
          [&](const auto& o) {
            using T = std::decay_t<decltype(o)>;
            if constexpr (std::is_same_v<T, ConvOp>) {
              out << "conv " << o.kernel[0] << 'x' << o.kernel[1] << "/s" << o.stride[0] << " g" << o.group << ' '
                  << vname(o.x) << " -> " << vname(o.y) << (o.fused ? " (cuDNN bias" : "")
                  << (o.fused && o.z >= 0 ? " + " + vname(o.z) : "") << (o.fused ? " + relu)" : "");
            } else if constexpr (std::is_same_v<T, EwOp>) {
              out << "elementwise[" << o.steps.size() << "] " << rname(o.x) << " -> " << vname(o.y);
            } else if constexpr (std::is_same_v<T, PoolOp>) {
              out << (o.mode == PoolOp::Mode::kMax ? "maxpool " : "avgpool ") << o.kernel[0] << 'x' << o.kernel[1]
                  << (o.use_cudnn ? " (cuDNN) " : " (own) ") << vname(o.x) << " -> " << vname(o.y);
            } else if constexpr (std::is_same_v<T, SoftmaxOp>) {
              out << "softmax axis " << o.axis << ' ' << vname(o.x) << " -> " << vname(o.y);
            } else if constexpr (std::is_same_v<T, GemmOp>) {
              out << "gemm " << o.batch << 'x' << o.m << 'x' << o.n << 'x' << o.k << ' ' << rname(o.a) << " * "
                  << rname(o.b) << " -> " << vname(o.y);
            } else if constexpr (std::is_same_v<T, CopyOp>) {
              out << "copy " << vname(o.src) << " -> " << vname(o.dst);
            } else if constexpr (std::is_same_v<T, PadOp>) {
              out << "pad " << vname(o.x) << " -> " << vname(o.y);
            } else {
              out << "reduce-mean " << vname(o.x) << " -> " << vname(o.y);
            }
          },
          op);
      out << '\n';
    }
  }
  return out.str();
}

}  // namespace ios::cuda
