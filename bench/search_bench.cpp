// Search-speed benchmark of the IOS DP.
//
//  1. The unpruned, single-entry, concurrent-only DP over the four RandWire
//     blocks of the IOS paper (onnx_models/randwire_graphs; 2.86 million
//     transitions in all) with a synthetic stage cost. Target: < 1 s.
//  2. The full Inception V3 (ONNX model) with the default r = 3, s = 8 and
//     the simulated cost model (H100 profile). Target: < 0.2 s.
// Single-threaded; reports the best of --repeat runs.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>

#include "core/error.h"
#include "cost/device_profile.h"
#include "cost/simulated.h"
#include "onnx/importer.h"
#include "sched/block_dag.h"
#include "sched/ios_dp.h"
#include "sched/scheduler.h"

namespace {

using namespace ios;
using Clock = std::chrono::steady_clock;

// Longest group (sum of its units' weights) plus a per-stage overhead.
class LongestGroupCost : public sched::CostModel {
 public:
  explicit LongestGroupCost(int n) {
    for (int i = 0; i < n; ++i) weight_.push_back(1.0 + (i * 7919 % 13) / 13.0);
  }
  std::string name() const override { return "synthetic"; }
  double stage_latency(const sched::Stage& stage) override {
    double longest = 0.0;
    for (const auto& group : stage.groups) {
      double sum = 0.0;
      for (sched::UnitId u : group) sum += weight_[static_cast<size_t>(u)];
      longest = std::max(longest, sum);
    }
    return longest + 0.3;
  }

 private:
  std::vector<double> weight_;
};

sched::BlockDag read_randwire(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) user_error("cannot read RandWire graph '{}'", file.string());
  int nodes = 0, edges = 0;
  in >> nodes >> edges;
  std::vector<std::pair<int, int>> list;
  std::vector<bool> has_succ(static_cast<size_t>(nodes), false);
  for (int i = 0; i < edges; ++i) {
    int u = 0, v = 0;
    if (!(in >> u >> v)) user_error("'{}' ends after {} of {} edges", file.string(), i, edges);
    if (u > v) std::swap(u, v);
    list.emplace_back(u, v);
    has_succ[static_cast<size_t>(u)] = true;
  }
  for (int u = 0; u < nodes; ++u) {
    if (!has_succ[static_cast<size_t>(u)]) list.emplace_back(u, nodes);  // the sum of the sinks
  }
  return sched::BlockDag::from_edges(nodes + 1, list);
}

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// CPU time of this thread: on a loaded machine wall time also counts waiting.
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

int bench_randwire(const std::filesystem::path& dir, int repeat) {
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(dir)) {
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.path().extension() == ".txt") files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    fmt::print(stderr, "no RandWire graphs in {}\n", dir.string());
    return 1;
  }
  sched::IosOptions options;
  options.strategies = sched::StrategySet::kConcurrent;
  options.group_shape = sched::GroupShape::kSingleEntry;
  options.max_group_units = 0;
  options.max_groups = 0;
  fmt::print("RandWire blocks, unpruned single-entry concurrent-only DP, synthetic cost\n");
  fmt::print("{:<22} {:>3} {:>3} {:>7} {:>11} {:>8} {:>9} {:>9}\n", "graph", "n", "d", "states",
             "transitions", "stages", "wall ms", "cpu ms");
  double total_ms = 0.0;
  double total_cpu = 0.0;
  int64_t total_transitions = 0;
  for (const auto& file : files) {
    const sched::BlockDag dag = read_randwire(file);
    double best = std::numeric_limits<double>::infinity();
    double best_cpu = std::numeric_limits<double>::infinity();
    sched::BlockSolution solution;
    for (int r = 0; r < repeat; ++r) {
      LongestGroupCost cost(dag.n);
      const auto start = Clock::now();
      const double cpu_start = thread_cpu_ms();
      solution = sched::solve_block(dag, options, cost);
      best_cpu = std::min(best_cpu, thread_cpu_ms() - cpu_start);
      best = std::min(best, ms_since(start));
    }
    fmt::print("{:<22} {:>3} {:>3} {:>7} {:>11} {:>8} {:>9.1f} {:>9.1f}\n", file.filename().string(),
               dag.n, dag.width(), solution.states, solution.transitions, solution.stages_costed, best,
               best_cpu);
    total_ms += best;
    total_cpu += best_cpu;
    total_transitions += solution.transitions;
  }
  fmt::print("total: {} transitions in {:.1f} ms wall, {:.1f} ms cpu ({:.0f} ns cpu per transition; "
             "target < 1000 ms)\n\n",
             total_transitions, total_ms, total_cpu, 1e6 * total_cpu / static_cast<double>(total_transitions));
  return 0;
}

int bench_model(const std::string& model, int64_t batch, const std::string& profile, int repeat) {
  const auto t0 = Clock::now();
  // The exported models have a symbolic batch; the benchmark sets it itself.
  onnx::ImportOptions import_options;
  import_options.batch = batch;
  onnx::ImportedModel imported = onnx::import_model(model, import_options);
  const double import_ms = ms_since(t0);
  const auto t1 = Clock::now();
  const sched::UnitGraph graph = sched::UnitGraph::form(imported.graph);
  const double form_ms = ms_since(t1);
  const auto& entry = sched::find_scheduler("ios");
  const sched::Params params = sched::Params::parse("ios", entry.params, "r=3,s=8");
  double best = std::numeric_limits<double>::infinity();
  double best_cpu = std::numeric_limits<double>::infinity();
  sched::SearchStats stats;
  sched::Schedule schedule;
  for (int r = 0; r < repeat; ++r) {
    // A fresh cost model each time: nothing is remembered between runs.
    cost::SimulatedCostModel cost(graph, cost::load_device_profile(profile));
    stats = {};
    const auto start = Clock::now();
    const double cpu_start = thread_cpu_ms();
    schedule = entry.make(params)->run(graph, cost, stats);
    best_cpu = std::min(best_cpu, thread_cpu_ms() - cpu_start);
    best = std::min(best, ms_since(start));
  }
  int64_t transitions = 0, states = 0, stages = 0;
  int max_units = 0, max_width = 0;
  for (const auto& b : stats.blocks) {
    transitions += b.transitions;
    states += b.states;
    stages += b.stages_costed;
    max_units = std::max(max_units, b.units);
    max_width = std::max(max_width, b.width);
  }
  fmt::print("{} (batch {}): import {:.0f} ms, unit formation {:.1f} ms\n", model, imported.batch, import_ms,
             form_ms);
  fmt::print("ios r=3 s=8, simulated cost ({}): {} units, {} blocks (largest {} units, widest {}),\n"
             "  {} states, {} transitions, {} stages costed, predicted {:.3f} ms\n"
             "  search (best of {}): {:.1f} ms wall, {:.1f} ms cpu (target < 200 ms)\n",
             profile, graph.size(), stats.blocks.size(), max_units, max_width, states, transitions,
             stages, schedule.predicted_latency_ms, repeat, best, best_cpu);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Search-speed benchmark of the IOS dynamic program"};
  std::string randwire_dir = std::string(IOS_RANDWIRE_GRAPHS_DIR);
  std::string model = std::string(IOS_MODELS_DIR) + "/inception_v3-bdyn.onnx";
  int64_t batch = 1;
  std::string profile = "h100";
  int repeat = 3;
  app.add_option("--randwire-dir", randwire_dir, "folder of RandWire graph files");
  app.add_option("--model", model, "ONNX model for the full-network run (skipped when absent)");
  app.add_option("--batch", batch, "batch size the model is imported at")->check(CLI::Range(1, 1 << 20));
  app.add_option("--profile", profile, "device profile of the simulated cost model");
  app.add_option("--repeat", repeat, "runs per measurement (the best is reported)")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    int rc = bench_randwire(randwire_dir, repeat);
    if (std::filesystem::exists(model)) {
      rc |= bench_model(model, batch, profile, repeat);
    } else {
      fmt::print("{} not found: full-network run skipped\n", model);
    }
    return rc;
  } catch (const ios::Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return static_cast<int>(e.exit_code());
  }
}
