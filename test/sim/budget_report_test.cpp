// --profile-budget's parsing, the shipped profile a GPU's name selects, and
// how the summary and --report-json show a budgeted measured search (the
// search itself: test/sched/measured_search_test.cpp; on a GPU:
// ios_gpu_tests).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "optimize/optimize_report.h"
#include "optimize/optimizer.h"

using namespace ios;

TEST_CASE("profile budgets: stages, seconds or all, and nothing else", "[optimize][budget]") {
  const cost::BudgetOptions stages = optimize::parse_profile_budget("5000");
  CHECK(stages.max_stages == 5000);
  CHECK(stages.max_seconds == 0.0);
  const cost::BudgetOptions seconds = optimize::parse_profile_budget("2.5s");
  CHECK(seconds.max_stages < 0);
  CHECK(seconds.max_seconds == 2.5);
  const cost::BudgetOptions all = optimize::parse_profile_budget("all");
  CHECK(all.max_stages < 0);
  CHECK(all.max_seconds == 0.0);
  CHECK(optimize::parse_profile_budget("1e3").max_stages == 1000);
  for (const char* bad : {"", "0", "-5", "1.5", "abc", "10x", "s", "0s", "-1s", "inf", "nan", "2e9", " 5"}) {
    INFO("'" << bad << "'");
    CHECK_THROWS_AS(optimize::parse_profile_budget(bad), UserError);
  }
}

TEST_CASE("a GPU's name selects its shipped profile", "[optimize][budget]") {
  CHECK(optimize::profile_for_device("NVIDIA H100 80GB HBM3", "x") == "h100");
  CHECK(optimize::profile_for_device("NVIDIA H200", "x") == "h200");
  CHECK(optimize::profile_for_device("NVIDIA A100-SXM4-40GB", "x") == "a100");
  CHECK(optimize::profile_for_device("Tesla V100-SXM2-16GB", "x") == "v100");
  CHECK(optimize::profile_for_device("Tesla K80", "x") == "k80");
  CHECK(optimize::profile_for_device("NVIDIA GeForce RTX 4090", "h100") == "h100");
}

TEST_CASE("the summary and the JSON report say what the budget measured", "[optimize][budget]") {
  optimize::OptimizeReport report;
  report.cost_model = "measured";
  report.measurement.emplace();
  report.measurement->measured = 100;
  report.measurement->budget = optimize::BudgetReport{"100", 100, 3, 50, true, 9, 2};
  const std::string summary = optimize::render_summary(report);
  CHECK_THAT(summary, Catch::Contains("Budget           --profile-budget 100: 100 stages measured, 3 reused, "
                                      "50 predicted only; budget spent: 2 of the schedule's 9 stages are "
                                      "predicted (raise --profile-budget to measure them)"));
  const nlohmann::json doc = nlohmann::json::parse(optimize::render_json(report));
  CHECK(doc["measurement"]["measured"] == 100);
  CHECK(doc["measurement"]["budget"]["limit"] == "100");
  CHECK(doc["measurement"]["budget"]["exhausted"] == true);
  CHECK(doc["measurement"]["budget"]["schedule_predicted"] == 2);

  report.measurement->budget = optimize::BudgetReport{"5000", 333, 0, 3584, false, 40, 0};
  CHECK_THAT(optimize::render_summary(report),
             Catch::Contains("--profile-budget 5000: 333 stages measured, 0 reused, 3584 predicted only; "
                             "every stage of the schedule measured"));
  // Predicted costs: no measurement at all.
  report.measurement.reset();
  CHECK_FALSE(nlohmann::json::parse(optimize::render_json(report)).contains("measurement"));
  CHECK_THAT(optimize::render_summary(report), !Catch::Contains("Budget"));
}
