#include "cpu/executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <thread>

#include "core/error.h"
#include "core/log.h"
#include "cpu/kernels.h"
#include "cpu/reference.h"
#include "ir/op_info.h"

namespace ios::cpu {
namespace {

int64_t dense_item_size(const ir::Shape& shape) { return ConstView(nullptr, shape).item_size(); }

// Whether `node` may write its output over activation input `x`: an
// element-wise kernel that reads each element before writing it, with x of
// the output's shape (a constant operand may broadcast).
bool in_place_on(const ir::Graph& graph, const ir::Node& node, ir::TensorId x) {
  if (node.outputs.size() != 1 || graph.tensor(x).shape != graph.tensor(node.outputs[0]).shape) return false;
  if (can_run_in_place(node)) return node.inputs.at(0) == x;  // unary, BatchNorm: the activation is input 0
  if (ir::op_info(node.op).traits.elementwise == ir::Elementwise::kBinary) {
    // x and a constant (which may broadcast); never two activations.
    int activations = 0;
    for (ir::TensorId t : node.inputs) activations += graph.tensor(t).is_constant() ? 0 : 1;
    return activations == 1 && std::count(node.inputs.begin(), node.inputs.end(), x) == 1;
  }
  return false;
}

}  // namespace

CpuExecutor::CpuExecutor(const sched::UnitGraph& graph, const exec::ExecPlan& plan, ExecutorOptions options)
    : graph_(graph), ir_(*graph.ir()) {
  IOS_ASSERT(graph.ir() != nullptr, "the CPU executor needs a unit graph formed from an IR graph");
  threads_ = options.threads > 0 ? options.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  build_program(plan);
  assign_locations();
  plan_buffers();
  logger("cpu")->debug(
      "memory plan: {} storages in {} buffers, {:.1f} MiB (unshared {:.1f} MiB); {} zero-copy concat inputs, {} "
      "in-place nodes, {} merged kernels",
      stats_.storages, stats_.buffers, static_cast<double>(stats_.buffer_bytes) / (1 << 20),
      static_cast<double>(stats_.unshared_bytes) / (1 << 20), stats_.zero_copy_concat_inputs, stats_.in_place_nodes,
      stats_.merged_kernels);
}

CpuExecutor::~CpuExecutor() = default;

// The plan's launches in issue order, flattened into IR nodes; a merged
// kernel becomes one merged convolution followed by its members' epilogues.
void CpuExecutor::build_program(const exec::ExecPlan& plan) {
  std::vector<int> unit_runs(static_cast<size_t>(graph_.size()), 0);
  std::vector<int> node_runs(ir_.num_nodes(), 0);
  for (const exec::Step& step : plan.steps) {
    if (step.kind != exec::Step::Kind::kLaunch) continue;  // events order streams; CPU runs in issue order
    IOS_ASSERT(step.kernel >= 0 && static_cast<size_t>(step.kernel) < plan.kernels.size(), "launch of kernel {}",
               step.kernel);
    const exec::Kernel& kernel = plan.kernels[static_cast<size_t>(step.kernel)];
    for (sched::UnitId u : kernel.units) {
      IOS_ASSERT(u >= 0 && u < graph_.size(), "kernel {} names unit {}", step.kernel, u);
      ++unit_runs[static_cast<size_t>(u)];
    }
    if (!kernel.merged) {
      for (sched::UnitId u : kernel.units) {
        for (ir::NodeId n : graph_.unit(u).nodes) {
          program_.push_back(Instr{n, -1});
          ++node_runs[static_cast<size_t>(n)];
        }
      }
      continue;
    }
    const sched::MergeCheck check = sched::check_merge(graph_, kernel.units);
    if (!check.spec) {
      std::string ids;
      for (sched::UnitId u : kernel.units) ids += fmt::format("{}'{}'", ids.empty() ? "" : ", ", graph_.unit(u).id);
      user_error("the plan merges units {} but they cannot merge: {}", ids, check.reason);
    }
    Merged merged;
    merged.spec = *check.spec;
    merged.weights = sched::assemble_merged_weights(graph_, merged.spec);
    const ir::Tensor& first_out = ir_.tensor(ir_.node(graph_.unit(merged.spec.members.at(0).unit).anchor).outputs.at(0));
    merged.shape = {first_out.shape.at(0), merged.spec.out_channels, first_out.shape.at(2), first_out.shape.at(3)};
    const int index = static_cast<int>(merged_.size());
    merged_.push_back(std::move(merged));
    program_.push_back(Instr{ir::kNone, index});
    for (const sched::MergeMember& member : merged_.back().spec.members) {
      const sched::Unit& unit = graph_.unit(member.unit);
      IOS_ASSERT(!unit.nodes.empty() && unit.nodes.front() == unit.anchor, "merged unit '{}' has a prologue", unit.id);
      ++node_runs[static_cast<size_t>(unit.anchor)];
      for (size_t i = 1; i < unit.nodes.size(); ++i) {
        program_.push_back(Instr{unit.nodes[i], -1});
        ++node_runs[static_cast<size_t>(unit.nodes[i])];
      }
    }
  }
  for (sched::UnitId u = 0; u < graph_.size(); ++u) {
    IOS_ASSERT(unit_runs[static_cast<size_t>(u)] == 1, "the plan launches unit '{}' {} times", graph_.unit(u).id,
               unit_runs[static_cast<size_t>(u)]);
  }
  for (size_t n = 0; n < node_runs.size(); ++n) {
    IOS_ASSERT(node_runs[n] == 1, "IR node {} ('{}', {}) runs {} times", n, ir_.node(static_cast<ir::NodeId>(n)).name,
               ir::op_name(ir_.node(static_cast<ir::NodeId>(n)).op), node_runs[n]);
  }
  stats_.merged_kernels = static_cast<int>(merged_.size());
}

void CpuExecutor::assign_locations() {
  locations_.assign(ir_.num_tensors(), Location{});
  auto new_storage = [&](int64_t size) {
    storages_.push_back(Storage{size, -1});
    return static_cast<int>(storages_.size() - 1);
  };
  // Merged convolutions: each member's convolution output is its slice of
  // the merged temporary.
  for (Merged& m : merged_) {
    m.storage = new_storage(ir::num_elements(m.shape));
    const int64_t plane = m.shape[2] * m.shape[3];
    for (const sched::MergeMember& member : m.spec.members) {
      const ir::TensorId out = ir_.node(graph_.unit(member.unit).anchor).outputs.at(0);
      locations_[static_cast<size_t>(out)] = Location{m.storage, member.channel_offset * plane, m.shape[1] * plane};
    }
  }
  for (ir::TensorId in : ir_.inputs()) {
    const auto& shape = ir_.tensor(in).shape;
    locations_[static_cast<size_t>(in)] = Location{new_storage(ir::num_elements(shape)), 0, dense_item_size(shape)};
  }
  // Consumers before producers, so a producer can take a view of where its
  // consumer writes.
  for (auto it = program_.rbegin(); it != program_.rend(); ++it) {
    if (it->node == ir::kNone) continue;
    for (ir::TensorId t : ir_.node(it->node).outputs) {
      Location& loc = locations_[static_cast<size_t>(t)];
      if (loc.storage >= 0) continue;
      const ir::Tensor& tensor = ir_.tensor(t);
      if (!ir_.is_graph_output(t) && tensor.consumers.size() == 1) {
        const ir::Node& user = ir_.node(tensor.consumers[0]);
        const ir::Tensor& user_out = ir_.tensor(user.outputs.at(0));
        // Zero-copy concat: write straight into the channel slice.
        if (user.op == ir::OpKind::kConcat && user.attr<ir::AxisAttrs>().axis == 1 && tensor.shape.size() == 4 &&
            user_out.shape.size() == 4) {
          const Location& whole = locations_[static_cast<size_t>(user.outputs[0])];
          IOS_ASSERT(whole.storage >= 0, "concat output '{}' placed after its input", user_out.name);
          int64_t channel = 0;
          for (ir::TensorId in : user.inputs) {
            if (in == t) break;
            channel += ir_.tensor(in).shape.at(1);
          }
          loc = Location{whole.storage, whole.offset + channel * tensor.shape[2] * tensor.shape[3], whole.batch_stride};
          ++stats_.zero_copy_concat_inputs;
          continue;
        }
        // In-place element-wise epilogue.
        if (in_place_on(ir_, user, t)) {
          const Location& target = locations_[static_cast<size_t>(user.outputs[0])];
          IOS_ASSERT(target.storage >= 0, "output '{}' placed after its input", user_out.name);
          loc = target;
          ++stats_.in_place_nodes;
          continue;
        }
      }
      loc = Location{new_storage(ir::num_elements(tensor.shape)), 0, dense_item_size(tensor.shape)};
    }
  }
  stats_.storages = static_cast<int>(storages_.size());
}

// Liveness over the program, then a best-fit packing of storages into
// buffers: a buffer is reused once every tensor in its storage is dead.
void CpuExecutor::plan_buffers() {
  constexpr int kNever = std::numeric_limits<int>::max();
  const int end = static_cast<int>(program_.size());
  std::vector<int> first_write(storages_.size(), kNever), last_read(storages_.size(), -1);
  for (ir::TensorId in : ir_.inputs()) first_write[static_cast<size_t>(locations_[static_cast<size_t>(in)].storage)] = -1;
  auto read = [&](ir::TensorId t, int i) {
    if (ir_.tensor(t).is_constant()) return;
    const int s = locations_[static_cast<size_t>(t)].storage;
    IOS_ASSERT(s >= 0, "tensor '{}' has no location", ir_.tensor(t).name);
    IOS_ASSERT(first_write[static_cast<size_t>(s)] < i, "tensor '{}' read before it is written", ir_.tensor(t).name);
    last_read[static_cast<size_t>(s)] = std::max(last_read[static_cast<size_t>(s)], i);
  };
  auto write = [&](int s, int i) {
    first_write[static_cast<size_t>(s)] = std::min(first_write[static_cast<size_t>(s)], i);
    last_read[static_cast<size_t>(s)] = std::max(last_read[static_cast<size_t>(s)], i);
  };
  for (int i = 0; i < end; ++i) {
    const Instr& instr = program_[static_cast<size_t>(i)];
    if (instr.merged >= 0) {
      const Merged& m = merged_[static_cast<size_t>(instr.merged)];
      read(m.spec.input, i);
      write(m.storage, i);
      continue;
    }
    const ir::Node& node = ir_.node(instr.node);
    for (ir::TensorId t : node.inputs) read(t, i);
    for (ir::TensorId t : node.outputs) write(locations_[static_cast<size_t>(t)].storage, i);
  }
  for (ir::TensorId out : ir_.outputs()) {
    if (!ir_.tensor(out).is_constant()) last_read[static_cast<size_t>(locations_[static_cast<size_t>(out)].storage)] = end;
  }
  // Events per program index (shifted by one for the inputs at -1).
  std::vector<std::vector<int>> allocate_at(static_cast<size_t>(end + 2)), release_at(static_cast<size_t>(end + 2));
  for (size_t s = 0; s < storages_.size(); ++s) {
    IOS_ASSERT(first_write[s] != kNever, "storage {} is never written", s);
    allocate_at[static_cast<size_t>(first_write[s] + 1)].push_back(static_cast<int>(s));
    release_at[static_cast<size_t>(last_read[s] + 1)].push_back(static_cast<int>(s));
  }
  std::vector<int> free_buffers;
  for (int i = -1; i <= end; ++i) {
    for (int s : allocate_at[static_cast<size_t>(i + 1)]) {
      const int64_t size = storages_[static_cast<size_t>(s)].size;
      stats_.unshared_bytes += size * static_cast<int64_t>(sizeof(float));
      // Best fit: the smallest free buffer that holds it, else grow the largest.
      auto best = free_buffers.end();
      for (auto b = free_buffers.begin(); b != free_buffers.end(); ++b) {
        const int64_t cap = buffer_sizes_[static_cast<size_t>(*b)];
        if (best == free_buffers.end()) {
          best = b;
          continue;
        }
        const int64_t best_cap = buffer_sizes_[static_cast<size_t>(*best)];
        const bool fits = cap >= size, best_fits = best_cap >= size;
        if ((fits && (!best_fits || cap < best_cap)) || (!fits && !best_fits && cap > best_cap)) best = b;
      }
      int buffer;
      if (best != free_buffers.end()) {
        buffer = *best;
        free_buffers.erase(best);
        buffer_sizes_[static_cast<size_t>(buffer)] = std::max(buffer_sizes_[static_cast<size_t>(buffer)], size);
      } else {
        buffer = static_cast<int>(buffer_sizes_.size());
        buffer_sizes_.push_back(size);
      }
      storages_[static_cast<size_t>(s)].buffer = buffer;
    }
    for (int s : release_at[static_cast<size_t>(i + 1)]) {
      if (i < end) free_buffers.push_back(storages_[static_cast<size_t>(s)].buffer);
    }
  }
  stats_.buffers = static_cast<int>(buffer_sizes_.size());
  for (int64_t size : buffer_sizes_) stats_.buffer_bytes += size * static_cast<int64_t>(sizeof(float));
}

View CpuExecutor::view_of(ir::TensorId tensor) {
  const Location& loc = locations_.at(static_cast<size_t>(tensor));
  IOS_ASSERT(loc.storage >= 0, "tensor '{}' has no location", ir_.tensor(tensor).name);
  float* base = buffers_[static_cast<size_t>(storages_[static_cast<size_t>(loc.storage)].buffer)].data();
  return View(base + loc.offset, ir_.tensor(tensor).shape, loc.batch_stride);
}

ConstView CpuExecutor::const_view_of(ir::TensorId tensor) {
  const ir::Tensor& t = ir_.tensor(tensor);
  if (t.is_constant()) return ConstView(t.data->data(), t.shape);
  return view_of(tensor);
}

void CpuExecutor::execute(const Instr& instr) {
  const KernelContext ctx{threads_};
  if (instr.merged >= 0) {
    const Merged& m = merged_[static_cast<size_t>(instr.merged)];
    float* out = buffers_[static_cast<size_t>(storages_[static_cast<size_t>(m.storage)].buffer)].data();
    conv2d(ctx, const_view_of(m.spec.input), m.weights.weight.data(), m.weights.bias.data(), m.spec.conv,
           View(out, m.shape));
    return;
  }
  const ir::Node& node = ir_.node(instr.node);
  std::vector<ConstView> in;
  in.reserve(node.inputs.size());
  for (ir::TensorId t : node.inputs) in.push_back(const_view_of(t));
  std::vector<View> out;
  out.reserve(node.outputs.size());
  for (ir::TensorId t : node.outputs) out.push_back(view_of(t));
  run_node(ctx, node, in, out);
}

std::map<std::string, exec::HostTensor> CpuExecutor::run(const std::map<std::string, exec::HostTensor>& inputs) {
  check_inputs(ir_, inputs);
  if (buffers_.empty()) {
    buffers_.resize(buffer_sizes_.size());
    for (size_t b = 0; b < buffer_sizes_.size(); ++b) buffers_[b].assign(static_cast<size_t>(buffer_sizes_[b]), 0.0f);
  }
  for (ir::TensorId id : ir_.inputs()) {
    const exec::HostTensor& given = inputs.at(ir_.tensor(id).name);
    const View dst = view_of(id);
    std::memcpy(dst.data, given.data.data(), given.data.size() * sizeof(float));
  }
  for (const Instr& instr : program_) execute(instr);
  std::map<std::string, exec::HostTensor> outputs;
  for (ir::TensorId id : ir_.outputs()) {
    const ir::Tensor& t = ir_.tensor(id);
    exec::HostTensor host(t.shape);
    const ConstView src = const_view_of(id);
    const int64_t item = src.item_size();
    for (int64_t n = 0; n < src.batch(); ++n) {
      std::memcpy(host.data.data() + n * item, src.item(n), static_cast<size_t>(item) * sizeof(float));
    }
    outputs[t.name] = std::move(host);
  }
  return outputs;
}

std::vector<double> CpuExecutor::benchmark(const std::map<std::string, exec::HostTensor>& inputs, int warmup,
                                           int iterations) {
  for (int i = 0; i < warmup; ++i) run(inputs);
  std::vector<double> ms;
  ms.reserve(static_cast<size_t>(std::max(iterations, 0)));
  for (int i = 0; i < iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run(inputs);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return ms;
}

}  // namespace ios::cpu
