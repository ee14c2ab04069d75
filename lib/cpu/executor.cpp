#include "cpu/executor.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <thread>

#include "core/error.h"
#include "core/log.h"
#include "cpu/kernels.h"
#include "cpu/reference.h"
#include "exec/memory_layout.h"
#include "exec/schedule_memory.h"
#include "ir/element_types.h"
#include "ir/half_conversion.h"
#include "ir/op_info.h"

namespace ios::cpu {

CpuExecutor::CpuExecutor(const sched::UnitGraph& graph, const exec::ExecPlan& plan,
                         ExecutorOptions options, std::optional<MemoryBudget> budget)
    : graph_(graph), ir_(*graph.ir()), storage_(graph, plan), allocations_(options.allocations) {
  threads_ = options.threads > 0 ? options.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  build_program(plan);
  place_storages(plan);
  check_memory(budget ? *budget : current_memory_budget());
  logger("cpu")->debug(
      "memory plan: {} storages in {} buffers, {:.1f} MiB (unshared {:.1f} MiB); {} zero-copy concat inputs, {} "
      "in-place nodes, {} merged kernels",
      stats_.storages, stats_.buffers, static_cast<double>(stats_.buffer_bytes) / (1 << 20),
      static_cast<double>(stats_.unshared_bytes) / (1 << 20), stats_.zero_copy_concat_inputs, stats_.in_place_nodes,
      stats_.merged_kernels);
}

CpuExecutor::~CpuExecutor() = default;

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// Address space the process needs beyond its buffers: thread stacks, the
// allocator's per-thread arenas, libraries loaded later.
constexpr int64_t kAddressSpaceMargin = 256 * kMiB;

std::string mib(int64_t bytes) { return fmt::format("{} MiB", (bytes + kMiB - 1) / kMiB); }

// Rounds every element of `v` to `type`: what storing it in that type keeps.
void round_view(const View& v, ir::ElementType type) {
  if (!ir::is_half(type)) return;
  const int64_t item = v.item_size();
  for (int64_t n = 0; n < v.batch(); ++n) {
    float* p = v.item(n);
    for (int64_t k = 0; k < item; ++k) p[k] = ir::round_to(p[k], type);
  }
}

// How many elements of `v` are inf or NaN.
int64_t non_finite(const ConstView& v) {
  int64_t count = 0;
  const int64_t item = v.item_size();
  for (int64_t n = 0; n < v.batch(); ++n) {
    const float* p = v.item(n);
    for (int64_t k = 0; k < item; ++k) count += std::isfinite(p[k]) ? 0 : 1;
  }
  return count;
}

int64_t host_bytes(const ir::Tensor& t) {  // floats, whatever the type
  return ir::num_elements(t.shape) * static_cast<int64_t>(sizeof(float));
}

}  // namespace

MemoryBudget current_memory_budget() {
  MemoryBudget budget;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) budget.physical_bytes = static_cast<int64_t>(pages) * page;
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    budget.address_space_limit = static_cast<int64_t>(
        std::min<rlim_t>(limit.rlim_cur, static_cast<rlim_t>(std::numeric_limits<int64_t>::max())));
    // /proc/self/statm's first field: the pages the process maps now.
    std::ifstream statm("/proc/self/statm");
    int64_t mapped_pages = 0;
    if (statm >> mapped_pages && page > 0) budget.address_space_used = mapped_pages * page;
  }
  return budget;
}

int64_t thread_address_space(int threads) {
  if (threads <= 1) return 0;
  // glibc gives each thread a stack of RLIMIT_STACK's soft limit (32 MiB
  // when unlimited). Allocator arenas that threads may add come out of the
  // fixed margin.
  int64_t stack = 32 * kMiB;
  rlimit limit{};
  if (getrlimit(RLIMIT_STACK, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur > 0) {
    stack = static_cast<int64_t>(std::min<rlim_t>(limit.rlim_cur, rlim_t{1} << 40));
  }
  return (threads - 1) * stack;
}

void check_memory_budget(int64_t new_bytes, int64_t resident_bytes, const std::string& what,
                         const MemoryBudget& budget, int threads) {
  if (budget.physical_bytes > 0 && new_bytes + resident_bytes > budget.physical_bytes) {
    user_error("not enough memory: the CPU backend needs {} ({}) but the machine has {} of "
               "physical memory; lower --batch or use a smaller input shape",
               mib(new_bytes + resident_bytes), what, mib(budget.physical_bytes));
  }
  if (budget.address_space_limit >= 0) {
    const int64_t left = budget.address_space_limit - budget.address_space_used;
    const int64_t margin = kAddressSpaceMargin + thread_address_space(threads);
    if (new_bytes + margin > left) {
      user_error("not enough memory: the CPU backend needs {} more ({}) plus {} for {} thread{}, but "
                 "the address-space limit (ulimit -v) of {} leaves {}; lower --batch{} or raise "
                 "the limit",
                 mib(new_bytes), what, mib(margin), threads, threads == 1 ? "" : "s",
                 mib(budget.address_space_limit), mib(std::max<int64_t>(left, 0)),
                 threads > 1 ? " or --threads" : "");
    }
  }
}

// Before anything large is allocated: a plan that does not fit is a user
// error naming the sizes, not a std::bad_alloc halfway through a run.
void CpuExecutor::check_memory(const MemoryBudget& budget) const {
  int64_t weights = 0, inputs = 0, outputs = 0;
  for (const ir::Tensor& t : ir_.tensors()) {
    if (t.is_constant()) weights += static_cast<int64_t>(t.data->size() * sizeof(float));
  }
  const int64_t arena_bytes = arena_elements_ * static_cast<int64_t>(sizeof(float));
  for (ir::TensorId id : ir_.inputs()) inputs += host_bytes(ir_.tensor(id));
  for (ir::TensorId id : ir_.outputs()) outputs += host_bytes(ir_.tensor(id));
  const std::string what = fmt::format("activations {}, outputs {}, weights {}, inputs {}",
                                       mib(arena_bytes), mib(outputs), mib(weights), mib(inputs));
  check_memory_budget(arena_bytes + outputs, weights + inputs, what, budget, threads_);
}

// The plan's launches in issue order, flattened into IR nodes; a merged
// kernel becomes one merged convolution (or matrix product, which also fills
// its members' product outputs) followed by its members' epilogues.
void CpuExecutor::build_program(const exec::ExecPlan& plan) {
  rounds_ = ir::count_types(ir_).any_half();
  // Whether node n's output is stored by a kernel: not a link inside an
  // in-place element-wise chain, and not an element-wise node whose chain
  // follows in the same kernel (cuda/op_elementwise.cpp).
  std::vector<char> stored(ir_.num_nodes(), 1);
  for (size_t n = 0; n < ir_.num_nodes(); ++n) {
    const std::vector<ir::NodeId>& chain = storage_.epilogue(static_cast<ir::NodeId>(n));
    if (chain.empty()) continue;
    if (ir::is_elementwise(ir_.node(static_cast<ir::NodeId>(n)).op)) stored[n] = 0;
    for (size_t i = 0; i + 1 < chain.size(); ++i) stored[static_cast<size_t>(chain[i])] = 0;
  }
  auto stores_output = [&](ir::NodeId n) { return stored[static_cast<size_t>(n)] != 0; };
  // Whether an output of node n shares a storage with one of its activation
  // inputs (the storage plan runs element-wise nodes in place).
  auto in_place = [&](ir::NodeId n) {
    const ir::Node& node = ir_.node(n);
    for (ir::TensorId in : node.inputs) {
      if (ir_.tensor(in).is_constant()) continue;
      for (ir::TensorId out : node.outputs) {
        if (storage_.region(in).storage == storage_.region(out).storage) return true;
      }
    }
    return false;
  };
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
          program_.push_back(Instr{n, -1, stores_output(n), in_place(n)});
          ++node_runs[static_cast<size_t>(n)];
        }
      }
      continue;
    }
    // The storage plan checked the merge; it also owns the spec.
    Merged merged;
    merged.spec = &storage_.merge_spec(step.kernel);
    merged.weights = sched::assemble_merged_weights(graph_, *merged.spec);
    merged.counted = exec::CountedAllocation(
        allocations_, exec::AllocationKind::kWeights,
        static_cast<int64_t>((merged.weights.weight.size() + merged.weights.bias.size()) * sizeof(float)));
    merged.region = storage_.merged_region(step.kernel);
    const int index = static_cast<int>(merged_.size());
    merged_.push_back(std::move(merged));
    program_.push_back(Instr{ir::kNone, index});
    for (const sched::MergeMember& member : merged_.back().spec->members) {
      const sched::Unit& unit = graph_.unit(member.unit);
      IOS_ASSERT(!unit.nodes.empty() && unit.nodes.front() == unit.anchor, "merged unit '{}' has a prologue", unit.id);
      // The storage plan placed a merged product's epilogue like an unmerged
      // unit's and a merged convolution's on its slice; both run node by node.
      ++node_runs[static_cast<size_t>(unit.anchor)];
      // One element-wise kernel runs a merged convolution's epilogues.
      const bool product = merged_.back().spec->kind == sched::MergeKind::kMatMul;
      for (size_t i = 1; i < unit.nodes.size(); ++i) {
        program_.push_back(
            Instr{unit.nodes[i], -1,
                  product ? stores_output(unit.nodes[i]) : i + 1 == unit.nodes.size(),
                  in_place(unit.nodes[i])});
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

// The storage plan's storages placed in one arena: two share memory only
// when the plan orders every use of one before every use of the other, which
// the issue order (a valid sequential execution) respects.
void CpuExecutor::place_storages(const exec::ExecPlan& plan) {
  const std::vector<exec::MemoryRequest> requests = storage_.memory_requests();
  const exec::HappensBefore order(static_cast<int>(plan.kernels.size()), std::max(plan.num_streams, 1),
                                  plan.num_events, plan.steps);
  // The alignment the schedule's reported arena assumes (exec/schedule_memory.h),
  // so the figure ios-optimize reports is the arena allocated here.
  constexpr int64_t kAlignment = exec::kArenaAlignment;
  const exec::MemoryLayout layout = exec::plan_memory(requests, order, kAlignment);
  layout_bytes_per_float_ = rounds_ ? 2 : static_cast<int64_t>(sizeof(float));  // set by build_program
  storage_offsets_.resize(requests.size());
  std::set<int64_t> places;
  for (size_t s = 0; s < requests.size(); ++s) {
    IOS_ASSERT(layout.offsets[s] % layout_bytes_per_float_ == 0, "storage {} misaligned", s);
    storage_offsets_[s] = layout.offsets[s] / layout_bytes_per_float_;
    places.insert(layout.offsets[s]);
  }
  arena_elements_ = (layout.total_bytes + layout_bytes_per_float_ - 1) / layout_bytes_per_float_;
  stats_.storages = static_cast<int>(requests.size());
  stats_.buffers = static_cast<int>(places.size());
  stats_.buffer_bytes = layout.total_bytes;
  stats_.unshared_bytes = layout.unshared_bytes;
  stats_.zero_copy_concat_inputs = storage_.zero_copy_concat_inputs();
  stats_.in_place_nodes = storage_.in_place_nodes();
}

float* CpuExecutor::data_of(const exec::Region& region) {
  IOS_ASSERT(region.placed(), "a region without storage");
  return arena_.data() + storage_offsets_.at(static_cast<size_t>(region.storage)) + region.offset;
}

View CpuExecutor::view_of(ir::TensorId tensor) {
  const exec::Region& region = storage_.region(tensor);
  return View(data_of(region), region.shape, region.batch_stride);
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
    if (m.spec->kind == sched::MergeKind::kMatMul) {
      execute_merged_product(m);
      return;
    }
    conv(ctx, const_view_of(m.spec->input), m.weights.weight.data(), m.weights.bias.data(),
         m.spec->conv, View(data_of(m.region), m.region.shape, m.region.batch_stride));
    round_outputs(instr, std::nullopt);
    return;
  }
  const ir::Node& node = ir_.node(instr.node);
  // An in-place node overwrites its input: whether the input was finite is
  // known only before it runs (a half-precision graph's overflow check).
  std::optional<bool> finite_before;
  if (rounds_ && instr.in_place) finite_before = inputs_finite(node);
  std::vector<ConstView> in;
  in.reserve(node.inputs.size());
  for (ir::TensorId t : node.inputs) in.push_back(const_view_of(t));
  std::vector<View> out;
  out.reserve(node.outputs.size());
  for (ir::TensorId t : node.outputs) out.push_back(view_of(t));
  run_node(ctx, node, in, out);
  round_outputs(instr, finite_before);
}

bool CpuExecutor::inputs_finite(const ir::Node& node) {
  for (ir::TensorId in : node.inputs) {
    if (non_finite(const_view_of(in)) != 0) return false;
  }
  return true;
}

void CpuExecutor::round_outputs(const Instr& instr, std::optional<bool> finite_before) {
  if (!rounds_) return;  // a float32 model runs as before
  if (instr.merged >= 0) {
    const Merged& m = merged_[static_cast<size_t>(instr.merged)];
    const ir::ElementType type = storage_.storages().at(static_cast<size_t>(m.region.storage)).type;
    round_view(View(data_of(m.region), m.region.shape, m.region.batch_stride), type);
    // Each member's output is its slice of the merged output: an overflow
    // is the member's, as in the sequential schedule.
    const bool input_finite = non_finite(const_view_of(m.spec->input)) == 0;
    for (const sched::MergeMember& member : m.spec->members) {
      const ir::Node& anchor = ir_.node(graph_.unit(member.unit).anchor);
      check_finite(anchor, anchor.outputs.at(0), input_finite);
    }
    return;
  }
  const ir::Node& node = ir_.node(instr.node);
  if (instr.rounds) {
    for (ir::TensorId t : node.outputs) round_view(view_of(t), ir_.tensor(t).type);
  }
  // Every node's outputs are checked, a link of an in-place chain too (its
  // value is float32 until the chain's last node stores it).
  for (ir::TensorId t : node.outputs) check_finite(node, t, finite_before);
}

// Overflow is never passed on silently: an output that is inf or NaN where
// every input was finite names its node (docs/cli.md, *Precision*).
// `finite_before`: whether the inputs were finite, where the node overwrote
// them; otherwise they are read now.
void CpuExecutor::check_finite(const ir::Node& node, ir::TensorId t, std::optional<bool> finite_before) {
  const int64_t bad = non_finite(view_of(t));
  if (bad == 0) return;
  if (finite_before ? !*finite_before : !inputs_finite(node)) return;
  const ir::Tensor& out = ir_.tensor(t);
  const std::string name = node.name.empty() ? out.name : node.name;
  user_error(
      "node '{}' ({}) wrote {} of {} values of '{}' as inf or NaN from finite inputs: they "
      "overflow {} "
      "(largest {}); keep the node in float32 (ios-optimize --keep-fp32 {}) or scale the model's "
      "values down",
      name, ir::op_name(node.op), bad, ir::num_elements(out.shape), out.name,
      ir::type_name(out.type), ir::max_finite(out.type),
      node.name.empty() ? std::string(ir::op_name(node.op))
                        : ir::keep_fp32_argument(node.name, ir::op_name(node.op)));
}

// One product of the shared input with the assembled weights [K, sum N_i]
// into the merged temporary, its bias (the Gemm members' C) added, then each
// member's columns copied into its product's output, where its epilogue runs.
void CpuExecutor::execute_merged_product(const Merged& m) {
  const KernelContext ctx{threads_};
  const sched::MergeSpec& spec = *m.spec;
  const View all(data_of(m.region), m.region.shape, m.region.batch_stride);
  IOS_ASSERT(all.dense() && all.size() == spec.rows * spec.out_channels,
             "merged product output {} for {} x {}", ir::to_string(all.shape), spec.rows,
             spec.out_channels);
  matmul(ctx, const_view_of(spec.input),
         ConstView(m.weights.weight.data(), {spec.in_channels, spec.out_channels}), all);
  const int64_t total = spec.out_channels;
  for (int64_t r = 0; r < spec.rows; ++r) {
    float* row = all.data + r * total;
    for (int64_t c = 0; c < total; ++c) row[c] += m.weights.bias[static_cast<size_t>(c)];
  }
  if (rounds_) round_view(all, storage_.storages().at(static_cast<size_t>(m.region.storage)).type);
  for (const sched::MergeMember& member : spec.members) {
    const View y = view_of(ir_.node(graph_.unit(member.unit).anchor).outputs.at(0));
    const int64_t n = member.out_channels;
    const int64_t rows_per_item = y.item_size() / n;
    IOS_ASSERT(y.batch() * rows_per_item == spec.rows && y.shape.back() == n,
               "member '{}' output {} in a {} x {} merge", graph_.unit(member.unit).id,
               ir::to_string(y.shape), spec.rows, total);
    for (int64_t b = 0; b < y.batch(); ++b) {
      for (int64_t r = 0; r < rows_per_item; ++r) {
        const float* src = all.data + (b * rows_per_item + r) * total + member.channel_offset;
        std::memcpy(y.item(b) + r * n, src, static_cast<size_t>(n) * sizeof(float));
      }
    }
  }
  if (!rounds_) return;
  // Each member's columns are its product's output: an overflow is the
  // member's, as in the sequential schedule.
  const bool input_finite = non_finite(const_view_of(spec.input)) == 0;
  for (const sched::MergeMember& member : spec.members) {
    const ir::Node& anchor = ir_.node(graph_.unit(member.unit).anchor);
    check_finite(anchor, anchor.outputs.at(0), input_finite);
  }
}

std::map<std::string, exec::HostTensor> CpuExecutor::run(const std::map<std::string, exec::HostTensor>& inputs) {
  check_inputs(ir_, inputs);
  if (arena_.empty() && arena_elements_ > 0) {
    arena_.assign(static_cast<size_t>(arena_elements_), 0.0f);
    arena_counted_ = exec::CountedAllocation(allocations_, exec::AllocationKind::kActivations,
                                             arena_elements_ * static_cast<int64_t>(sizeof(float)));
  }
  for (ir::TensorId id : ir_.inputs()) {
    const exec::HostTensor& given = inputs.at(ir_.tensor(id).name);
    const View dst = view_of(id);
    std::memcpy(dst.data, given.data.data(), given.data.size() * sizeof(float));
    round_view(dst, ir_.tensor(id).type);  // what the upload to a 16-bit input stores
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
