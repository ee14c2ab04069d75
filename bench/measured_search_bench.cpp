// Benchmark of the budgeted measured search (cost/budgeted.h) against the
// oracle device (cost/oracle_device.h), which plays the GPU.
//
// For each model, the IOS search (r=3, s=8, no time limit, one thread) runs
//  (a) with every stage measured: the oracle as the cost model, as
//      `--cost measured --profile-budget all` does;
//  (b) budgeted, at each --budget (stages; "all" for none) and --optimism;
//  (c) with the simulator alone (the search's own profile, no question).
// Each run gets a fresh oracle, so the questions of one do not help another.
// Reported: questions asked of the oracle, and the chosen schedule's oracle
// latency (the sum of its stages' oracle latencies, the quantity the search
// minimises, not counted as questions), relative to (a)'s.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "cost/budgeted.h"
#include "cost/device_profile.h"
#include "cost/oracle_device.h"
#include "cost/simulated.h"
#include "onnx/importer.h"
#include "sched/scheduler.h"

namespace {

using namespace ios;
using Clock = std::chrono::steady_clock;

struct Settings {
  std::string csv_path;  // also write the rows here
  std::FILE* csv = nullptr;
  std::string profile = "h100";
  cost::OracleOptions oracle;
  std::vector<std::string> budgets = {"200", "500", "1000", "5000"};
  std::vector<double> optimism = {0.25};
  double own_weight = 0.5;
};

struct Outcome {
  int64_t questions = 0;
  double oracle_ms = 0.0;
  double seconds = 0.0;
  cost::BudgetCounts counts;
  int64_t predicted_stages = 0;  // of the chosen schedule
};

sched::Schedule run_ios(const sched::UnitGraph& graph, sched::CostModel& cost) {
  const auto& entry = sched::find_scheduler("ios");
  std::unique_ptr<sched::Scheduler> ios = entry.make(sched::Params::parse("ios", entry.params, ""));
  ios->set_threads(1);
  sched::SearchStats stats;
  return ios->run(graph, cost, stats);
}

double oracle_latency(const sched::UnitGraph& graph, const cost::DeviceProfile& profile,
                      const Settings& s, const sched::Schedule& schedule) {
  return cost::OracleDevice(graph, profile, s.oracle).truth(schedule);
}

int64_t parse_budget(const std::string& text) {
  if (text == "all") return -1;
  return std::stoll(text);
}

void bench_model(const std::string& path, int64_t batch, const Settings& s) {
  onnx::ImportOptions import_options;
  import_options.batch = batch;
  const onnx::ImportedModel imported = onnx::import_model(path, import_options);
  const sched::UnitGraph graph = sched::UnitGraph::form(imported.graph);
  const cost::DeviceProfile profile = cost::load_device_profile(s.profile);

  auto timed = [](auto&& fn) {
    const auto start = Clock::now();
    fn();
    return std::chrono::duration<double>(Clock::now() - start).count();
  };

  Outcome full;
  full.seconds = timed([&] {
    cost::OracleDevice oracle(graph, profile, s.oracle);
    const sched::Schedule schedule = run_ios(graph, oracle);
    full.questions = oracle.questions();
    full.oracle_ms = oracle_latency(graph, profile, s, schedule);
  });

  Outcome alone;
  alone.seconds = timed([&] {
    cost::SimulatedCostModel simulator(graph, profile);
    alone.oracle_ms = oracle_latency(graph, profile, s, run_ios(graph, simulator));
  });

  fmt::print("\n{} (batch {}, {} units; search profile {}, oracle noise +/-{:.0f}%, seed {})\n\n",
             std::filesystem::path(path).filename().string(), imported.batch, graph.size(), s.profile,
             100.0 * s.oracle.noise, s.oracle.seed);
  fmt::print("| search | questions | of full | oracle latency (ms) | vs full | predicted stages kept | search s |\n");
  fmt::print("|---|---:|---:|---:|---:|---:|---:|\n");
  const std::string model = std::filesystem::path(path).stem().string();
  auto row = [&](const std::string& name, const std::string& budget, double optimism, const Outcome& o) {
    fmt::print("| {} | {} | {:.1f}% | {:.4f} | {:+.2f}% | {} | {:.1f} |\n", name, o.questions,
               100.0 * static_cast<double>(o.questions) / static_cast<double>(full.questions), o.oracle_ms,
               100.0 * (o.oracle_ms / full.oracle_ms - 1.0), o.predicted_stages, o.seconds);
    std::fflush(stdout);
    if (s.csv != nullptr) {
      fmt::print(s.csv, "{},{},{},\"{}\",{},{},{},{},{:.6f},{:.6f},{},{},{},{},{:.2f}\n", model, imported.batch,
                 s.oracle.seed, name,
                 budget, optimism, o.questions, full.questions, o.oracle_ms, full.oracle_ms, o.predicted_stages,
                 o.counts.measured, o.counts.predicted, o.counts.exhausted ? 1 : 0, o.seconds);
      std::fflush(s.csv);
    }
  };
  row("every stage measured", "all", 0.0, full);
  for (double optimism : s.optimism) {
    for (const std::string& budget_text : s.budgets) {
      Outcome o;
      o.seconds = timed([&] {
        cost::OracleDevice oracle(graph, profile, s.oracle);
        cost::SimulatedCostModel simulator(graph, profile);
        cost::BudgetOptions options;
        options.max_stages = parse_budget(budget_text);
        options.optimism = optimism;
        options.own_weight = s.own_weight;
        cost::BudgetedCostModel budgeted(graph, oracle, simulator, options);
        const sched::Schedule schedule = run_ios(graph, budgeted);
        o.questions = oracle.questions();
        o.counts = budgeted.counts();
        for (const sched::Stage& stage : schedule.staged().stages) {
          o.predicted_stages += budgeted.is_measured(stage) ? 0 : 1;
        }
        o.oracle_ms = oracle_latency(graph, profile, s, schedule);
      });
      row(fmt::format("budget {}, optimism {:.2f}", budget_text, optimism), budget_text, optimism, o);
    }
  }
  row("simulator alone", "0", 0.0, alone);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Budgeted measured search against the oracle device"};
  const std::string dir = IOS_MODELS_DIR;
  std::vector<std::string> models = {dir + "/squeezenet1_1-bdyn.onnx", dir + "/inception_v3-bdyn.onnx",
                                     dir + "/randwire-bdyn-64x64.onnx",
                                     dir + "/nasnet_a_large-bdyn-99x99.onnx"};
  int64_t batch = 1;
  Settings s;
  app.add_option("--models", models, "ONNX models");
  app.add_option("--batch", batch, "batch size")->check(CLI::Range(1, 1 << 20));
  app.add_option("--profile", s.profile, "the search's device profile (the oracle hides a changed one)");
  app.add_option("--budgets", s.budgets, "stage budgets to try ('all': none)");
  app.add_option("--optimism", s.optimism, "optimism values to try");
  app.add_option("--own-weight", s.own_weight, "weight of a unit's own measured ratio");
  app.add_option("--noise", s.oracle.noise, "the oracle's per-stage noise (relative half-width)");
  app.add_option("--seed", s.oracle.seed, "the oracle's noise seed");
  app.add_option("--csv", s.csv_path, "also write every row to this CSV file");
  CLI11_PARSE(app, argc, argv);
  try {
    if (!s.csv_path.empty()) {
      s.csv = std::fopen(s.csv_path.c_str(), "w");
      if (s.csv == nullptr) user_error("cannot write {}", s.csv_path);
      fmt::print(s.csv, "model,batch,seed,search,budget,optimism,questions,full_questions,oracle_ms,full_oracle_ms,"
                        "predicted_stages_kept,measured,predicted,exhausted,seconds\n");
    }
    for (const std::string& model : models) bench_model(model, batch, s);
    if (s.csv != nullptr) std::fclose(s.csv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "ios-bench-measured-search: {}\n", e.what());
    return 2;
  }
  return 0;
}
