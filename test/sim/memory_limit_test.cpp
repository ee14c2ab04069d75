// ios-optimize --memory-limit and --max-streams (docs/schedulers.md,
// *Memory*): the options' parsing, and on real models that a limit between
// the sequential schedule's peak and the unconstrained one is never
// exceeded and never costs more than the sequential schedule.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <memory>

#include "core/error.h"
#include "exec/schedule_memory.h"
#include "model/prepared_model.h"
#include "optimize/optimizer.h"
#include "sched/memory_bound.h"
#include "sched/scheduler.h"
#include "test_paths.h"

using namespace ios;

namespace {

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

struct Case {
  std::unique_ptr<model::PreparedModel> model;
  optimize::CostChoice cost;
};

const Case& prepare(const std::string& file) {
  static std::map<std::string, std::unique_ptr<Case>> cache;
  auto& slot = cache[file];
  if (!slot) {
    const auto path = test::model(file);
    INFO("model " << path.string() << " (made by onnx_models/export_models.py)");
    REQUIRE(std::filesystem::exists(path));
    slot = std::make_unique<Case>();
    slot->model = model::prepare_model(path.string(), model::shape_options(1, false, {}));
    optimize::OptimizeOptions options;
    options.cost = "simulated";
    slot->cost = optimize::make_cost_model(*slot->model->units, options, slot->model->precision.value);
  }
  return *slot;
}

sched::MemoryInfo memory_of(const Case& c, const sched::Schedule& s) {
  return exec::schedule_memory(*c.model->units, s);
}

}  // namespace

TEST_CASE("memory limit sizes (--memory-limit)", "[memory][options]") {
  CHECK(optimize::parse_memory_limit("1048576") == 1048576);
  CHECK(optimize::parse_memory_limit("100B") == 100);
  CHECK(optimize::parse_memory_limit("2 KiB") == 2048);
  CHECK(optimize::parse_memory_limit("512MiB") == int64_t{512} << 20);
  CHECK(optimize::parse_memory_limit("1.5GiB") == int64_t{3} << 29);
  // A plus sign is a sign, not a negative number (issue 53, item 19).
  CHECK(optimize::parse_memory_limit("+5MiB") == int64_t{5} << 20);
  CHECK(optimize::parse_memory_limit("+100") == 100);
  for (const char* bad : {"-1", "-5MiB", "0", "0MiB", "0.1", "nan", "NaN", "inf", "", "12XB", "12 MB", "1e9",
                          "1.2.3", ".", "MiB", "99999999999GiB", "+", "++5", "+-5", "+0"}) {
    INFO("'" << bad << "'");
    const std::string e = error_of([&] { optimize::parse_memory_limit(bad); });
    CHECK(e.find("--memory-limit") != std::string::npos);
    CHECK(e.find('\n') == std::string::npos);
  }
  CHECK(error_of([] { optimize::parse_memory_limit("12XB"); }).find("unknown unit 'XB'") != std::string::npos);
}

TEST_CASE("max streams (--max-streams) and the schedulers' own stream parameters: the smaller wins", "[memory][options]") {
  using optimize::apply_max_streams;
  CHECK(apply_max_streams("ios", "", 0) == "");
  CHECK(apply_max_streams("ios", "", 4).find("s=4") != std::string::npos);
  CHECK(apply_max_streams("ios", "s=2", 4) == "s=2");
  CHECK(apply_max_streams("ios", "s=0", 4).find("s=4") != std::string::npos);
  CHECK(apply_max_streams("dos", "", 3).find("s=3") != std::string::npos);
  CHECK(apply_max_streams("lios", "streams=8", 2) == "streams=2");
  CHECK(apply_max_streams("lios", "streams=1", 2) == "streams=1");
  CHECK(apply_max_streams("sequential", "", 2) == "");
  CHECK(error_of([] { apply_max_streams("greedy", "", 2); }).find("--max-streams: the greedy scheduler") !=
        std::string::npos);
  CHECK(error_of([] { apply_max_streams("nimble", "", 2); }).find("--max-streams: the nimble scheduler") !=
        std::string::npos);
}

TEST_CASE("max streams (--max-streams) bound every stage of the searching schedulers", "[memory][model]") {
  const Case& c = prepare("inception_v3-bdyn.onnx");
  for (const std::string scheduler : {"ios", "ios-parallel", "dos"}) {
    for (int streams : {1, 2, 3}) {
      sched::SearchStats stats;
      const auto s = optimize::schedule_model(*c.model, scheduler, optimize::apply_max_streams(scheduler, "", streams),
                                              c.cost, stats, {}, 0.0, 1, optimize::SearchBounds{0, streams});
      INFO(scheduler << " --max-streams " << streams);
      for (const auto& stage : s.staged().stages) CHECK(static_cast<int>(stage.groups.size()) <= streams);
      CHECK(static_cast<int>(memory_of(c, s).workspace_bytes.size()) <= streams);
    }
  }
}

// Every scheduler, limits between the sequential schedule's peak and the
// scheduler's own unconstrained peak: within the limit, and (the searching
// ones) no slower than the sequential schedule.
TEST_CASE("a memory limit is never exceeded and never costs more than sequential", "[memory][model]") {
  for (const std::string file : {"inception_v3-bdyn.onnx", "googlenet-bdyn.onnx", "squeezenet1_1-bdyn.onnx"}) {
    const Case& c = prepare(file);
    sched::SearchStats stats;
    const auto sequential = optimize::schedule_model(*c.model, "sequential", "", c.cost, stats);
    const int64_t sequential_peak = memory_of(c, sequential).peak_bytes();
    for (const auto& entry : sched::scheduler_registry()) {
      if (entry.name == "greedy" || entry.name == "nimble") continue;  // nothing to trade: checked below
      sched::SearchStats free_stats;
      const auto free = optimize::schedule_model(*c.model, entry.name, "", c.cost, free_stats);
      const int64_t free_peak = memory_of(c, free).peak_bytes();
      for (int64_t limit : {sequential_peak, (sequential_peak + free_peak) / 2, free_peak}) {
        if (limit < sequential_peak) continue;
        INFO(file << " " << entry.name << ": sequential peak " << sequential_peak << ", unconstrained " << free_peak
                  << ", limit " << limit);
        const auto found = optimize::search_within_memory(*c.model, entry.name, "", c.cost, limit, 0,
                                                          exec::StageJoin::kEvents, 0.0, 1, {});
        CHECK(memory_of(c, found.schedule).peak_bytes() <= limit);
        if (entry.searches) CHECK(found.schedule.predicted_latency_ms <= sequential.predicted_latency_ms + 1e-9);
        if (limit >= free_peak && entry.searches) {
          CHECK(found.schedule.predicted_latency_ms == Approx(free.predicted_latency_ms));
        }
      }
    }
  }
}

// A bounded search keeps the blocks of a looser search's schedule that fit
// the new bound (Scheduler::set_prior) instead of searching them again: the
// schedule must be the one a search from scratch finds.
TEST_CASE("a bounded search that keeps a looser round's fitting blocks finds what a full search finds",
          "[memory][model]") {
  for (const std::string file : {"inception_v3-bdyn.onnx", "randwire-bdyn-64x64.onnx"}) {
    const Case& c = prepare(file);
    for (const char* params : {"strategy=parallel", ""}) {
      sched::SearchStats stats;
      const auto free = optimize::schedule_model(*c.model, "ios", params, c.cost, stats);
      REQUIRE(free.is_staged());
      const int64_t free_bound = sched::staged_live_peak(*c.model->units, free.staged());
      int searched_blocks_saved = 0;
      for (double fraction : {0.8, 0.5}) {
        const auto bound = static_cast<int64_t>(static_cast<double>(free_bound) * fraction);
        INFO(file << " [" << params << "] bound " << bound << " of " << free_bound);
        sched::SearchStats scratch_stats, kept_stats;
        const auto scratch = optimize::schedule_model(*c.model, "ios", params, c.cost, scratch_stats, {}, 0.0, 1,
                                                      optimize::SearchBounds{bound, 0, nullptr});
        const auto kept = optimize::schedule_model(*c.model, "ios", params, c.cost, kept_stats, {}, 0.0, 1,
                                                   optimize::SearchBounds{bound, 0, &free.staged()});
        CHECK(kept.predicted_latency_ms == Approx(scratch.predicted_latency_ms).epsilon(1e-12));
        // Within the bound wherever the search from scratch is (a bound below
        // what a block's sequential order needs leaves that block over it).
        const int64_t scratch_peak = sched::staged_live_peak(*c.model->units, scratch.staged());
        CHECK(sched::staged_live_peak(*c.model->units, kept.staged()) <= std::max(bound, scratch_peak));
        int64_t scratch_states = 0, kept_states = 0;
        for (const auto& b : scratch_stats.blocks) scratch_states += b.states;
        for (const auto& b : kept_stats.blocks) kept_states += b.states;
        CHECK(kept_states <= scratch_states);
        searched_blocks_saved += kept_states < scratch_states ? 1 : 0;
      }
      CHECK(searched_blocks_saved > 0);  // some block fit and was not searched again
    }
  }
}

TEST_CASE("a memory limit nothing fits names the smallest peak found", "[memory][model]") {
  const Case& c = prepare("squeezenet1_1-bdyn.onnx");
  sched::SearchStats stats;
  const auto sequential = optimize::schedule_model(*c.model, "sequential", "", c.cost, stats);
  const int64_t peak = memory_of(c, sequential).peak_bytes();
  for (const std::string scheduler : {"ios", "dos", "lios", "sequential"}) {
    const std::string e = error_of([&] {
      optimize::search_within_memory(*c.model, scheduler, "", c.cost, peak / 2, 0, exec::StageJoin::kEvents, 0.0, 1,
                                     {});
    });
    INFO(scheduler << ": " << e);
    CHECK(e.find("is below the smallest peak ios found") != std::string::npos);
    CHECK(e.find('\n') == std::string::npos);
  }
  // Greedy and Nimble cannot trade speed for memory, and say so.
  for (const std::string scheduler : {"greedy", "nimble"}) {
    sched::SearchStats free_stats;
    const int64_t own = memory_of(c, optimize::schedule_model(*c.model, scheduler, "", c.cost, free_stats)).peak_bytes();
    const std::string e = error_of([&] {
      optimize::search_within_memory(*c.model, scheduler, "", c.cost, own - 1, 0, exec::StageJoin::kEvents, 0.0, 1,
                                     {});
    });
    CHECK(e.find("its algorithm cannot trade speed for memory") != std::string::npos);
  }
}
