// Repeated blocks: the search gives a block that repeats an earlier one the
// earlier block's result, and that is what searching it would have found.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>

#include "cost/device_profile.h"
#include "cost/simulated.h"
#include "onnx/importer.h"
#include "sched/scheduler.h"
#include "sched/signature.h"
#include "test_paths.h"

using namespace ios::sched;

namespace {

// The simulator, but claiming nothing about signatures: every block is searched.
class SearchEveryBlock : public CostModel {
 public:
  explicit SearchEveryBlock(CostModel& inner) : inner_(inner) {}
  std::string name() const override { return inner_.name(); }
  double stage_latency(const Stage& stage) override { return inner_.stage_latency(stage); }
  UnitBound unit_bound(UnitId unit) override { return inner_.unit_bound(unit); }
  int64_t cost_class(UnitId unit) override { return inner_.cost_class(unit); }
  bool free_unit(UnitId unit) override { return inner_.free_unit(unit); }
  bool thread_safe() const override { return inner_.thread_safe(); }

 private:
  CostModel& inner_;
};

struct Imported {
  ios::onnx::ImportedModel model;
  UnitGraph graph;
};

Imported import(const std::string& file) {
  const auto path = ios::test::model(file);
  INFO("model " << path.string() << " (made by onnx_models/export_models.py)");
  REQUIRE(std::filesystem::exists(path));
  ios::onnx::ImportOptions options;
  options.batch = 1;
  Imported out{ios::onnx::import_model(path.string(), options), {}};
  out.graph = UnitGraph::form(out.model.graph);
  return out;
}

}  // namespace

TEST_CASE("blocks share a signature exactly when they compute the same thing", "[sched][signature]") {
  const Imported inception = import("inception_v3-bdyn.onnx");
  const UnitGraph& g = inception.graph;
  std::map<std::string, std::vector<int>> by_signature;
  for (size_t b = 0; b < g.blocks().size(); ++b) {
    by_signature[block_signature(g, g.blocks()[b])].push_back(static_cast<int>(b));
  }
  // Mixed_6c and Mixed_6d (blocks 6 and 7) have the same shapes throughout;
  // Mixed_6b and 6e differ from them in their 7x7 branches' channels, the
  // others in shapes.
  std::vector<std::vector<int>> repeats;
  for (const auto& [signature, blocks] : by_signature) {
    CHECK(signature.find("Mixed") == std::string::npos);  // names never enter a signature
    if (blocks.size() > 1) repeats.push_back(blocks);
  }
  CHECK(repeats == std::vector<std::vector<int>>{{6, 7}});
}

TEST_CASE("a repeated block reuses the earlier search and gets what its own search would find",
          "[sched][signature]") {
  for (const char* file : {"nasnet_a_large-bdyn-99x99.onnx", "inception_v3-bdyn.onnx"}) {
    INFO(file);
    const Imported imported = import(file);
    const UnitGraph& g = imported.graph;
    ios::cost::SimulatedCostModel simulator(g, ios::cost::load_device_profile("h100"));
    REQUIRE(simulator.costs_follow_signatures());
    SearchEveryBlock every(simulator);
    for (const char* name : {"ios", "ios-merge", "dos"}) {
      INFO(name);
      const SchedulerEntry& entry = find_scheduler(name);
      SearchStats reused_stats, searched_stats;
      const Schedule reused = entry.make(Params::parse(name, entry.params, ""))->run(g, simulator, reused_stats);
      const Schedule searched = entry.make(Params::parse(name, entry.params, ""))->run(g, every, searched_stats);
      CHECK(reused.predicted_latency_ms == searched.predicted_latency_ms);
      const auto& a = reused.staged().stages;
      const auto& b = searched.staged().stages;
      REQUIRE(a.size() == b.size());
      for (size_t i = 0; i < a.size(); ++i) {
        CHECK(a[i].strategy == b[i].strategy);
        CHECK(a[i].groups == b[i].groups);
        CHECK(a[i].predicted_ms == b[i].predicted_ms);
      }
      int repeats = 0;
      int64_t reused_transitions = 0, searched_transitions = 0;
      for (size_t k = 0; k < reused_stats.blocks.size(); ++k) {
        const BlockStats& r = reused_stats.blocks[k];
        const BlockStats& s = searched_stats.blocks[k];
        CHECK(s.same_as == -1);
        CHECK(r.search == s.search);
        CHECK(r.kept == s.kept);
        reused_transitions += r.transitions;
        searched_transitions += s.transitions;
        if (r.same_as < 0) continue;
        ++repeats;
        CHECK(r.same_as < static_cast<int>(k));
        CHECK(r.transitions == 0);
        CHECK(r.stages_costed == 0);
        CHECK(block_signature(g, g.blocks()[k]) ==
              block_signature(g, g.blocks()[static_cast<size_t>(r.same_as)]));
      }
      CHECK(repeats > 0);
      CHECK(reused_transitions < searched_transitions);
    }
  }
}
