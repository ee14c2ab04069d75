// Predictions of whole schedules on real networks: every scheduler is
// predicted by simulating its lowered plan, staged plans add up to their
// stages, synchronisation is never free, and the IOS paper's qualitative
// findings on a V100 (shared/papers/ios-mlsys2021.txt, Section 6.1, Figure 6
// and Section 7.2, Figure 10) hold where the model can express them
// (docs/cost-model.md, "What the simulator reproduces").
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>

#include "cost/device_profile.h"
#include "cost/simulated.h"
#include "cost/unit_work.h"
#include "exec/plan.h"
#include "optimize/optimizer.h"
#include "sched/merge.h"
#include "sched/schedule_io.h"
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

// Imports are the slow part: each (model, batch, profile, launch mode) once per run.
const Case& prepare(const std::string& name, int64_t batch, const std::string& profile = "v100",
                    const std::string& launch = "graph") {
  static std::map<std::string, std::unique_ptr<Case>> cache;
  const std::string key = name + "/" + std::to_string(batch) + "/" + profile + "/" + launch;
  auto& slot = cache[key];
  if (!slot) {
    // "inception_v3" is inception_v3-bdyn.onnx; a name with its suffix is the file.
    const auto path =
        test::model(name.find("-bdyn") == std::string::npos ? name + "-bdyn.onnx" : name + ".onnx");
    INFO("model " << path.string() << " (made by onnx_models/export_models.py)");
    REQUIRE(std::filesystem::exists(path));
    slot = std::make_unique<Case>();
    slot->model = model::prepare_model(path.string(), model::shape_options(batch, false, {}));
    optimize::OptimizeOptions options;
    options.cost = "simulated";
    options.device_profile = profile;
    options.launch = launch;
    options.precision = ir::Precision::float32(ir::MathMode::kFp32);  // the paper's V100 and K80 have no TF32; cuDNN 7.6 ran FP32
    slot->cost = optimize::make_cost_model(*slot->model->units, options, slot->model->precision.value);
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

TEST_CASE("with host synchronizations the stages still add up to about the plan",
          "[sim][predictions]") {
  // --launch synced: a single-group stage costs what it adds to a stream of
  // its repetitions; in the plan, the synchronization after a chain of them
  // also waits for the chain's last kernel, which no stage pays for. So the
  // stage sum may fall short of the plan, by that drain only.
  for (int64_t batch : {1, 32}) {
    const Case& c = prepare("inception_v3", batch, "v100", "synced");
    for (const char* scheduler : {"ios", "greedy", "sequential"}) {
      const sched::Schedule schedule = optimize_with(c, scheduler);
      INFO("batch " << batch << ", " << scheduler << ": stages " << stage_sum(schedule) << " ms, plan "
                    << schedule.predicted_latency_ms << " ms");
      CHECK(stage_sum(schedule) <= schedule.predicted_latency_ms * (1.0 + 1e-9));
      CHECK(stage_sum(schedule) >= 0.9 * schedule.predicted_latency_ms);
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
  const Case& c = prepare("inception_v3", 1, "v100", "synced");  // the paper's engine
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
  // The paper's engine issued every kernel from the host and synchronised
  // the device after each stage (no CUDA graph): its greedy schedule lost to
  // sequential by the overhead of synchronising. Planning and running in
  // that mode (--launch synced) reproduces that; with a CUDA graph the
  // model predicts greedy about even with sequential (docs/cost-model.md).
  const Case& c = prepare("squeezenet1_1", 1);
  const sched::Schedule sequential = optimize_with(c, "sequential");
  const sched::Schedule greedy = optimize_with(c, "greedy");
  const Case& engine = prepare("squeezenet1_1", 1, "v100", "synced");
  auto synced_ms = [&](const char* scheduler) { return optimize_with(engine, scheduler).predicted_latency_ms; };
  INFO("synced: sequential " << synced_ms("sequential") << " ms, greedy " << synced_ms("greedy")
                             << " ms, ios " << synced_ms("ios") << " ms");
  CHECK(synced_ms("greedy") >= synced_ms("sequential"));
  CHECK(synced_ms("ios") < synced_ms("sequential"));
  const sched::Schedule ios = optimize_with(c, "ios");
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

// Stages of `block` in `schedule`, the concat that joins its branches left
// out (it copies nothing: the branches write into its output).
int stages_in(const sched::Schedule& schedule, const sched::UnitGraph& units, const sched::Block& block) {
  int stages = 0;
  for (const sched::Stage& stage : schedule.staged().stages) {
    const sched::UnitId u = stage.groups.at(0).at(0);
    const bool concat = units.ir()->node(units.unit(u).anchor).op == ir::OpKind::kConcat;
    stages += u >= block.begin && u < block.end && !concat;
  }
  return stages;
}

}  // namespace

namespace {

// The last block's 1x3 / 3x1 convolution pairs that read one tensor
// (branch3x3_2a/2b and branch3x3dbl_3a/3b).
std::vector<std::pair<sched::UnitId, sched::UnitId>> asymmetric_pairs(const sched::UnitGraph& units) {
  const ir::Graph& graph = *units.ir();
  const sched::Block& block = last_inception_block(units);
  auto kernel_of = [&](sched::UnitId u) {
    const sched::Unit& unit = units.unit(u);
    return graph.node(unit.anchor).op == ir::OpKind::kConv
               ? graph.node(unit.anchor).attr<ir::ConvAttrs>().kernel
               : ios::ir::Dims{0, 0};
  };
  std::vector<std::pair<sched::UnitId, sched::UnitId>> pairs;
  for (sched::UnitId a = block.begin; a < block.end; ++a) {
    for (sched::UnitId b = block.begin; b < block.end; ++b) {
      if (kernel_of(a) == ios::ir::Dims{1, 3} && kernel_of(b) == ios::ir::Dims{3, 1} &&
          units.unit(a).inputs == units.unit(b).inputs) {
        pairs.emplace_back(a, b);
      }
    }
  }
  return pairs;
}

// Merge stages of `schedule` that hold a 1x3 / 3x1 pair of the last block.
int asymmetric_merges(const sched::Schedule& schedule, const sched::UnitGraph& units) {
  int merges = 0;
  for (const auto& [a, b] : asymmetric_pairs(units)) {
    for (const sched::Stage& stage : schedule.staged().stages) {
      if (stage.strategy != sched::Strategy::kMerge) continue;
      const auto& members = stage.groups.at(0);
      merges += std::count(members.begin(), members.end(), a) && std::count(members.begin(), members.end(), b);
    }
  }
  return merges;
}

}  // namespace

TEST_CASE("paper, Figure 10: the last block in 2 stages at batch 1 and 4 at batch 32, with a 1x3 + 3x1 merge "
          "only at 32",
          "[sim][predictions][paper]") {
  // The paper's batch-1 schedule of the last block has 2 stages, its
  // batch-32 one 4, and merges a 1x3 and a 3x1 convolution that read one
  // tensor, although the merged 3x3 (zero-padded taps) does three times
  // their FLOPs: cuDNN runs a 3x3 faster per multiply-add (Winograd) than a
  // 1x3 or 3x1, and at batch 32 running the two side by side costs their
  // cache contention (docs/cost-model.md, "Published measurements"). The
  // fit keeps these findings (bench/published/README.md): this checks that
  // the shipped profiles do.
  const Case& one = prepare("inception_v3", 1, "v100", "synced");
  const Case& many = prepare("inception_v3", 32, "v100", "synced");
  const sched::Schedule for_1 = optimize_with(one, "ios");
  const sched::Schedule for_32 = optimize_with(many, "ios");
  const int stages_1 = stages_in(for_1, one.units(), last_inception_block(one.units()));
  const int stages_32 = stages_in(for_32, many.units(), last_inception_block(many.units()));
  INFO("stages of the last block: batch 1 " << stages_1 << ", batch 32 " << stages_32);
  CHECK(stages_1 == 2);
  CHECK(stages_32 == 4);
  REQUIRE(asymmetric_pairs(many.units()).size() == 2);
  const int merges_1 = asymmetric_merges(for_1, one.units());
  const int merges_32 = asymmetric_merges(for_32, many.units());
  INFO("1x3 + 3x1 merges in the last block: batch 1 " << merges_1 << ", batch 32 " << merges_32);
  CHECK(merges_1 == 0);
  CHECK(merges_32 >= 1);
  for (const auto& [a, b] : asymmetric_pairs(many.units())) {
    const sched::MergeCheck check = sched::check_merge(many.units(), {a, b});
    REQUIRE(check.spec.has_value());
    const double merged_flops = cost::merged_conv_work(many.units(), *check.spec).flops();
    const double member_flops = many.simulated().work(a).flops() + many.simulated().work(b).flops();
    CHECK(merged_flops > 2.9 * member_flops);
    sched::Stage merge;
    merge.strategy = sched::Strategy::kMerge;
    merge.groups = {{a, b}};
    sched::Stage apart;
    apart.groups = {{a}, {b}};
    const double merged_ms = many.cost.model->stage_latency(merge);
    const double apart_ms = many.cost.model->stage_latency(apart);
    INFO("merged " << merged_ms << " ms, side by side " << apart_ms << " ms");
    CHECK(merged_ms < apart_ms);
  }
}

// The IOS paper's findings on the fitted v100 and k80 profiles
// (bench/published), with the paper's setting: its engine's plain launches
// and device synchronizations after stages (--launch synced), FP32.
// docs/cost-model.md, "Published measurements".

namespace {

// `schedule`, made for another batch or device, predicted on `c` (ios-run
// --retarget): unit ids do not depend on the batch or the device.
double predicted_on(const Case& c, const Case& made_on, const sched::Schedule& schedule) {
  const std::string text = sched::schedule_to_json(schedule, made_on.units());
  return c.simulated().schedule_latency(sched::parse_schedule(text, "retargeted", c.units()));
}

}  // namespace

TEST_CASE("paper, Table 3: the schedule specialised for a batch or a device is predicted fastest there",
          "[sim][predictions][paper]") {
  // How much slower, in %, the other schedules ran (Table 3: ms).
  auto penalty = [](double own_ms, double other_ms) { return 100.0 * (other_ms / own_ms - 1.0); };
  struct Penalty {
    std::string cell;
    double predicted, published;
  };
  std::vector<Penalty> penalties;
  const std::map<int64_t, std::map<int64_t, double>> published_ms = {
      {1, {{1, 4.03}, {32, 4.50}, {128, 4.63}}},
      {32, {{1, 29.21}, {32, 27.44}, {128, 27.93}}},
      {128, {{1, 105.98}, {32, 103.74}, {128, 103.29}}}};
  const int64_t batches[] = {1, 32, 128};
  std::map<int64_t, sched::Schedule> made;
  for (int64_t b : batches) made[b] = optimize_with(prepare("inception_v3", b, "v100", "synced"), "ios");
  for (int64_t run : batches) {
    const Case& c = prepare("inception_v3", run, "v100", "synced");
    const double own = predicted_on(c, prepare("inception_v3", run, "v100", "synced"), made[run]);
    for (int64_t other : batches) {
      if (other == run) continue;
      const double foreign = predicted_on(c, prepare("inception_v3", other, "v100", "synced"), made[other]);
      INFO("run at batch " << run << ": own schedule " << own << " ms, batch " << other
                           << "'s " << foreign << " ms");
      CHECK(own <= foreign * (1.0 + 1e-9));
      penalties.push_back({"batch " + std::to_string(other) + "'s at batch " + std::to_string(run),
                           penalty(own, foreign),
                           penalty(published_ms.at(run).at(run), published_ms.at(run).at(other))});
    }
  }
  // Table 3(2): the K80's schedule and the V100's, each on both devices.
  const Case& k80 = prepare("inception_v3", 1, "k80", "synced");
  const Case& v100 = prepare("inception_v3", 1, "v100", "synced");
  const sched::Schedule for_k80 = optimize_with(k80, "ios");
  const sched::Schedule for_v100 = optimize_with(v100, "ios");
  INFO("K80: own " << predicted_on(k80, k80, for_k80) << " ms, V100's "
                   << predicted_on(k80, v100, for_v100) << " ms; V100: own "
                   << predicted_on(v100, v100, for_v100) << " ms, K80's "
                   << predicted_on(v100, k80, for_k80) << " ms");
  CHECK(predicted_on(k80, k80, for_k80) < predicted_on(k80, v100, for_v100));
  CHECK(predicted_on(v100, v100, for_v100) < predicted_on(v100, k80, for_k80));
  penalties.push_back({"the V100's on the K80",
                       penalty(predicted_on(k80, k80, for_k80), predicted_on(k80, v100, for_v100)),
                       penalty(13.87, 14.65)});
  penalties.push_back({"the K80's on the V100",
                       penalty(predicted_on(v100, v100, for_v100), predicted_on(v100, k80, for_k80)),
                       penalty(4.03, 4.49)});
  // The penalties against the paper's: within a factor of 2 in all but one,
  // the V100's schedule on the K80, which the model makes about twice as
  // costly as the K80 measured (+11.4% against +5.6%). The published rows
  // cannot pin the K80's occupancy constants that decide it, and none with
  // physical evidence behind it brings both K80 penalties within the factor
  // (docs/cost-model.md, "Published measurements", the table of refitted
  // K80 alternatives; bench/published/README.md, "Sensitivity").
  int within = 0;
  for (const Penalty& p : penalties) {
    const double ratio = p.predicted / p.published;
    INFO(p.cell << ": predicted +" << p.predicted << "%, published +" << p.published << "%");
    CHECK(p.predicted > 0.0);
    if (p.cell != "the V100's on the K80") {
      CHECK((ratio >= 0.5 && ratio <= 2.0));
    } else {
      CHECK((ratio >= 0.5 && ratio <= 2.5));  // the shipped fit: 2.04
    }
    within += ratio >= 0.5 && ratio <= 2.0;
  }
  CHECK(penalties.size() == 8);
  CHECK(within >= 7);
}

TEST_CASE("paper, Figure 11: IOS ahead of sequential at every batch from 1 to 128",
          "[sim][predictions][paper]") {
  for (int64_t batch : {1, 16, 32, 64, 128}) {
    const Case& c = prepare("inception_v3", batch, "v100", "synced");
    const double ios = optimize_with(c, "ios").predicted_latency_ms;
    const double sequential = optimize_with(c, "sequential").predicted_latency_ms;
    INFO("batch " << batch << ": ios " << ios << " ms, sequential " << sequential << " ms");
    CHECK(ios < sequential);
  }
}

TEST_CASE("paper, Figure 7: IOS-Both at least as fast as IOS-Merge, IOS-Parallel, greedy, sequential",
          "[sim][predictions][paper]") {
  for (const char* name :
       {"inception_v3", "squeezenet1_1", "randwire-bdyn-64x64", "nasnet_a_large-bdyn-99x99"}) {
    const Case& c = prepare(name, 1, "v100", "synced");
    const double both = optimize_with(c, "ios").predicted_latency_ms;
    for (const char* other : {"ios-merge", "ios-parallel", "greedy", "sequential"}) {
      const double latency = optimize_with(c, other).predicted_latency_ms;
      INFO(name << ": ios " << both << " ms, " << other << " " << latency << " ms");
      CHECK(both <= latency * (1.0 + 1e-9));
    }
  }
}
