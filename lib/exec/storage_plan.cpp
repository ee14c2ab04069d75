// The storage plan (storage_plan.h): inputs and outputs, then the aliases in
// the order that lets each decision see the earlier ones (merged outputs,
// concat slices outermost first, epilogue chains in launch order), then the
// users of every storage.
#include "exec/storage_plan.h"

#include <algorithm>
#include <set>

#include "core/error.h"
#include "ir/op_info.h"

namespace ios::exec {

bool is_in_place_elementwise(ir::OpKind op) {
  // Every element-wise operator of the operator table (the ones epilogues
  // fuse) may write over its activation input.
  return ir::is_elementwise(op);
}

namespace {

using ir::NodeId;
using ir::OpKind;
using ir::TensorId;

int64_t normalize_axis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

}  // namespace

class StoragePlan::Builder {
 public:
  Builder(StoragePlan& out, const sched::UnitGraph& units, const ExecPlan& plan,
          StoragePlanOptions options)
      : out_(out), ug_(units), g_(*units.ir()), plan_(plan), options_(options) {}

  void run() {
    index();
    decide_io();
    for (TensorId t : out_.inputs_) region_for(t);
    place_merged_outputs();
    place_concat_inputs();
    place_epilogues();
    collect_users();
  }

 private:
  // --- Indexing ---------------------------------------------------------------

  void index() {
    node_unit_.assign(g_.num_nodes(), -1);
    for (sched::UnitId u = 0; u < ug_.size(); ++u) {
      for (NodeId n : ug_.unit(u).nodes) node_unit_[static_cast<size_t>(n)] = u;
    }
    unit_launch_.assign(static_cast<size_t>(ug_.size()), -1);
    for (size_t k = 0; k < plan_.kernels.size(); ++k) {
      for (sched::UnitId u : plan_.kernels[k].units) {
        IOS_ASSERT(u >= 0 && u < ug_.size(), "plan names unit {} of {}", u, ug_.size());
        IOS_ASSERT(unit_launch_[static_cast<size_t>(u)] == -1, "the plan launches unit '{}' twice",
                   ug_.unit(u).id);
        unit_launch_[static_cast<size_t>(u)] = static_cast<int>(k);
      }
    }
    if (!options_.partial) {
      for (sched::UnitId u = 0; u < ug_.size(); ++u) {
        IOS_ASSERT(unit_launch_[static_cast<size_t>(u)] != -1, "the plan never launches unit '{}'",
                   ug_.unit(u).id);
      }
    }
    out_.regions_.assign(g_.num_tensors(), Region{});
    out_.persistent_.assign(g_.num_tensors(), 0);
    out_.zero_copy_.assign(g_.num_tensors(), 0);
    out_.epilogues_.assign(g_.num_nodes(), {});
    out_.in_epilogue_.assign(g_.num_nodes(), 0);
    out_.merged_index_.assign(plan_.kernels.size(), -1);
    position_.assign(g_.num_nodes(), 0);
    const std::vector<NodeId> order = g_.topological_order();
    for (size_t i = 0; i < order.size(); ++i)
      position_[static_cast<size_t>(order[i])] = static_cast<int>(i);
  }

  bool node_in_plan(NodeId n) const {
    const int u = node_unit_.at(static_cast<size_t>(n));
    return u >= 0 && unit_launch_[static_cast<size_t>(u)] >= 0;
  }

  void decide_io() {
    if (!options_.partial) {
      out_.inputs_ = g_.inputs();
      for (TensorId t : g_.outputs()) {
        if (!g_.tensor(t).is_constant()) out_.outputs_.push_back(t);
      }
    } else {
      std::set<TensorId> seen_in, seen_out;
      for (const Kernel& kernel : plan_.kernels) {
        for (sched::UnitId u : kernel.units) {
          for (TensorId t : ug_.unit(u).inputs) {
            const NodeId p = g_.tensor(t).producer;
            if ((p == ir::kNone || !node_in_plan(p)) && seen_in.insert(t).second)
              out_.inputs_.push_back(t);
          }
          for (TensorId t : ug_.unit(u).outputs) {
            bool outside = g_.is_graph_output(t);
            for (NodeId c : g_.tensor(t).consumers) outside |= !node_in_plan(c);
            if (outside && seen_out.insert(t).second) out_.outputs_.push_back(t);
          }
        }
      }
    }
    for (TensorId t : out_.inputs_) out_.persistent_[static_cast<size_t>(t)] = 1;
    for (TensorId t : out_.outputs_) out_.persistent_[static_cast<size_t>(t)] = 1;
  }

  // --- Storages ---------------------------------------------------------------

  int new_storage(const std::string& name, int64_t elements, bool persistent,
                  ir::ElementType type) {
    out_.storages_.push_back({name, elements, persistent, type});
    return static_cast<int>(out_.storages_.size() - 1);
  }

  static Region make_region(const ir::Shape& shape, int storage, int64_t offset,
                            int64_t batch_stride) {
    Region r;
    r.shape = shape;
    r.batch_stride = batch_stride;
    r.storage = storage;
    r.offset = offset;
    return r;
  }

  Region& region(TensorId t) { return out_.regions_.at(static_cast<size_t>(t)); }
  bool placed(TensorId t) const { return out_.regions_.at(static_cast<size_t>(t)).placed(); }

  // The region of an activation: a dense storage of its own unless placed before.
  const Region& region_for(TensorId t) {
    Region& r = region(t);
    if (!r.placed()) {
      const ir::Tensor& tensor = g_.tensor(t);
      IOS_ASSERT(!tensor.is_constant(), "constant '{}' used as an activation", tensor.name);
      const int s = new_storage(tensor.name, ir::num_elements(tensor.shape),
                                out_.persistent_[static_cast<size_t>(t)], tensor.type);
      r = make_region(tensor.shape, s, 0, dense_layout(tensor.shape).batch_stride);
    }
    return r;
  }

  // --- Operator merge -----------------------------------------------------------

  TensorId member_output(sched::UnitId u) const {
    return g_.node(ug_.unit(u).nodes.back()).outputs.at(0);
  }

  void place_merged_outputs() {
    for (size_t k = 0; k < plan_.kernels.size(); ++k) {
      const Kernel& kernel = plan_.kernels[k];
      if (!kernel.merged) continue;
      const sched::MergeCheck check = sched::check_merge(ug_, kernel.units);
      if (!check.spec) {
        std::string ids;
        for (sched::UnitId u : kernel.units)
          ids += (ids.empty() ? "'" : ", '") + ug_.unit(u).id + "'";
        user_error("the plan merges units {} but they cannot merge: {}", ids, check.reason);
      }
      const sched::MergeSpec& spec = *check.spec;
      if (spec.kind == sched::MergeKind::kMatMul) {
        place_merged_product(k, spec);
        continue;
      }
      const ir::Shape& s = g_.tensor(member_output(spec.members.front().unit)).shape;
      // The members' outputs with the merged channels: N, C, spatial...
      ir::Shape shape = s;
      shape.at(1) = spec.out_channels;
      const int64_t plane = ir::num_elements(ir::Shape(s.begin() + 2, s.end()));
      bool persistent = false;
      for (const auto& m : spec.members)
        persistent |= out_.persistent_[static_cast<size_t>(member_output(m.unit))] != 0;
      std::string name = "merged";
      for (const auto& m : spec.members) name += ":" + ug_.unit(m.unit).id;
      const int storage = new_storage(name, ir::num_elements(shape), persistent,
                                      g_.tensor(member_output(spec.members.front().unit)).type);
      out_.merged_index_[k] = static_cast<int>(out_.merges_.size());
      out_.merges_.push_back(spec);
      out_.merged_regions_.push_back(make_region(shape, storage, 0, spec.out_channels * plane));
      for (const auto& m : spec.members) {
        const sched::Unit& unit = ug_.unit(m.unit);
        IOS_ASSERT(!unit.nodes.empty() && unit.nodes.front() == unit.anchor,
                   "merged unit '{}' has a prologue", unit.id);
        const Region slice = make_region(g_.tensor(member_output(m.unit)).shape, storage,
                                         m.channel_offset * plane, spec.out_channels * plane);
        const TensorId out = member_output(m.unit);
        IOS_ASSERT(!placed(out), "tensor '{}' placed twice", g_.tensor(out).name);
        region(out) = slice;
        // The merged convolution writes the slice and the member's epilogue
        // runs on it in place, so every link's input is the slice too (unit
        // formation fuses only sole readers of the same shape).
        for (size_t i = unit.nodes.size() - 1; i-- > 0;) {
          const TensorId t = g_.node(unit.nodes[i]).outputs.at(0);
          const NodeId link = unit.nodes[i + 1];
          IOS_ASSERT(
              g_.tensor(t).consumers.size() == 1 && g_.tensor(t).consumers[0] == link &&
                  !out_.persistent_[static_cast<size_t>(t)] && g_.tensor(t).shape == slice.shape &&
                  is_in_place_elementwise(g_.node(link).op) && !placed(t),
              "merged unit '{}': '{}' cannot be updated in place", unit.id, g_.tensor(t).name);
          region(t) = slice;
          ++out_.in_place_nodes_;
        }
      }
    }
  }

  // A merged matrix product writes a dense storage of its own, [..., sum of
  // the members' columns]; its members' units are placed as if unmerged (the
  // launch copies each member's columns into its product's output, and the
  // member's epilogue runs there in place, see place_epilogues). Region keeps
  // one stride per item, so a last-axis slice is not a region: the copy is
  // the price of that.
  void place_merged_product(size_t k, const sched::MergeSpec& spec) {
    const TensorId first = g_.node(ug_.unit(spec.members.front().unit).anchor).outputs.at(0);
    const ir::Shape shape = spec.output_shape(g_.tensor(first).shape);
    std::string name = "merged";
    for (const auto& m : spec.members) name += ":" + ug_.unit(m.unit).id;
    const int storage = new_storage(name, ir::num_elements(shape), false, g_.tensor(first).type);
    out_.merged_index_[k] = static_cast<int>(out_.merges_.size());
    out_.merges_.push_back(spec);
    out_.merged_regions_.push_back(
        make_region(shape, storage, 0, dense_layout(shape).batch_stride));
  }

  bool merged_product(size_t k) const {
    const int m = out_.merged_index_.at(k);
    return m >= 0 && out_.merges_[static_cast<size_t>(m)].kind == sched::MergeKind::kMatMul;
  }

  // --- Zero-copy concat -----------------------------------------------------------

  void place_concat_inputs() {
    std::vector<NodeId> concats;
    for (const Kernel& kernel : plan_.kernels) {
      for (sched::UnitId u : kernel.units) {
        for (NodeId n : ug_.unit(u).nodes) {
          if (g_.node(n).op == OpKind::kConcat) concats.push_back(n);
        }
      }
    }
    // Outermost first: an inner concat's output is placed before its inputs.
    std::sort(concats.begin(), concats.end(), [&](NodeId a, NodeId b) {
      return position_[static_cast<size_t>(a)] > position_[static_cast<size_t>(b)];
    });
    for (NodeId n : concats) place_concat(n);
  }

  void place_concat(NodeId n) {
    const ir::Node& node = g_.node(n);
    const TensorId out = node.outputs.at(0);
    const ir::Shape& shape = g_.tensor(out).shape;
    const int64_t axis = normalize_axis(node.attr<ir::AxisAttrs>().axis, shape.size());
    if (axis != 1 || shape.size() < 2) return;
    const Region whole = region_for(out);
    const int64_t inner = whole.item_size() / shape[1];
    int64_t channel = 0;
    for (TensorId in : node.inputs) {
      const ir::Tensor& t = g_.tensor(in);
      const int64_t channels = t.shape.size() >= 2 ? t.shape[1] : 0;
      const bool once = std::count(node.inputs.begin(), node.inputs.end(), in) == 1;
      const bool aliasable = !t.is_constant() && t.producer != ir::kNone &&
                             node_in_plan(t.producer) && t.consumers.size() == 1 && once &&
                             !g_.is_graph_output(in) &&
                             !out_.persistent_[static_cast<size_t>(in)] && !placed(in) &&
                             t.shape.size() == shape.size() && t.shape[0] == shape[0];
      if (aliasable) {
        region(in) =
            make_region(t.shape, whole.storage, whole.offset + channel * inner, whole.batch_stride);
        out_.zero_copy_[static_cast<size_t>(in)] = 1;
        ++out_.zero_copy_concat_inputs_;
      }
      channel += channels;
    }
  }

  // --- Epilogue chains --------------------------------------------------------------

  // Whether the only use of `t` is the next node of an element-wise chain in
  // the unit of `first`; `done` holds the nodes already placed.
  bool chain_continues(NodeId first, TensorId t, NodeId* next) const {
    const ir::Tensor& tensor = g_.tensor(t);
    if (tensor.consumers.size() != 1 || g_.is_graph_output(t) ||
        out_.persistent_[static_cast<size_t>(t)] || placed(t)) {
      return false;
    }
    const NodeId m = tensor.consumers[0];
    if (node_unit_[static_cast<size_t>(m)] != node_unit_[static_cast<size_t>(first)]) return false;
    const ir::Node& node = g_.node(m);
    if (!is_in_place_elementwise(node.op) || done_.count(m)) return false;
    if (g_.tensor(node.outputs[0]).type != tensor.type) return false;  // a Cast to another type
    if (g_.tensor(node.outputs[0]).shape != tensor.shape)
      return false;  // would broadcast the chain value
    int uses = 0;
    for (TensorId in : node.inputs) {
      if (in == t) {
        ++uses;
        continue;
      }
      const NodeId p = g_.tensor(in).producer;
      // Another operand must be ready: constant, from outside, or already computed.
      if (p != ir::kNone &&
          node_unit_[static_cast<size_t>(p)] == node_unit_[static_cast<size_t>(m)] &&
          !done_.count(p)) {
        return false;
      }
    }
    if (uses != 1) return false;
    *next = m;
    return true;
  }

  std::vector<NodeId> chain_after(NodeId n) const {
    std::vector<NodeId> chain;
    const OpKind op = g_.node(n).op;
    if (g_.node(n).outputs.size() != 1 || op == OpKind::kConcat || op == OpKind::kSplit)
      return chain;
    TensorId cur = g_.node(n).outputs[0];
    NodeId next = ir::kNone;
    while (chain_continues(n, cur, &next)) {
      chain.push_back(next);
      cur = g_.node(next).outputs[0];
    }
    return chain;
  }

  void read_inputs(NodeId n) {
    for (TensorId t : g_.node(n).inputs) {
      if (t != ir::kNone && !g_.tensor(t).is_constant()) region_for(t);
    }
  }

  // In launch order, each unit's nodes in order: a node not yet placed takes
  // the element-wise chain after it; it and the chain's links write the
  // chain's last output.
  void place_epilogues() {
    for (size_t k = 0; k < plan_.kernels.size(); ++k) {
      const Kernel& kernel = plan_.kernels[k];
      if (kernel.merged && !merged_product(k)) {
        for (sched::UnitId u : kernel.units) {
          for (NodeId n : ug_.unit(u).nodes) {
            done_.insert(n);
            read_inputs(n);
          }
        }
        continue;
      }
      for (sched::UnitId u : kernel.units) {
        for (NodeId n : ug_.unit(u).nodes) {
          if (done_.count(n)) continue;
          done_.insert(n);
          read_inputs(n);
          std::vector<NodeId> chain = chain_after(n);
          for (NodeId m : chain) {
            done_.insert(m);
            out_.in_epilogue_[static_cast<size_t>(m)] = 1;
          }
          if (!chain.empty()) {
            const Region y = region_for(g_.node(chain.back()).outputs[0]);
            region(g_.node(n).outputs[0]) = y;
            for (size_t i = 0; i + 1 < chain.size(); ++i) region(g_.node(chain[i]).outputs[0]) = y;
            for (NodeId m : chain) read_inputs(m);
            out_.in_place_nodes_ += static_cast<int>(chain.size());
          }
          for (TensorId t : g_.node(n).outputs) region_for(t);
          out_.epilogues_[static_cast<size_t>(n)] = std::move(chain);
        }
      }
    }
  }

  // --- Users --------------------------------------------------------------------------

  void collect_users() {
    out_.users_.assign(out_.storages_.size(), {});
    auto use = [&](TensorId t, int k) {
      if (t == ir::kNone || g_.tensor(t).is_constant() || !placed(t)) return;
      auto& u = out_.users_[static_cast<size_t>(region(t).storage)];
      if (u.empty() || u.back() != k) u.push_back(k);
    };
    for (size_t k = 0; k < plan_.kernels.size(); ++k) {
      const int launch = static_cast<int>(k);
      if (out_.merged_index_[k] >= 0) {
        auto& u = out_.users_[static_cast<size_t>(
            out_.merged_regions_[static_cast<size_t>(out_.merged_index_[k])].storage)];
        if (u.empty() || u.back() != launch) u.push_back(launch);
      }
      for (sched::UnitId unit : plan_.kernels[k].units) {
        for (NodeId n : ug_.unit(unit).nodes) {
          for (TensorId t : g_.node(n).inputs) use(t, launch);
          for (TensorId t : g_.node(n).outputs) use(t, launch);
        }
      }
    }
    for (auto& u : out_.users_) {
      std::sort(u.begin(), u.end());
      u.erase(std::unique(u.begin(), u.end()), u.end());
    }
  }

  StoragePlan& out_;
  const sched::UnitGraph& ug_;
  const ir::Graph& g_;
  const ExecPlan& plan_;
  StoragePlanOptions options_;
  std::vector<int> node_unit_, unit_launch_, position_;
  std::set<NodeId> done_;
};

StoragePlan::StoragePlan(const sched::UnitGraph& graph, const ExecPlan& plan,
                         StoragePlanOptions options) {
  IOS_ASSERT(graph.ir() != nullptr, "the storage plan needs a unit graph formed from an IR graph");
  Builder(*this, graph, plan, options).run();
}

const Region& StoragePlan::region(ir::TensorId t) const {
  const Region& r = regions_.at(static_cast<size_t>(t));
  IOS_ASSERT(r.placed(), "tensor {} has no storage in the plan", t);
  return r;
}

const sched::MergeSpec& StoragePlan::merge_spec(int kernel) const {
  const int m = merged_index_.at(static_cast<size_t>(kernel));
  IOS_ASSERT(m >= 0, "kernel {} is not merged", kernel);
  return merges_[static_cast<size_t>(m)];
}

const Region& StoragePlan::merged_region(int kernel) const {
  const int m = merged_index_.at(static_cast<size_t>(kernel));
  IOS_ASSERT(m >= 0, "kernel {} is not merged", kernel);
  return merged_regions_[static_cast<size_t>(m)];
}

int StoragePlan::add_scratch(std::string name, int64_t elements, int kernel, ir::ElementType type) {
  IOS_ASSERT(elements >= 0 && kernel >= 0, "scratch '{}' of {} elements for launch {}", name,
             elements, kernel);
  storages_.push_back({std::move(name), elements, false, type});
  users_.push_back({kernel});
  return static_cast<int>(storages_.size() - 1);
}

std::vector<MemoryRequest> StoragePlan::memory_requests() const {
  std::vector<MemoryRequest> requests(storages_.size());
  for (size_t s = 0; s < storages_.size(); ++s) {
    requests[s] = {storages_[s].bytes(), storages_[s].persistent, users_[s]};
  }
  return requests;
}

}  // namespace ios::exec
