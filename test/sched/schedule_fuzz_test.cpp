// The schedule parser reads files users edit and move around: random
// corruptions of a valid file must give a UserError (or parse, when the
// corruption happens to leave a valid schedule), never a crash or another
// exception type.
#include <catch2/catch.hpp>

#include <random>

#include "core/error.h"
#include "sched/schedule_io.h"

using namespace ios;
using namespace ios::sched;

TEST_CASE("corrupted schedule files fail cleanly", "[schedule_file][fuzz]") {
  const UnitGraph g = UnitGraph::from_edges(5, {{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, 4}});
  Schedule s;
  s.model = {"m.onnx", std::string(64, 'c'), 1, {{"input", {1, 3, 8, 8}}}};
  s.scheduler = {"ios", {{"r", "3"}}, "simulated", ""};
  StagedSchedule staged;
  staged.stages = {{Strategy::kConcurrent, {{0}}, 0.1},
                   {Strategy::kConcurrent, {{1}, {2}}, 0.2},
                   {Strategy::kConcurrent, {{3, 4}}, 0.3}};
  s.body = staged;
  const std::string good = schedule_to_json(s, g);
  const std::string alphabet = "{}[]\",:0123456789-eE.truefalsnu \n\\u0000stagesgroupsformversion";

  std::mt19937 rng(20261122);
  int rejected = 0, accepted = 0;
  for (int trial = 0; trial < 5000; ++trial) {
    std::string text = good;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const size_t pos = rng() % text.size();
      switch (rng() % 4) {
        case 0: text[pos] = alphabet[rng() % alphabet.size()]; break;        // replace
        case 1: text.erase(pos, 1 + rng() % 8); break;                       // delete
        case 2: text.insert(pos, 1, alphabet[rng() % alphabet.size()]); break;  // insert
        case 3: text.resize(pos); break;                                     // truncate
      }
    }
    try {
      parse_schedule(text, "fuzz.json", g);
      ++accepted;
    } catch (const UserError& e) {
      ++rejected;
      REQUIRE(std::string(e.what()).rfind("fuzz.json: ", 0) == 0);  // names the file first
    }
    // Any other exception type escapes and fails the test.
  }
  CHECK(rejected > 4000);
  INFO("accepted " << accepted);
}
