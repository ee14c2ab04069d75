// The schedule file's "memory" object (docs/schedule-format.md): a round
// trip, files without it (written before it was recorded) still load, and
// every bad value is refused naming the field.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "sched/schedule_io.h"

using namespace ios;
using namespace ios::sched;

namespace {

UnitGraph diamond() { return UnitGraph::from_edges(4, {{0, 1}, {0, 2}, {1, 3}, {2, 3}}); }

Schedule with_memory() {
  Schedule s;
  s.model = {"model.onnx", std::string(64, 'a'), 1, {{"input", {1, 3, 8, 8}}}};
  s.device = {"h100", "", "", ""};
  s.scheduler = {"ios", {{"r", "3"}, {"s", "8"}}, "simulated", "graph"};
  s.predicted_latency_ms = 0.5;
  StagedSchedule staged;
  staged.stages.push_back(Stage{Strategy::kConcurrent, {{0}}, 0.1});
  staged.stages.push_back(Stage{Strategy::kConcurrent, {{1}, {2}}, 0.3});
  staged.stages.push_back(Stage{Strategy::kConcurrent, {{3}}, 0.1});
  s.body = staged;
  MemoryInfo m;
  m.arena_bytes = 1 << 20;
  m.live_peak_bytes = 900000;
  m.inputs_bytes = 768;
  m.outputs_bytes = 40;
  m.weights_bytes = 5000000;
  m.merged_weights_bytes = 1000;
  m.workspace_bytes = {4096, 0};
  m.limit_bytes = 8 << 20;
  s.memory = m;
  return s;
}

std::string error_of(const nlohmann::json& doc, const UnitGraph& g) {
  try {
    parse_schedule(doc.dump(), "bad.json", g);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("schedule memory survives a round trip", "[schedule_file][memory]") {
  const UnitGraph g = diamond();
  const Schedule s = with_memory();
  const auto doc = nlohmann::json::parse(schedule_to_json(s, g));
  CHECK(doc["memory"]["peak_bytes"] == (1 << 20) + 5000000 + 4096);
  CHECK(doc["memory"]["workspaces"] == "predicted");
  const Schedule back = parse_schedule(doc.dump(), "x.json", g);
  REQUIRE(back.memory.has_value());
  CHECK(*back.memory == *s.memory);
}

TEST_CASE("a schedule file without memory still loads", "[schedule_file][memory]") {
  const UnitGraph g = diamond();
  Schedule s = with_memory();
  s.memory.reset();
  const auto doc = nlohmann::json::parse(schedule_to_json(s, g));
  CHECK_FALSE(doc.contains("memory"));
  CHECK_FALSE(parse_schedule(doc.dump(), "x.json", g).memory.has_value());
}

TEST_CASE("bad schedule memory fields are refused by name", "[schedule_file][memory]") {
  const UnitGraph g = diamond();
  const auto good = nlohmann::json::parse(schedule_to_json(with_memory(), g));
  auto edit = [&](const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json doc = good;
    change(doc["memory"]);
    return error_of(doc, g);
  };
  CHECK(edit([](auto& m) { m["arena_bytes"] = -1; }).find("'memory.arena_bytes' must be a byte count") !=
        std::string::npos);
  CHECK(edit([](auto& m) { m["weights_bytes"] = "5 MB"; }).find("'memory.weights_bytes' must be an integer") !=
        std::string::npos);
  CHECK(edit([](auto& m) { m["workspace_bytes"][1] = -3; }).find("'memory.workspace_bytes[1]'") !=
        std::string::npos);
  CHECK(edit([](auto& m) { m["workspaces"] = "guessed"; }).find("'memory.workspaces'") != std::string::npos);
  CHECK(edit([](auto& m) { m["peak_bytes"] = 1; }).find("'memory.peak_bytes' must be arena_bytes + weights_bytes") !=
        std::string::npos);
  CHECK(edit([](auto& m) { m.erase("live_peak_bytes"); }).find("'memory.live_peak_bytes' is missing") !=
        std::string::npos);
  CHECK(edit([](auto& m) { m["arena_bytes"] = uint64_t{1} << 63; }).find("'memory.arena_bytes'") !=
        std::string::npos);
  // A part beyond 2^61 is named as itself, not as the sum (issue 53, item 20).
  CHECK(edit([](auto& m) { m["weights_bytes"] = int64_t{1} << 62; })
            .find("'memory.weights_bytes' must be a byte count (an integer from 0 to 2^61)") != std::string::npos);
  nlohmann::json doc = good;
  doc["memory"] = 5;
  CHECK(error_of(doc, g).find("'memory' must be an object") != std::string::npos);
}
