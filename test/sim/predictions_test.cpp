// Predictions of whole schedules on real networks: every scheduler is
// predicted by simulating its lowered plan, staged plans add up to their
// stages, synchronisation is never free, and the IOS paper's qualitative
// findings on a V100 (shared/papers/ios-mlsys2021.txt, Section 6.1, Figure 6
// and Section 7.2, Figure 10) hold where the model can express them
// (docs/cost-model.md, "What the simulator reproduces").
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <memory>

#include "cost/device_profile.h"
#include "cost/simulated.h"
#include "cost/unit_work.h"
#include "exec/plan.h"
#include "optimize/optimizer.h"
#include "sched/merge.h"
#include "sched/scheduler.h"
#include "test_paths.h"

using namespace ios;

namespace {

struct Case {
  std::unique_ptr<ios::model::PreparedModel> model;
  optimize::CostChoice cost;
  const cost::SimulatedCostModel& simulated() const {
    return dynamic_cast<const cost::SimulatedCostModel&>(*cost.model);
  }
  const sched::UnitGraph& units() const { return *model->units; }
};

// Imports are the slow part: each (model, batch, profile) once per run.
const Case& prepare(const std::string& name, int64_t batch, const std::string& profile = "v100") {
  static std::map<std::string, std::unique_ptr<Case>> cache;
  const std::string key = name + "/" + std::to_string(batch) + "/" + profile;
  auto& slot = cache[key];
  if (!slot) {
    const auto path = test::model(name + "-bdyn.onnx");
    INFO("model " << path.string() << " (made by onnx_models/export_models.py)");
    REQUIRE(std::filesystem::exists(path));
    slot = std::make_unique<Case>();
    slot->model = model::prepare_model(path.string(), model::shape_options(batch, false, {}));
    optimize::OptimizeOptions options;
    options.cost = "simulated";
    options.device_profile = profile;
    slot->cost = optimize::make_cost_model(*slot->model->units, options);
  }
  return *slot;
}

sched::Schedule optimize_with(const Case& c, const std::string& scheduler,
                              const std::string& params = "") {
  sched::SearchStats stats;
  return optimize::schedule_model(*c.model, scheduler, params, c.cost, stats);
}

double stage_sum(const sched::Schedule& schedule) {
  double sum = 0.0;
  for (const sched::Stage& stage : schedule.staged().stages) sum += stage.predicted_ms;
  return sum;
}

}  // namespace

TEST_CASE("every scheduler's prediction is the simulation of its whole plan",
          "[sim][predictions]") {
  for (const char* name : {"squeezenet1_1", "inception_v3"}) {
    const Case& c = prepare(name, 1);
    for (const auto& entry : sched::scheduler_registry()) {
      INFO(name << ", scheduler " << entry.name);
      const sched::Schedule schedule = optimize_with(c, entry.name);
      const double simulated = c.simulated().schedule_latency(schedule);
      CHECK(schedule.predicted_latency_ms == Approx(simulated).epsilon(1e-12));
      if (schedule.is_staged()) {
        // Stage boundaries join every stream, so a staged plan's latency is
        // the sum of its stages' simulated latencies.
        CHECK(stage_sum(schedule) == Approx(simulated).epsilon(0.01));
      } else {
        // A streamed schedule's launch times are the simulated ones too.
        for (const auto& launch : schedule.streamed().launches) {
          CHECK(launch.predicted_finish_ms >= launch.predicted_start_ms);
          CHECK(launch.predicted_finish_ms <= simulated + 1e-12);
        }
      }
    }
  }
}

TEST_CASE("no scheduler's prediction ignores synchronisation", "[sim][predictions]") {
  const Case& c = prepare("inception_v3", 1);
  cost::DeviceProfile free_sync = c.simulated().profile();
  free_sync.event_sync_overhead_us = 0.0;
  const cost::SimulatedCostModel without_waits(c.units(), free_sync, c.simulated().options());
  int streamed_with_waits = 0;
  for (const auto& entry : sched::scheduler_registry()) {
    INFO("scheduler " << entry.name);
    const sched::Schedule schedule = optimize_with(c, entry.name);
    const exec::ExecPlan plan = exec::lower(c.units(), schedule);
    if (plan.count(exec::Step::Kind::kWait) == 0) continue;  // sequential
    streamed_with_waits += !schedule.is_staged();
    const double free_ms = without_waits.simulate(plan).makespan_us / 1000.0;
    CHECK(schedule.predicted_latency_ms > free_ms);
  }
  CHECK(streamed_with_waits == 2);  // lios and nimble
}

TEST_CASE("paper, Figure 6: Inception V3 at batch 1 on a V100, IOS beats greedy beats sequential",
          "[sim][predictions][paper]") {
  const Case& c = prepare("inception_v3", 1);
  const double sequential = optimize_with(c, "sequential").predicted_latency_ms;
  const double greedy = optimize_with(c, "greedy").predicted_latency_ms;
  const double ios = optimize_with(c, "ios").predicted_latency_ms;
  INFO("sequential " << sequential << " ms, greedy " << greedy << " ms, ios " << ios << " ms");
  CHECK(ios < greedy);
  CHECK(greedy < sequential);
  // The paper measures 1.6x (Appendix, Figure 16).
  CHECK(sequential / ios >= 1.3);
  CHECK(sequential / ios <= 2.0);
}

TEST_CASE("paper, Figure 6: SqueezeNet at batch 1, greedy does not beat sequential, IOS does",
          "[sim][predictions][paper]") {
  // The paper's engine issued every kernel and synchronisation from the host
  // (no CUDA graph): its greedy schedule lost to sequential by the overhead
  // of synchronising. Plain launches reproduce that; with a CUDA graph the
  // model predicts greedy about even with sequential (docs/cost-model.md).
  const Case& c = prepare("squeezenet1_1", 1);
  const sched::Schedule sequential = optimize_with(c, "sequential");
  const sched::Schedule greedy = optimize_with(c, "greedy");
  const sched::Schedule ios = optimize_with(c, "ios");
  cost::SimulatedOptions plain_launches = c.simulated().options();
  plain_launches.launch = sim::LaunchMode::kPlain;
  const cost::SimulatedCostModel plain(c.units(), c.simulated().profile(), plain_launches);
  auto plain_ms = [&](const sched::Schedule& s) {
    return plain.simulate(exec::lower(c.units(), s)).makespan_us / 1000.0;
  };
  INFO("plain launches: sequential " << plain_ms(sequential) << " ms, greedy " << plain_ms(greedy)
                                     << " ms, ios " << plain_ms(ios) << " ms");
  CHECK(plain_ms(greedy) >= plain_ms(sequential));
  CHECK(plain_ms(ios) < plain_ms(sequential));
  CHECK(ios.predicted_latency_ms < sequential.predicted_latency_ms);  // and as a CUDA graph
}

namespace {

// The last Inception V3 block (Mixed_7c: n = 11, width 6, the IOS paper's
// Figure 10).
const sched::Block& last_inception_block(const sched::UnitGraph& units) {
  const sched::Block* found = nullptr;
  for (const sched::Block& block : units.blocks()) {
    if (block.size() == 11 && block.width == 6) found = &block;
  }
  REQUIRE(found != nullptr);
  return *found;
}

int stages_in(const sched::Schedule& schedule, const sched::Block& block) {
  int stages = 0;
  for (const sched::Stage& stage : schedule.staged().stages) {
    const sched::UnitId u = stage.groups.at(0).at(0);
    stages += u >= block.begin && u < block.end;
  }
  return stages;
}

}  // namespace

TEST_CASE("paper, Figure 10: IOS uses fewer stages for the last block at batch 1 than at 32",
          "[sim][predictions][paper]") {
  const Case& one = prepare("inception_v3", 1);
  const Case& many = prepare("inception_v3", 32);
  const int stages_1 = stages_in(optimize_with(one, "ios"), last_inception_block(one.units()));
  const int stages_32 = stages_in(optimize_with(many, "ios"), last_inception_block(many.units()));
  INFO("stages of the last block: batch 1 " << stages_1 << ", batch 32 " << stages_32);
  CHECK(stages_1 < stages_32);
}

TEST_CASE("paper, Figure 10: the 1x3 + 3x1 merge at batch 32 is compute-bound in this model",
          "[sim][predictions][paper]") {
  // The paper's batch-32 schedule merges the 1x3 and 3x1 convolutions that
  // read one tensor, citing activation memory traffic. In the roofline model
  // these convolutions are compute-bound, and the merged 3x3 (zero-padded
  // taps) does three times their FLOPs, so the merge cannot win and IOS does
  // not choose it. docs/cost-model.md names the knob that would change this;
  // this test keeps that explanation true.
  const Case& c = prepare("inception_v3", 32);
  const sched::UnitGraph& units = c.units();
  const ir::Graph& graph = *units.ir();
  const sched::Block& block = last_inception_block(units);
  auto kernel_of = [&](sched::UnitId u) {
    const sched::Unit& unit = units.unit(u);
    return graph.node(unit.anchor).op == ir::OpKind::kConv
               ? graph.node(unit.anchor).attr<ir::ConvAttrs>().kernel
               : std::array<int64_t, 2>{0, 0};
  };
  int pairs = 0;
  for (sched::UnitId a = block.begin; a < block.end; ++a) {
    for (sched::UnitId b = block.begin; b < block.end; ++b) {
      if (kernel_of(a) != std::array<int64_t, 2>{1, 3} ||
          kernel_of(b) != std::array<int64_t, 2>{3, 1})
        continue;
      if (units.unit(a).inputs != units.unit(b).inputs) continue;
      ++pairs;
      const sched::MergeCheck check = sched::check_merge(units, {a, b});
      REQUIRE(check.spec.has_value());
      const double merged_flops = cost::merged_conv_work(units, *check.spec).flops();
      const double member_flops = c.simulated().work(a).flops() + c.simulated().work(b).flops();
      CHECK(merged_flops > 2.9 * member_flops);
      sched::Stage merge;
      merge.strategy = sched::Strategy::kMerge;
      merge.groups = {{a, b}};
      sched::Stage apart;
      apart.groups = {{a}, {b}};
      const double merged_ms = c.cost.model->stage_latency(merge);
      const double apart_ms = c.cost.model->stage_latency(apart);
      INFO("merged " << merged_ms << " ms, side by side " << apart_ms << " ms");
      CHECK(merged_ms > apart_ms);
    }
  }
  CHECK(pairs == 2);  // branch3x3_2a/2b and branch3x3dbl_3a/3b
}
