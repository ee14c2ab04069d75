// The budgeted measured search (cost/budgeted.h) against the oracle device
// (cost/oracle_device.h), which plays the GPU: what it asks, what it finds,
// what it does when the budget runs out, and what it reuses.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <set>

#include "cost/budgeted.h"
#include "cost/device_profile.h"
#include "cost/oracle_device.h"
#include "cost/simulated.h"
#include "onnx/importer.h"
#include "sched/scheduler.h"
#include "sched/signature.h"
#include "sched/validate.h"
#include "test_paths.h"

using namespace ios;

namespace {

struct Imported {
  onnx::ImportedModel model;
  sched::UnitGraph graph;
};

Imported import(const std::string& file) {
  const auto path = test::model(file);
  INFO("model " << path.string() << " (made by onnx_models/export_models.py)");
  REQUIRE(std::filesystem::exists(path));
  onnx::ImportOptions options;
  options.batch = 1;
  Imported out{onnx::import_model(path.string(), options), {}};
  out.graph = sched::UnitGraph::form(out.model.graph);
  return out;
}

sched::Schedule run_ios(const sched::UnitGraph& graph, sched::CostModel& cost) {
  const auto& entry = sched::find_scheduler("ios");
  auto ios = entry.make(sched::Params::parse("ios", entry.params, ""));
  ios->set_threads(1);
  sched::SearchStats stats;
  sched::Schedule schedule = ios->run(graph, cost, stats);
  sched::validate_schedule(schedule, graph, "the ios schedule");
  return schedule;
}

sched::Stage stage_of(std::vector<std::vector<sched::UnitId>> groups) {
  sched::Stage stage;
  stage.groups = std::move(groups);
  return stage;
}

// A device exactly `factor` times slower than the simulator.
class ScaledSimulator : public sched::CostModel {
 public:
  ScaledSimulator(cost::SimulatedCostModel& simulator, double factor) : sim_(simulator), factor_(factor) {}
  std::string name() const override { return "scaled"; }
  double stage_latency(const sched::Stage& stage) override {
    ++questions;
    return factor_ * sim_.stage_latency(stage);
  }
  int questions = 0;

 private:
  cost::SimulatedCostModel& sim_;
  double factor_;
};

}  // namespace

TEST_CASE("the oracle: one answer per stage signature, noisy within its bound, unlike the simulator",
          "[cost][oracle]") {
  const Imported squeezenet = import("squeezenet1_1-bdyn.onnx");
  const sched::UnitGraph& g = squeezenet.graph;
  const cost::DeviceProfile h100 = cost::load_device_profile("h100");
  cost::OracleDevice oracle(g, h100);
  cost::SimulatedCostModel hidden(g, cost::hidden_profile(h100));
  cost::SimulatedCostModel search(g, h100);

  std::set<std::string> signatures;
  double smallest = 2.0, largest = 0.0, most_apart = 0.0;
  for (sched::UnitId u = 0; u < g.size(); ++u) {
    const sched::Stage alone = stage_of({{u}});
    CHECK_FALSE(oracle.known_latency(alone).has_value() != signatures.contains(sched::stage_signature(g, alone)));
    const double answer = oracle.stage_latency(alone);
    signatures.insert(sched::stage_signature(g, alone));
    CHECK(oracle.known_latency(alone) == answer);
    CHECK(oracle.stage_latency(alone) == answer);  // asked again: the same, and no new question
    CHECK(oracle.truth(alone) == answer);
    const double hidden_ms = hidden.stage_latency(alone);
    if (hidden_ms <= 0.0) continue;
    smallest = std::min(smallest, answer / hidden_ms);
    largest = std::max(largest, answer / hidden_ms);
    most_apart = std::max(most_apart, std::abs(std::log(answer / search.stage_latency(alone))));
  }
  CHECK(oracle.questions() == static_cast<int64_t>(signatures.size()));
  // The noise spans most of +/-20% and never more.
  CHECK(smallest >= 0.8 - 1e-12);
  CHECK(largest <= 1.2 + 1e-12);
  CHECK(smallest < 0.9);
  CHECK(largest > 1.1);
  // The search's simulator is more than 20% off on some stage.
  CHECK(most_apart > std::log(1.2));
  // Another seed, other answers.
  cost::OracleOptions other;
  other.seed = 2;
  cost::OracleDevice reseeded(g, h100, other);
  int differ = 0;
  for (sched::UnitId u = 0; u < g.size(); ++u) {
    differ += reseeded.stage_latency(stage_of({{u}})) != oracle.stage_latency(stage_of({{u}}));
  }
  CHECK(differ > g.size() / 2);
}

TEST_CASE("budgeted corrections: a device uniformly slower than the simulator is predicted exactly",
          "[cost][budgeted]") {
  const Imported inception = import("inception_v3-bdyn.onnx");
  const sched::UnitGraph& g = inception.graph;
  cost::SimulatedCostModel simulator(g, cost::load_device_profile("h100"));
  ScaledSimulator device(simulator, 1.5);
  cost::BudgetOptions options;
  options.optimism = 0.0;
  options.max_stages = -1;
  cost::BudgetedCostModel budgeted(g, device, simulator, options);
  // One-unit stages are measured when asked.
  for (sched::UnitId u = 0; u < g.size(); ++u) {
    CHECK(budgeted.stage_latency(stage_of({{u}})) == Approx(1.5 * simulator.stage_latency(stage_of({{u}}))));
  }
  CHECK(budgeted.counts().measured == device.questions);
  // A stage of several groups is predicted, not measured: the simulator
  // times the units' factor (1.5), with no concurrency factor learned yet.
  const sched::Block& last = g.blocks().back().size() > 3 ? g.blocks().back() : g.blocks()[g.blocks().size() - 2];
  const sched::Stage wide = stage_of({{last.begin}, {last.begin + 1}});
  const int asked = device.questions;
  CHECK(budgeted.stage_latency(wide) == Approx(1.5 * simulator.stage_latency(wide)).epsilon(1e-9));
  CHECK(device.questions == asked);
  CHECK_FALSE(budgeted.is_measured(wide));
  // Settling measures it.
  CHECK(budgeted.settle({wide}));
  CHECK(device.questions == asked + 1);
  CHECK(budgeted.is_measured(wide));
  CHECK_FALSE(budgeted.settle({wide}));  // nothing left to measure
}

TEST_CASE("budgeted search: within 2% of measuring everything, Inception V3 under 1,000 questions",
          "[sched][budgeted]") {
  const cost::DeviceProfile h100 = cost::load_device_profile("h100");
  // RandWire and NASNet: the benchmark (bench/measured_search.py,
  // docs/benchmarks.md) runs them; their full measurement is too slow here.
  for (const std::string file : {"squeezenet1_1-bdyn.onnx", "inception_v3-bdyn.onnx"}) {
    const Imported m = import(file);
    for (const uint64_t seed : {1, 2, 3, 4, 5}) {  // the oracle's noise
      cost::OracleOptions noise;
      noise.seed = seed;
      cost::OracleDevice full_device(m.graph, h100, noise);
      cost::OracleDevice judge(m.graph, h100, noise);  // scores schedules, asked nothing
      auto oracle_ms = [&](const sched::Schedule& schedule) { return judge.truth(schedule); };
      const double full_ms = oracle_ms(run_ios(m.graph, full_device));

      cost::OracleDevice device(m.graph, h100, noise);
      cost::SimulatedCostModel simulator(m.graph, h100);
      cost::BudgetedCostModel budgeted(m.graph, device, simulator);  // the defaults
      const sched::Schedule schedule = run_ios(m.graph, budgeted);
      const double budgeted_ms = oracle_ms(schedule);

      INFO(file << ", seed " << seed << ": full " << full_ms << " ms with " << full_device.questions()
                << " questions, budgeted " << budgeted_ms << " ms with " << device.questions());
      CHECK(budgeted_ms <= 1.02 * full_ms);
      // SqueezeNet's whole search costs 54 stages, its units alone 39: few
      // can be saved there. Inception V3 may ask more than a tenth (the
      // issue's exception), but under 1,000 (3,917 for the full search).
      if (file == "inception_v3-bdyn.onnx") {
        CHECK(device.questions() < 1000);
        CHECK(device.questions() <= full_device.questions() / 3);
      }
      CHECK(device.questions() == budgeted.counts().measured);
      CHECK_FALSE(budgeted.counts().exhausted);
      // Every stage of the schedule measured: its latency is the oracle's.
      for (const sched::Stage& stage : schedule.staged().stages) CHECK(budgeted.is_measured(stage));
      CHECK(schedule.predicted_latency_ms == Approx(budgeted_ms).epsilon(1e-9));
      // The simulator alone does worse on Inception V3 (13-18%): measuring pays.
      if (file == "inception_v3-bdyn.onnx") {
        cost::SimulatedCostModel alone(m.graph, h100);
        CHECK(oracle_ms(run_ios(m.graph, alone)) > 1.05 * budgeted_ms);
      }
    }
  }
}

TEST_CASE("budgeted search: a spent budget still completes, with the simulator's costs",
          "[sched][budgeted]") {
  const cost::DeviceProfile h100 = cost::load_device_profile("h100");
  const Imported inception = import("inception_v3-bdyn.onnx");
  const sched::UnitGraph& g = inception.graph;
  for (const bool by_time : {false, true}) {
    cost::OracleDevice device(g, h100);
    cost::SimulatedCostModel simulator(g, h100);
    cost::BudgetOptions options;
    if (by_time) {
      options.max_stages = -1;
      options.max_seconds = 1e-9;  // spent by the first measurement
    } else {
      options.max_stages = 60;  // fewer than Inception's units
    }
    cost::BudgetedCostModel budgeted(g, device, simulator, options);
    const sched::Schedule schedule = run_ios(g, budgeted);  // validated
    INFO((by_time ? "time budget" : "stage budget"));
    CHECK(budgeted.counts().exhausted);
    CHECK(device.questions() == (by_time ? 1 : 60));
    CHECK(budgeted.counts().measured == device.questions());
    CHECK(budgeted.counts().predicted > 0);
    int predicted = 0;
    for (const sched::Stage& stage : schedule.staged().stages) predicted += !budgeted.is_measured(stage);
    CHECK(predicted > 0);
    // Still a sound schedule: no slower on the oracle than sequential by
    // more than the simulator's error.
    CHECK(std::isfinite(schedule.predicted_latency_ms));
    CHECK(schedule.predicted_latency_ms > 0.0);
  }
}

TEST_CASE("budgeted search: stages measured once are never measured again", "[sched][budgeted]") {
  const cost::DeviceProfile h100 = cost::load_device_profile("h100");
  const Imported squeezenet = import("squeezenet1_1-bdyn.onnx");
  const sched::UnitGraph& g = squeezenet.graph;
  // The oracle remembers its answers as a profile database does.
  cost::OracleDevice device(g, h100);
  cost::SimulatedCostModel simulator(g, h100);
  cost::BudgetedCostModel first(g, device, simulator);
  const sched::Schedule one = run_ios(g, first);
  const int64_t asked = device.questions();
  CHECK(first.counts().measured == asked);
  CHECK(first.counts().reused == 0);

  cost::BudgetedCostModel second(g, device, simulator);
  const sched::Schedule two = run_ios(g, second);
  // Whatever the second search measured is new to the device (a stage asked
  // twice would count once in questions() but twice in measured).
  CHECK(second.counts().measured == device.questions() - asked);
  CHECK(second.counts().reused > 0);
  CHECK(second.counts().measured < asked / 4);
  CHECK(two.predicted_latency_ms <= one.predicted_latency_ms * (1.0 + 1e-12));
}
