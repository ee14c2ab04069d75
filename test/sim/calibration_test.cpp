// Calibration recovers a device profile's knobs from a profile database the
// simulator itself wrote with known knobs (the same path a database measured
// on a GPU takes).
#include "cost/calibrate.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "cost/temp_dir.h"
#include "optimize/optimizer.h"
#include "sched/signature.h"
#include "test_paths.h"

using namespace ios;

namespace {

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> file_names(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("calibration recovers known knobs from a simulated profile database",
          "[sim][calibration]") {
  const auto path = test::model("squeezenet1_1-bdyn.onnx");
  REQUIRE(std::filesystem::exists(path));
  const auto prepared = model::prepare_model(path.string(), model::shape_options(1, false, {}));
  const sched::UnitGraph& units = *prepared->units;
  cost::SimulatedOptions options;
  options.math = ir::MathMode::kFp32;

  // The fit starts from middling values of the five knobs it fits (not the
  // shipped ones, which bench/published refits), the rest of the v100.
  cost::DeviceProfile start = cost::load_device_profile("v100");
  start.launch_overhead_us = 4.0;
  start.event_sync_overhead_us = 3.0;
  start.compute_efficiency = 0.7;
  start.memory_efficiency = 0.8;
  start.concurrency_interference = 0.05;
  cost::DeviceProfile truth = start;
  truth.launch_overhead_us = 5.2;
  truth.event_sync_overhead_us = 2.1;
  truth.compute_efficiency = 0.55;
  truth.memory_efficiency = 0.68;
  truth.concurrency_interference = 0.12;

  // The "measured" database: every stage the searches ask about, timed by
  // the simulator with the true knobs, plus entries of another device and
  // another batch that calibration must ignore.
  test::TempDir dir;
  const auto db_path = dir / "profile.sqlite";
  size_t stored = 0;
  {
    cost::ProfileDb db(db_path);
    cost::SimulatedCostModel measured(units, truth, options);
    std::vector<std::pair<cost::ProfileKey, cost::ProfileEntry>> entries;
    const std::vector<sched::Stage> stages = cost::candidate_stages(units, truth, options);
    for (const sched::Stage& stage : stages) {
      const std::string signature = sched::stage_signature(units, stage);
      entries.push_back({{"Synthetic V100", "1.0", "9.0", "fp32", 1, signature},
                         {measured.stage_latency(stage), 100, 0}});
      entries.push_back({{"Synthetic V100", "1.0", "9.0", "fp32", 8, signature}, {1.0, 100, 0}});
    }
    for (size_t i = 0; i < 5 && i < stages.size(); ++i) {
      entries.push_back(
          {{"Other GPU", "1.0", "9.0", "fp32", 1, sched::stage_signature(units, stages[i])},
           {1.0, 100, 0}});
    }
    db.store_all(entries);
    stored = stages.size();
  }

  // Calibration reads the database read-only: the file is byte-identical
  // afterwards and nothing appears beside it (no -wal or -shm file).
  const std::string bytes_before = read_bytes(db_path);
  const std::vector<std::string> files_before = file_names(dir.path());
  cost::DbSamples found;
  {
    const cost::ProfileDb db(db_path, cost::ProfileDb::Access::kReadOnly);
    found = cost::samples_from_db(units, db, cost::candidate_stages(units, start, options),
                                  ir::MathMode::kFp32, 1);
  }
  CHECK(found.device == "'Synthetic V100' (driver '1.0', cuDNN '9.0')");
  CHECK(found.samples.size() > 50);
  CHECK(found.samples.size() <= stored);

  const cost::CalibrationResult fit = cost::calibrate_profile(units, start, options, found.samples);
  INFO("evaluations " << fit.evaluations << ", error " << fit.mean_error_before << " -> "
                      << fit.mean_error_after);
  CHECK(fit.fitted.size() == 5);  // no tensor cores on a V100
  CHECK(fit.profile.launch_overhead_us == Approx(truth.launch_overhead_us).epsilon(0.05));
  CHECK(fit.profile.event_sync_overhead_us == Approx(truth.event_sync_overhead_us).epsilon(0.05));
  CHECK(fit.profile.compute_efficiency == Approx(truth.compute_efficiency).epsilon(0.05));
  CHECK(fit.profile.memory_efficiency == Approx(truth.memory_efficiency).epsilon(0.05));
  CHECK(fit.profile.concurrency_interference ==
        Approx(truth.concurrency_interference).epsilon(0.05));
  CHECK(fit.mean_error_before > 0.05);
  CHECK(fit.mean_error_after < 0.01);
  // What is not fitted stays as it was.
  CHECK(fit.profile.sm_count == start.sm_count);
  CHECK(fit.profile.blocks_per_sm == start.blocks_per_sm);

  // The same through ios-optimize --calibrate: a profile file that loads.
  optimize::OptimizeOptions cli;
  cli.model_path = path.string();
  cli.batch = 1;
  cli.precision = ir::Precision::float32(ir::MathMode::kFp32);
  const auto start_path = dir / "start.json";
  std::ofstream(start_path) << cost::device_profile_json(start);
  cli.device_profile = start_path.string();
  cli.calibrate_db = db_path.string();
  cli.output_path = (dir / "fitted.json").string();
  std::ostringstream out;
  CHECK(optimize::run_optimize(cli, out) == 0);
  CHECK(out.str().find("Synthetic V100") != std::string::npos);
  const cost::DeviceProfile written = cost::load_device_profile(cli.output_path);
  CHECK(written.name == "v100-calibrated");
  CHECK(written.compute_efficiency == Approx(truth.compute_efficiency).epsilon(0.05));
  CHECK(read_bytes(db_path) == bytes_before);
  std::vector<std::string> files_after = file_names(dir.path());
  for (const char* made : {"fitted.json", "start.json"}) {
    files_after.erase(std::remove(files_after.begin(), files_after.end(), made), files_after.end());
  }
  CHECK(files_after == files_before);

  cli.calibrate_db = (dir / "missing.sqlite").string();  // never created by calibration
  CHECK_THROWS_AS(optimize::run_optimize(cli, out), ios::UserError);
  CHECK_FALSE(std::filesystem::exists(dir / "missing.sqlite"));
}

TEST_CASE("a fit to absurd measurements stays inside the accepted ranges", "[sim][calibration]") {
  const auto path = test::model("squeezenet1_1-bdyn.onnx");
  REQUIRE(std::filesystem::exists(path));
  const auto prepared = model::prepare_model(path.string(), model::shape_options(1, false, {}));
  const sched::UnitGraph& units = *prepared->units;
  cost::SimulatedOptions options;
  options.math = ir::MathMode::kTf32;
  const cost::DeviceProfile start = cost::load_device_profile("h100");
  const std::vector<sched::Stage> stages = cost::candidate_stages(units, start, options);
  // Every stage ten seconds (the knobs want to grow without bound), or a
  // tenth of a microsecond (they want to vanish): the fit is clamped to the
  // ranges the parser accepts, so the written profile loads.
  for (const double ms : {cost::kMaxLatencyMs, 1e-4}) {
    std::vector<cost::StageSample> samples;
    for (const sched::Stage& stage : stages) samples.push_back({stage, ms});
    const cost::CalibrationResult fit = cost::calibrate_profile(units, start, options, samples);
    INFO("measured " << ms << " ms");
    CHECK(fit.fitted.size() == 6);  // with the tensor-core efficiency
    CHECK_NOTHROW(cost::validate_device_profile(fit.profile, "fit"));
    CHECK_NOTHROW(cost::parse_device_profile(cost::device_profile_json(fit.profile), "fit.json"));
    CHECK(std::isfinite(fit.mean_error_after));
  }
}

TEST_CASE("calibration of a 16-bit model fits the tensor-core efficiency",
          "[sim][calibration][half]") {
  // The float16 SqueezeNet: its convolutions run on the FP16 tensor cores
  // whatever the precision, so the tensor-core efficiency is fitted even at
  // --precision fp32, from stages whose signatures carry the type.
  const auto path = test::model("squeezenet1_1-64x64.fp16.onnx");
  REQUIRE(std::filesystem::exists(path));
  const auto prepared = model::prepare_model(path.string(), model::shape_options(1, false, {}));
  const sched::UnitGraph& units = *prepared->units;
  cost::SimulatedOptions options;
  options.math = ir::MathMode::kFp32;
  cost::DeviceProfile start = cost::load_device_profile("h100");
  cost::DeviceProfile truth = start;
  truth.tensor_core_efficiency = 0.6;
  truth.launch_overhead_us = 4.0;
  cost::SimulatedCostModel measured(units, truth, options);
  std::vector<cost::StageSample> samples;
  bool typed = false;
  for (const sched::Stage& stage : cost::candidate_stages(units, start, options)) {
    typed = typed || sched::stage_signature(units, stage).find(":fp16") != std::string::npos;
    samples.push_back({stage, measured.stage_latency(stage)});
  }
  CHECK(typed);
  const cost::CalibrationResult fit = cost::calibrate_profile(units, start, options, samples);
  CHECK(std::find(fit.fitted.begin(), fit.fitted.end(), "tensor_core_efficiency") !=
        fit.fitted.end());
  CHECK(fit.fitted.size() == 6);
  CHECK(fit.mean_error_after < fit.mean_error_before);
  CHECK(fit.mean_error_after < 0.02);
  CHECK(fit.profile.peak_fp16_tflops == start.peak_fp16_tflops);
  CHECK_NOTHROW(cost::parse_device_profile(cost::device_profile_json(fit.profile), "fit.json"));
}

TEST_CASE("one calibration over two models measured in two databases", "[sim][calibration]") {
  // SqueezeNet's stages in one database, GoogLeNet's in another (as a kit
  // run and an earlier one hold them): ios-optimize --calibrate-model
  // --calibrate-db fits the knobs to both at once and reports each model.
  const auto squeezenet = test::model("squeezenet1_1-bdyn.onnx");
  const auto googlenet = test::model("googlenet-bdyn.onnx");
  REQUIRE(std::filesystem::exists(squeezenet));
  REQUIRE(std::filesystem::exists(googlenet));
  const auto a = model::prepare_model(squeezenet.string(), model::shape_options(1, false, {}));
  const auto b = model::prepare_model(googlenet.string(), model::shape_options(1, false, {}));
  cost::SimulatedOptions options;
  options.math = ir::MathMode::kFp32;
  cost::DeviceProfile start = cost::load_device_profile("v100");
  start.launch_overhead_us = 4.0;
  start.compute_efficiency = 0.7;
  cost::DeviceProfile truth = start;
  truth.launch_overhead_us = 5.5;
  truth.event_sync_overhead_us = 2.4;
  truth.compute_efficiency = 0.5;
  truth.memory_efficiency = 0.65;
  truth.concurrency_interference = 0.1;

  test::TempDir dir;
  // Each database: the model's stages timed by the simulator with the true
  // knobs (GoogLeNet's first 60 only, to keep the fit quick).
  auto write_db = [&](const std::filesystem::path& path, const sched::UnitGraph& units,
                      size_t limit, double poison_ms, const sched::UnitGraph* poisoned) {
    cost::ProfileDb db(path);
    cost::SimulatedCostModel measured(units, truth, options);
    std::vector<std::pair<cost::ProfileKey, cost::ProfileEntry>> entries;
    const std::vector<sched::Stage> stages = cost::candidate_stages(units, truth, options);
    for (size_t i = 0; i < stages.size() && i < limit; ++i) {
      entries.push_back(
          {{"Synthetic V100", "1.0", "9.0", "fp32", 1, sched::stage_signature(units, stages[i])},
           {measured.stage_latency(stages[i]), 100, 0}});
    }
    // Stages of the other model at an absurd latency: the first database
    // has them, so these must not count.
    if (poisoned != nullptr) {
      for (const sched::Stage& stage : cost::candidate_stages(*poisoned, truth, options)) {
        entries.push_back(
            {{"Synthetic V100", "1.0", "9.0", "fp32", 1, sched::stage_signature(*poisoned, stage)},
             {poison_ms, 100, 0}});
      }
    }
    db.store_all(entries);
    return std::min(limit, stages.size());
  };
  const size_t stored_a = write_db(dir / "a.sqlite", *a->units, 1000000, 0.0, nullptr);
  const size_t stored_b = write_db(dir / "b.sqlite", *b->units, 60, 5.0, a->units.get());

  optimize::OptimizeOptions cli;
  cli.model_path = squeezenet.string();
  cli.calibrate_models = {googlenet.string()};
  cli.batch = 1;
  cli.precision = ir::Precision::float32(ir::MathMode::kFp32);
  const auto start_path = dir / "start.json";
  std::ofstream(start_path) << cost::device_profile_json(start);
  cli.device_profile = start_path.string();
  cli.calibrate_db = (dir / "a.sqlite").string();
  cli.calibrate_dbs = {(dir / "b.sqlite").string()};
  cli.output_path = (dir / "fitted.json").string();
  std::ostringstream out;
  REQUIRE(optimize::run_optimize(cli, out) == 0);
  INFO(out.str());
  CHECK(out.str().find("googlenet-bdyn.onnx") != std::string::npos);
  // Stages that launch nothing are not counted: at most what was stored.
  for (const auto& [stored, model] :
       {std::pair{stored_a, squeezenet}, std::pair{stored_b, googlenet}}) {
    const size_t at = out.str().find(" stages of " + model.string());
    REQUIRE(at != std::string::npos);
    const size_t from = out.str().rfind(' ', at - 1) + 1;
    const size_t counted = std::stoul(out.str().substr(from, at - from));
    CHECK(counted > stored / 2);
    CHECK(counted <= stored);
  }
  const cost::DeviceProfile written = cost::load_device_profile(cli.output_path);
  CHECK(written.description.find("squeezenet1_1-bdyn.onnx") != std::string::npos);
  CHECK(written.description.find("googlenet-bdyn.onnx") != std::string::npos);
  CHECK(written.launch_overhead_us == Approx(truth.launch_overhead_us).epsilon(0.05));
  CHECK(written.compute_efficiency == Approx(truth.compute_efficiency).epsilon(0.05));
  CHECK(written.memory_efficiency == Approx(truth.memory_efficiency).epsilon(0.05));

  // The library: a model without samples takes no part and says so.
  cost::ModelSamples with;
  with.graph = a->units.get();
  with.options = options;
  cost::SimulatedCostModel measured(*a->units, truth, options);
  for (const sched::Stage& stage : cost::candidate_stages(*a->units, start, options))
    with.samples.push_back({stage, measured.stage_latency(stage)});
  cost::ModelSamples without;
  without.graph = b->units.get();
  without.options = options;
  const cost::CalibrationResult fit = cost::calibrate_profile({with, without}, start);
  REQUIRE(fit.per_model.size() == 2);
  CHECK(fit.per_model[0].samples == fit.samples);
  CHECK(fit.per_model[1].samples == 0);
  CHECK(fit.mean_error_after < 0.01);

  // Neither database holds a third model's stages: with the others it is
  // reported and skipped; alone it is an error naming both databases.
  const std::string mobilenet = test::model("mobilenet_v2-bdyn.onnx").string();
  cli.calibrate_models = {mobilenet};
  std::ostringstream skipped;
  REQUIRE(optimize::run_optimize(cli, skipped) == 0);
  CHECK(skipped.str().find("no stages of " + mobilenet) != std::string::npos);
  cli.model_path = mobilenet;
  cli.calibrate_models = {};
  CHECK_THROWS_WITH(optimize::run_optimize(cli, out), Catch::Contains("a.sqlite") &&
                                                          Catch::Contains("b.sqlite") &&
                                                          Catch::Contains("none of the stages of"));
}
