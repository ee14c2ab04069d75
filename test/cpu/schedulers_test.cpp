// Every registered scheduler's schedule, lowered and run on the CPU executor,
// gives the sequential schedule's outputs on every torchvision CNN; and so
// does IOS with operator merge forced on wherever merging is legal (a cost
// model under which a merge stage is cheaper than any other stage).
#include <catch2/catch.hpp>

#include <set>

#include "exec/compare.h"
#include "exec/schedule_memory.h"
#include "model_test_util.h"
#include "sched/merge.h"

namespace ios::test {
namespace {

const exec::Tolerance kTolerance{1e-5, 1e-4};

// A merge stage costs next to nothing; any other stage costs one per unit,
// so concurrency gains nothing and the DP covers as many units with merges as
// legality allows.
class ForceMergeCost : public sched::CostModel {
 public:
  std::string name() const override { return "force-merge"; }
  double stage_latency(const sched::Stage& stage) override {
    if (stage.strategy == sched::Strategy::kMerge) return 1e-3;
    double units = 0;
    for (const auto& group : stage.groups) units += static_cast<double>(group.size());
    return units;
  }
};

int merge_stages(const sched::Schedule& schedule) {
  if (!schedule.is_staged()) return 0;
  int merges = 0;
  for (const auto& stage : schedule.staged().stages) merges += stage.strategy == sched::Strategy::kMerge;
  return merges;
}

void check_schedulers(const std::string& name, bool expect_merges, const std::string& size = "") {
  const auto path = dynamic_batch_model(name, size);
  onnx::ImportOptions options;
  options.batch = 1;
  const auto model = onnx::import_model(path.string(), options);
  const auto graph = sched::UnitGraph::form(model.graph);
  auto cost = simulated_cost(graph);
  const auto input = exec::random_tensor(model.inputs[0].second, 77);
  const auto& input_name = model.inputs[0].first;

  const auto reference = run_cpu(graph, make_schedule("sequential", "", graph, cost), input_name, input);
  auto check = [&](const std::string& label, const sched::Schedule& schedule) {
    const auto t0 = std::chrono::steady_clock::now();
    cpu::MemoryPlanStats stats;
    const auto out = run_cpu(graph, schedule, input_name, input, &stats);
    const auto result = exec::compare(out, reference, kTolerance, name + " " + label, 5);
    std::cerr << fmt::format("{} {}: {} stages/launches, {} merged kernels, max abs diff {:.3g}, {:.2f} s\n", name,
                             label,
                             schedule.is_staged() ? schedule.staged().stages.size() : schedule.streamed().launches.size(),
                             stats.merged_kernels, result.max_abs_error, seconds_since(t0));
    INFO(exec::format_report(result));
    CHECK(result.passed());
    // The activation arena a schedule reports (ios-optimize, the schedule
    // file) is the arena this backend allocates.
    CHECK(exec::schedule_memory(graph, schedule).arena_bytes == stats.buffer_bytes);
    return stats;
  };

  for (const auto& entry : sched::scheduler_registry()) {
    if (entry.name == "sequential") continue;
    const auto t0 = std::chrono::steady_clock::now();
    const auto schedule = make_schedule(entry.name, "", graph, cost);
    std::cerr << fmt::format("{} {}: scheduled in {:.2f} s\n", name, entry.name, seconds_since(t0));
    const auto stats = check(entry.name, schedule);
    CHECK(stats.merged_kernels == merge_stages(schedule));
  }

  // IOS with merges forced on.
  ForceMergeCost force;
  const auto forced = make_schedule("ios", "", graph, force);
  const auto stats = check("ios (merges forced)", forced);
  CHECK(stats.merged_kernels == merge_stages(forced));
  if (expect_merges) CHECK(stats.merged_kernels > 0);
  // Wherever a unit could merge with another unit, it did.
  std::set<sched::UnitId> merged;
  for (const auto& stage : forced.staged().stages) {
    if (stage.strategy == sched::Strategy::kMerge) merged.insert(stage.groups[0].begin(), stage.groups[0].end());
  }
  for (sched::UnitId u = 0; u < graph.size(); ++u) {
    for (sched::UnitId v = u + 1; v < graph.size(); ++v) {
      if (graph.block_of(u) != graph.block_of(v) || !sched::check_merge(graph, {u, v}).spec) continue;
      INFO("units '" << graph.unit(u).id << "' and '" << graph.unit(v).id << "' can merge");
      CHECK(merged.count(u) == 1);
      CHECK(merged.count(v) == 1);
    }
  }
}

TEST_CASE("every scheduler matches sequential: inception_v3", "[cpu][schedulers][model]") {
  check_schedulers("inception_v3", true);
}
TEST_CASE("every scheduler matches sequential: squeezenet1_1", "[cpu][schedulers][model]") {
  check_schedulers("squeezenet1_1", true);
}
TEST_CASE("every scheduler matches sequential: resnet50", "[cpu][schedulers][model]") {
  check_schedulers("resnet50", false);
}
TEST_CASE("every scheduler matches sequential: mobilenet_v2", "[cpu][schedulers][model]") {
  check_schedulers("mobilenet_v2", false);
}
TEST_CASE("every scheduler matches sequential: densenet121", "[cpu][schedulers][model]") {
  check_schedulers("densenet121", false);
}
TEST_CASE("every scheduler matches sequential: googlenet", "[cpu][schedulers][model]") {
  check_schedulers("googlenet", true);
}
// The IOS paper's RandWire and NASNet-A, at reduced input sizes (same graphs).
// Their ReLU-SepConv units never merge (a prologue ReLU rules it out).
TEST_CASE("every scheduler matches sequential: randwire", "[cpu][schedulers][model]") {
  check_schedulers("randwire", false, "-64x64");
}
TEST_CASE("every scheduler matches sequential: nasnet_a_large", "[cpu][schedulers][model]") {
  check_schedulers("nasnet_a_large", false, "-99x99");
}

}  // namespace
}  // namespace ios::test
