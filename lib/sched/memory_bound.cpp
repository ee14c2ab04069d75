#include "sched/memory_bound.h"

#include <algorithm>

#include "core/error.h"
#include "sched/ios_dp.h"  // stage_mask

namespace ios::sched {
namespace {

// Per unit of the whole graph: its non-persistent output tensors and, per
// tensor, the units reading it; and the persistent bytes.
struct UnitTensors {
  struct Out {
    int64_t bytes = 0;
    std::vector<UnitId> readers;  // sorted, unique
  };
  std::vector<std::vector<Out>> outs;  // per unit
  int64_t persistent = 0;
};

int64_t tensor_bytes(const ir::Graph& g, ir::TensorId t) { return ir::tensor_bytes(g.tensor(t)); }

UnitTensors unit_tensors(const UnitGraph& graph) {
  IOS_ASSERT(graph.ir() != nullptr, "a memory bound needs a unit graph formed from an IR graph");
  const ir::Graph& g = *graph.ir();
  std::vector<std::vector<UnitId>> readers(g.num_tensors());
  for (UnitId u = 0; u < graph.size(); ++u) {
    for (ir::TensorId t : graph.unit(u).inputs) readers[static_cast<size_t>(t)].push_back(u);
  }
  std::vector<char> persistent(g.num_tensors(), 0);
  UnitTensors out;
  for (ir::TensorId t : g.inputs()) {
    if (!persistent[static_cast<size_t>(t)]) out.persistent += tensor_bytes(g, t);
    persistent[static_cast<size_t>(t)] = 1;
  }
  for (ir::TensorId t : g.outputs()) {
    if (g.tensor(t).is_constant() || persistent[static_cast<size_t>(t)]) continue;
    out.persistent += tensor_bytes(g, t);
    persistent[static_cast<size_t>(t)] = 1;
  }
  out.outs.resize(static_cast<size_t>(graph.size()));
  for (UnitId u = 0; u < graph.size(); ++u) {
    for (ir::TensorId t : graph.unit(u).outputs) {
      if (g.tensor(t).is_constant() || persistent[static_cast<size_t>(t)]) continue;
      std::vector<UnitId> r = readers[static_cast<size_t>(t)];
      std::sort(r.begin(), r.end());
      r.erase(std::unique(r.begin(), r.end()), r.end());
      out.outs[static_cast<size_t>(u)].push_back({tensor_bytes(g, t), std::move(r)});
    }
  }
  return out;
}

}  // namespace

int64_t predicted_conv_workspace(int64_t batch, int64_t in_channels, const ir::ConvAttrs& conv, int64_t out_plane) {
  auto all_equal = [](const ir::Dims& v, int64_t x) {
    return std::all_of(v.begin(), v.end(), [x](int64_t e) { return e == x; });
  };
  const bool pointwise =
      all_equal(conv.kernel, 1) && all_equal(conv.stride, 1) && all_equal(conv.pads, 0);
  if (pointwise) return 0;
  const int64_t per_group = in_channels / std::max<int64_t>(conv.group, 1);
  const int64_t bytes = batch * per_group * ir::num_elements(conv.kernel) * out_plane *
                        static_cast<int64_t>(sizeof(float));
  return std::min(bytes, kPredictedWorkspaceCap);
}

int64_t predicted_unit_workspace(const ir::Graph& graph, const Unit& unit) {
  int64_t most = 0;
  for (ir::NodeId n : unit.nodes) {
    const ir::Node& node = graph.node(n);
    if (node.op != ir::OpKind::kConv) continue;
    const ir::Shape& in = graph.tensor(node.inputs.at(0)).shape;
    const ir::Shape& out = graph.tensor(node.outputs.at(0)).shape;
    if (in.size() < 3 || out.size() != in.size()) continue;
    const int64_t out_volume = ir::num_elements(ir::Shape(out.begin() + 2, out.end()));
    most = std::max(most,
                    predicted_conv_workspace(in[0], in[1], node.attr<ir::ConvAttrs>(), out_volume));
  }
  return most;
}

int64_t BlockMemory::peak(const BlockDag& dag, const std::vector<Stage>& stages) const {
  uint64_t done = 0;
  int64_t most = 0;
  for (const Stage& stage : stages) {
    const uint64_t mask = stage_mask(dag, stage);
    most = std::max(most, stage_bytes(done, mask));
    done |= mask;
  }
  return most;
}

std::vector<BlockMemory> block_memories(const UnitGraph& graph, int64_t bound) {
  const UnitTensors tensors = unit_tensors(graph);
  const std::vector<Block>& blocks = graph.blocks();
  std::vector<int> block_of(static_cast<size_t>(graph.size()), -1);
  for (size_t b = 0; b < blocks.size(); ++b) {
    for (UnitId u = blocks[b].begin; u < blocks[b].end; ++u) block_of[static_cast<size_t>(u)] = static_cast<int>(b);
  }
  std::vector<BlockMemory> out(blocks.size());
  for (size_t b = 0; b < blocks.size(); ++b) {
    out[b].bound = bound;
    out[b].carried = tensors.persistent;
  }
  for (UnitId u = 0; u < graph.size(); ++u) {
    const int home = block_of[static_cast<size_t>(u)];
    const Block& hb = blocks[static_cast<size_t>(home)];
    BlockMemory& hm = out[static_cast<size_t>(home)];
    const int local = u - hb.begin;
    hm.workspace[static_cast<size_t>(local)] = predicted_unit_workspace(*graph.ir(), graph.unit(u));
    for (const UnitTensors::Out& o : tensors.outs[static_cast<size_t>(u)]) {
      hm.out_bytes[static_cast<size_t>(local)] += o.bytes;
      int last = home;
      for (UnitId r : o.readers) last = std::max(last, block_of[static_cast<size_t>(r)]);
      if (last > home) hm.escapes |= bit(local);
      for (UnitId r : o.readers) {
        if (block_of[static_cast<size_t>(r)] == home) hm.readers[static_cast<size_t>(local)] |= bit(r - hb.begin);
      }
      // Blocks after the home block up to the last reader's.
      for (int b = home + 1; b <= last; ++b) {
        BlockMemory& m = out[static_cast<size_t>(b)];
        if (b < last) {
          m.carried += o.bytes;
          continue;
        }
        uint64_t mask = 0;
        for (UnitId r : o.readers) {
          if (block_of[static_cast<size_t>(r)] == b) mask |= bit(r - blocks[static_cast<size_t>(b)].begin);
        }
        m.inputs.emplace_back(o.bytes, mask);
      }
    }
  }
  return out;
}

int64_t staged_live_peak(const UnitGraph& graph, const StagedSchedule& staged) {
  const UnitTensors tensors = unit_tensors(graph);
  std::vector<char> done(static_cast<size_t>(graph.size()), 0);
  int64_t most = 0;
  for (const Stage& stage : staged.stages) {
    int64_t live = tensors.persistent;
    std::vector<char> in_stage(static_cast<size_t>(graph.size()), 0);
    for (const auto& group : stage.groups) {
      for (UnitId u : group) in_stage[static_cast<size_t>(u)] = 1;
    }
    for (UnitId u = 0; u < graph.size(); ++u) {
      if (in_stage[static_cast<size_t>(u)]) live += predicted_unit_workspace(*graph.ir(), graph.unit(u));
      for (const UnitTensors::Out& o : tensors.outs[static_cast<size_t>(u)]) {
        if (in_stage[static_cast<size_t>(u)]) {
          live += o.bytes;
        } else if (done[static_cast<size_t>(u)] &&
                   std::any_of(o.readers.begin(), o.readers.end(), [&](UnitId r) { return !done[static_cast<size_t>(r)]; })) {
          live += o.bytes;
        }
      }
    }
    most = std::max(most, live);
    for (UnitId u = 0; u < graph.size(); ++u) done[static_cast<size_t>(u)] |= in_stage[static_cast<size_t>(u)];
  }
  return most;
}

}  // namespace ios::sched
