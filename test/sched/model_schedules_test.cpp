// Every scheduler on real networks (ONNX models from onnx_models/), with a
// synthetic cost in which merging is cheaper than running apart: schedules
// are valid, merges are legal, and the IOS variants order as their search
// spaces nest.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>

#include "onnx/importer.h"
#include "schedule_check.h"
#include "sched/merge.h"
#include "sched/scheduler.h"
#include "sched/validate.h"
#include "synthetic_cost.h"
#include "test_paths.h"

using namespace ios::sched;

namespace {

void check_model(const std::string& file, bool expect_merges) {
  const auto path = ios::test::model(file);
  INFO("model " << path.string() << " (made by onnx_models/export_models.py)");
  REQUIRE(std::filesystem::exists(path));
  ios::onnx::ImportOptions options;
  options.batch = 1;  // the exports have a symbolic batch dimension
  const ios::onnx::ImportedModel model = ios::onnx::import_model(path.string(), options);
  const UnitGraph graph = UnitGraph::form(model.graph);
  std::vector<double> w(static_cast<size_t>(graph.size()));
  for (size_t i = 0; i < w.size(); ++i) w[i] = 1.0 + static_cast<double>(i % 5) * 0.25;
  ios::sched::test::AdditiveCost cost(w, 0.2, 0.6);
  std::map<std::string, double> latency;
  int merges = 0;
  for (const auto& entry : scheduler_registry()) {
    INFO("scheduler " << entry.name);
    SearchStats stats;
    const Schedule s = entry.make(Params::parse(entry.name, entry.params, ""))->run(graph, cost, stats);
    CHECK(ios::sched::test::check_schedule(graph, s) == "");
    CHECK_NOTHROW(validate_schedule(s, graph, file));
    if (s.is_staged()) {
      for (const Stage& stage : s.staged().stages) {
        if (stage.strategy != Strategy::kMerge) continue;
        ++merges;
        const MergeCheck merge = check_merge(graph, stage.groups.at(0));
        CHECK(merge.reason == "");
        CHECK(merge.spec.has_value());
      }
    }
    latency[entry.name] = s.predicted_latency_ms;
  }
  const double eps = 1e-9;
  CHECK(latency["ios"] <= latency["ios-parallel"] + eps);
  CHECK(latency["ios"] <= latency["ios-merge"] + eps);
  CHECK(latency["ios-parallel"] <= latency["sequential"] + eps);
  CHECK(latency["ios-merge"] <= latency["sequential"] + eps);
  CHECK(latency["dos"] <= latency["sequential"] + eps);
  if (expect_merges) CHECK(merges > 0);
}

}  // namespace

TEST_CASE("schedulers on Inception V3", "[scheduler][models]") { check_model("inception_v3-bdyn.onnx", true); }

TEST_CASE("schedulers on SqueezeNet 1.1", "[scheduler][models]") { check_model("squeezenet1_1-bdyn.onnx", true); }
