// Engine behaviour on a GPU: merges and concurrent schedules against the
// CPU reference, input validation, timing, traces, and the measured cost
// model with its profile database.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "cost/budgeted.h"
#include "cost/device_profile.h"
#include "cost/profile_db.h"
#include "cost/simulated.h"
#include "cpu/reference.h"
#include "cuda/measured.h"
#include "exec/stats.h"
#include "gpu_util.h"
#include "onnx/importer.h"
#include "sched/scheduler.h"
#include "sched/validate.h"
#include "test_paths.h"

namespace ios::gputest {
namespace {

using ir::OpKind;

// x -> three branches (1x1 + relu, 3x3 + relu, 5x5 + clip) -> concat
ir::Graph branches(int64_t batch) {
  GraphBuilder b;
  const auto x = b.input("x", {batch, 8, 12, 12});
  const auto a = b.node(OpKind::kRelu, "a", {b.conv("a_conv", x, 4, 1)});
  const auto c = b.node(OpKind::kRelu, "c", {b.conv("c_conv", x, 6, 3, 1, {1, 1, 1, 1})});
  ir::ClipAttrs clip;
  clip.min = 0.0f;
  clip.max = 0.7f;
  const auto d = b.node(OpKind::kClip, "d", {b.conv("d_conv", x, 5, 5, 1, {2, 2, 2, 2})}, clip);
  ir::AxisAttrs axis;
  b.output(b.node(OpKind::kConcat, "y", {a, c, d}, axis));
  return std::move(b.graph());
}

sched::Schedule staged(std::vector<sched::Stage> stages) {
  sched::Schedule s;
  s.body = sched::StagedSchedule{std::move(stages)};
  return s;
}

sched::Stage concurrent(std::vector<std::vector<sched::UnitId>> groups) {
  sched::Stage s;
  s.groups = std::move(groups);
  return s;
}

sched::Stage merge(std::vector<sched::UnitId> units) {
  sched::Stage s;
  s.strategy = sched::Strategy::kMerge;
  s.groups = {std::move(units)};
  return s;
}

void check_schedule(const sched::UnitGraph& units, const sched::Schedule& schedule, const std::string& what) {
  sched::validate_schedule(schedule, units, what);
  const HostMap inputs = random_inputs(*units.ir(), 11);
  const HostMap expected = cpu::run_graph_reference(*units.ir(), inputs);
  const exec::ExecPlan plan = exec::lower(units, schedule);
  for (bool graph : {true, false}) {
    cuda::EngineOptions options;
    options.math = ir::MathMode::kFp32;
    options.cuda_graph = graph;
    check_outputs(run_gpu(units, plan, inputs, options), expected, {1e-4, 1e-3},
                  what + (graph ? " (CUDA graph)" : " (plain)"));
  }
}

TEST_CASE("merged, concurrent and streamed schedules match the reference", "[gpu][engine]") {
  for (int64_t batch : {1, 4}) {
    const ir::Graph graph = branches(batch);
    const sched::UnitGraph units = sched::UnitGraph::form(graph);
    const auto a = *units.find("a"), c = *units.find("c"), d = *units.find("d"), y = *units.find("y");
    const std::string at = " at batch " + std::to_string(batch);
    check_schedule(units, staged({merge({a, c}), concurrent({{d}}), concurrent({{y}})}), "merge of relu convs" + at);
    check_schedule(units, staged({concurrent({{a}, {c}, {d}}), concurrent({{y}})}), "three streams" + at);
    check_schedule(units, staged({concurrent({{a, c}, {d}}), concurrent({{y}})}), "two streams, two in a row" + at);
    sched::StreamedSchedule streamed;
    streamed.num_streams = 3;
    streamed.launches = {{d, 2, 0, 0}, {a, 0, 0, 0}, {c, 1, 0, 0}, {y, 1, 0, 0}};
    sched::Schedule s;
    s.body = streamed;
    check_schedule(units, s, "streamed on three streams" + at);
  }
}

TEST_CASE("a merge of convolutions with a clip epilogue", "[gpu][engine]") {
  GraphBuilder b;
  const auto x = b.input("x", {2, 6, 9, 9});
  ir::ClipAttrs clip;
  clip.min = -0.2f;
  clip.max = 0.4f;
  const auto a = b.node(OpKind::kClip, "a", {b.conv("a_conv", x, 3, 3, 1, {1, 1, 1, 1})}, clip);
  const auto c = b.node(OpKind::kClip, "c", {b.conv("c_conv", x, 5, 1)}, clip);
  b.output(b.node(OpKind::kAdd, "sum", {a, b.node(OpKind::kSlice, "cs", {c}, [] {
                                          ir::SliceAttrs s;
                                          s.axes = {1};
                                          s.starts = {0};
                                          s.ends = {3};
                                          s.steps = {1};
                                          return s;
                                        }())}));
  b.output(c);
  const sched::UnitGraph units = sched::UnitGraph::form(b.graph());
  std::vector<sched::Stage> stages{merge({*units.find("a"), *units.find("c")})};
  for (sched::UnitId u = 0; u < units.size(); ++u) {
    if (units.unit(u).id != "a" && units.unit(u).id != "c") stages.push_back(concurrent({{u}}));
  }
  check_schedule(units, staged(stages), "merge with clip epilogues, members read as strided slices");
}

// Self-attention's projections as PyTorch exports nn.Linear on [N, S, D]:
// MatMul(x, W) then Add(bias, .), three of them reading x, and a consumer
// that reads all three (softmax(Q K^T) V).
ir::Graph attention(int64_t batch) {
  GraphBuilder b;
  const auto x = b.input("x", {batch, 5, 16});
  auto linear = [&](const std::string& name, int64_t out) {
    const auto mm =
        b.node(OpKind::kMatMul, name + "_mm", {x, b.weight(name + ".w", {16, out}, 0.25f)});
    return b.node(OpKind::kAdd, name, {b.weight(name + ".b", {out}, 0.2f), mm});
  };
  const auto q = linear("q", 16), k = linear("k", 16), v = linear("v", 8);
  ir::TransposeAttrs t;
  t.perm = {0, 2, 1};
  const auto scores =
      b.node(OpKind::kMatMul, "scores", {q, b.node(OpKind::kTranspose, "kt", {k}, t)});
  ir::AxisAttrs last;
  last.axis = 2;
  b.output(b.node(OpKind::kMatMul, "y", {b.node(OpKind::kSoftmax, "attn", {scores}, last), v}));
  return std::move(b.graph());
}

TEST_CASE("a merge of the Q, K and V projections matches the reference", "[gpu][engine]") {
  for (int64_t batch : {1, 3}) {
    const ir::Graph graph = attention(batch);
    const sched::UnitGraph units = sched::UnitGraph::form(graph);
    const auto q = *units.find("q"), k = *units.find("k"), v = *units.find("v");
    std::vector<sched::Stage> stages{merge({q, k, v})};
    for (sched::UnitId u = 0; u < units.size(); ++u) {
      if (u != q && u != k && u != v) stages.push_back(concurrent({{u}}));
    }
    check_schedule(units, staged(stages), "merged projections at batch " + std::to_string(batch));
  }
}

TEST_CASE("run() validates inputs by name and size", "[gpu][engine]") {
  const ir::Graph graph = branches(1);
  const sched::UnitGraph units = sched::UnitGraph::form(graph);
  cuda::Engine engine(units, exec::lower(units, sequential_schedule(units)));
  cuda::TensorMap inputs = to_tensor_map(random_inputs(graph, 3));
  CHECK_NOTHROW(engine.run(inputs));
  inputs["x"].pop_back();
  CHECK_THROWS_WITH(engine.run(inputs), Catch::Matchers::Contains("'x'") && Catch::Matchers::Contains("1x8x12x12"));
  CHECK_THROWS_AS(engine.run({}), UserError);
  cuda::TensorMap extra = to_tensor_map(random_inputs(graph, 3));
  extra["z"] = {1.0f};
  CHECK_THROWS_WITH(engine.run(extra), Catch::Matchers::Contains("unknown input 'z'"));
}

TEST_CASE("timing, repeated runs and traces", "[gpu][engine]") {
  const ir::Graph graph = branches(2);
  const sched::UnitGraph units = sched::UnitGraph::form(graph);
  const auto a = *units.find("a"), c = *units.find("c"), d = *units.find("d"), y = *units.find("y");
  const exec::ExecPlan plan = exec::lower(units, staged({concurrent({{a}, {c}, {d}}), concurrent({{y}})}));
  for (bool graph_mode : {true, false}) {
    cuda::EngineOptions options;
    options.cuda_graph = graph_mode;
    cuda::Engine engine(units, plan, options);
    CHECK(engine.info().cuda_graph == graph_mode);
    CHECK(engine.info().num_streams == 3);
    CHECK(engine.info().concat_inputs_zero_copy == 3);
    CHECK(engine.info().arena_bytes > 0);
    cuda::TimingOptions timing;
    timing.warmup_iterations = 2;
    timing.iterations = 7;
    const cuda::TimingSamples times = engine.time(timing);
    CHECK(times.gpu_compute_ms.size() == 7);
    REQUIRE(times.end_to_end_ms.size() == 7);
    for (double t : times.gpu_compute_ms) CHECK(t > 0.0);
    // End-to-end adds the host's launch and synchronisation to the GPU work.
    CHECK(exec::compute_stats(times.end_to_end_ms, 1).median >= exec::compute_stats(times.gpu_compute_ms, 1).min);
    timing.iterations = 1;
    timing.min_duration_ms = 5.0;
    timing.end_to_end = false;
    double total = 0.0;
    const cuda::TimingSamples long_run = engine.time(timing);
    for (double t : long_run.gpu_compute_ms) total += t;
    CHECK(total >= 5.0);
    CHECK(long_run.end_to_end_ms.empty());
    // Repeated runs give identical outputs (no state leaks between iterations).
    const cuda::TensorMap in = to_tensor_map(random_inputs(graph, 5));
    CHECK(engine.run(in) == engine.run(in));

    const cuda::TraceIteration trace = engine.trace();
    CHECK(trace.num_streams == 3);
    CHECK(trace.events.size() == 3);  // the concat's inputs were all written in place: no work
    std::set<int> streams;
    for (const auto& e : trace.events) {
      streams.insert(e.stream);
      CHECK(e.duration_us > 0.0);
      CHECK(e.start_us + e.duration_us <= trace.total_us + 1.0);
    }
    CHECK(streams.size() == 3);
    const auto path = std::filesystem::temp_directory_path() / "ios_gpu_trace_test.json";
    engine.write_trace(path.string(), "branches");
    std::ifstream in_file(path);
    const nlohmann::json doc = nlohmann::json::parse(in_file);
    int complete = 0;
    for (const auto& e : doc.at("traceEvents")) complete += e.at("ph") == "X" ? 1 : 0;
    CHECK(complete == 3);
    std::filesystem::remove(path);
  }
}

TEST_CASE("the measured cost model measures once and remembers", "[gpu][measured]") {
  const ir::Graph graph = branches(1);
  const sched::UnitGraph units = sched::UnitGraph::form(graph);
  const auto db = std::filesystem::temp_directory_path() / "ios_gpu_measured_test.sqlite";
  std::filesystem::remove(db);
  const auto a = *units.find("a"), c = *units.find("c"), d = *units.find("d");
  cuda::MeasuredOptions options;
  options.db_path = db.string();
  int reports = 0;
  options.progress = [&](const cuda::MeasureProgress&) { ++reports; };
  double alone = 0.0, together = 0.0, merged = 0.0;
  {
    auto model = cuda::make_measured_cost_model(units, options);
    model->expect(4);
    alone = model->unit_latency(a);
    sched::Stage stage = concurrent({{a}, {c}, {d}});
    together = model->stage_latency(stage);
    merged = model->stage_latency(merge({a, c}));
    CHECK(model->stage_latency(stage) == together);  // memo
    CHECK(model->progress().measured == 3);
    CHECK(model->progress().cache_hits == 1);
    CHECK(model->progress().eta_s >= 0.0);
    CHECK(reports == 4);
  }
  CHECK(alone > 0.0);
  CHECK(together >= alone * 0.5);  // the stage contains unit a
  CHECK(merged > 0.0);
  {
    auto model = cuda::make_measured_cost_model(units, options);
    CHECK(model->unit_latency(a) == alone);  // from the database, not measured again
    CHECK(model->stage_latency(merge({a, c})) == merged);
    CHECK(model->progress().measured == 0);
    CHECK(model->progress().cache_hits == 2);
  }
  CHECK(cost::ProfileDb(db).count() == 3);
  std::filesystem::remove(db);
}

// Stage costs measured one by one (cuda/timing_plan.h) against the same
// stages inside the whole model's CUDA graph. The model's weights (48
// convolutions of 256 channels, 113 MB in fp32) are about twice an H100's or
// H200's L2 (50, 60 MB), so in the whole model every layer's weights come
// from DRAM while its input was just written by the layer before: the state
// every sample is put in. The former timing (a graph launch's gap in every
// stage, the weights left in L2 by the replay before) would miss on both
// sides: too much per stage launch, too little per weight byte. Tolerance:
// 15% of the whole, plus 1 us per stage for what a stage alone cannot show
// (the dependency between two kernels inside one graph against the start of
// a graph's first kernel; clock and power state between the two timings).
TEST_CASE("the sum of a sequential schedule's measured stages matches its whole-model graph", "[gpu][measured]") {
  GraphBuilder b;
  ir::TensorId x = b.input("x", {1, 256, 14, 14});
  constexpr int kLayers = 48;
  for (int i = 0; i < kLayers; ++i) {
    x = b.node(ir::OpKind::kRelu, "r" + std::to_string(i),
               {b.conv("c" + std::to_string(i), x, 256, 3, 1, {1, 1, 1, 1})});
  }
  b.output(x);
  const sched::UnitGraph units = sched::UnitGraph::form(b.graph());
  const sched::Schedule schedule = sequential_schedule(units);
  cuda::MeasuredOptions options;
  options.use_database = false;
  double sum_ms = 0.0;
  {
    auto model = cuda::make_measured_cost_model(units, options);
    CHECK(model->launch() == "graph");
    for (const sched::Stage& stage : schedule.staged().stages) sum_ms += model->stage_latency(stage);
  }
  cuda::Engine engine(units, exec::lower(units, schedule));
  cuda::TimingOptions timing;
  timing.warmup_iterations = 20;
  timing.iterations = 200;
  timing.end_to_end = false;
  const double whole_ms = exec::compute_stats(engine.time(timing).gpu_compute_ms, 1).median;
  const auto stages = static_cast<double>(schedule.staged().stages.size());
  INFO("sum of " << stages << " measured stages " << sum_ms << " ms, whole-model graph " << whole_ms << " ms");
  CHECK(std::abs(sum_ms - whole_ms) <= 0.15 * whole_ms + stages * 1e-3);
}

TEST_CASE("stages are timed and keyed in the schedule's launch mode", "[gpu][measured]") {
  const ir::Graph graph = branches(1);
  const sched::UnitGraph units = sched::UnitGraph::form(graph);
  const auto db = std::filesystem::temp_directory_path() / "ios_gpu_launch_mode_test.sqlite";
  std::filesystem::remove(db);
  const auto a = *units.find("a"), c = *units.find("c"), d = *units.find("d");
  const sched::Stage stage = concurrent({{a}, {c}, {d}});
  std::map<std::string, double> cost;
  for (const std::string launch : {"graph", "plain", "synced"}) {
    cuda::MeasuredOptions options;
    options.db_path = db.string();
    options.launch = launch;
    auto model = cuda::make_measured_cost_model(units, options);
    CHECK(model->launch() == launch);
    cost[launch] = model->stage_latency(stage);
    CHECK(model->progress().measured == 1);  // not answered by another mode's row
    CHECK(cost[launch] > 0.0);
  }
  // A synced stage of several groups is the plain stage plus the host's
  // wait for the device: not cheaper (10% for noise).
  CHECK(cost["synced"] >= cost["plain"] * 0.9);
  const cost::ProfileDb database(db);
  CHECK(database.count() == 3);
  std::set<std::string> modes;
  for (const auto& [key, entry] : database.entries()) modes.insert(key.launch);
  CHECK(modes == std::set<std::string>{"graph", "plain", "synced"});
  std::filesystem::remove(db);
}

// The budgeted measured search on the GPU (the path the oracle tests cover
// without one, test/sched/measured_search_test.cpp): it measures a part of
// what it considers, every stage of its schedule among them, reuses the
// database, and comes within 3% of measuring everything (both sums of the
// same database's values).
TEST_CASE("the budgeted measured search measures its schedule's stages and reuses them", "[gpu][measured]") {
  const auto path = test::model("squeezenet1_1-bdyn.onnx");
  INFO("model " << path.string());
  REQUIRE(std::filesystem::exists(path));
  onnx::ImportOptions import;
  import.batch = 1;
  const onnx::ImportedModel imported = onnx::import_model(path.string(), import);
  const sched::UnitGraph units = sched::UnitGraph::form(imported.graph);
  const auto db = std::filesystem::temp_directory_path() / "ios_gpu_budgeted_test.sqlite";
  std::filesystem::remove(db);
  cuda::MeasuredOptions options;
  options.db_path = db.string();
  const auto& ios = sched::find_scheduler("ios");
  auto search = [&](sched::CostModel& cost) {
    sched::SearchStats stats;
    sched::Schedule schedule = ios.make(sched::Params::parse("ios", ios.params, ""))->run(units, cost, stats);
    sched::validate_schedule(schedule, units, "ios");
    return schedule;
  };
  cost::SimulatedCostModel ranking(units, cost::load_device_profile("h100"));
  int64_t asked = 0;
  double budgeted_ms = 0.0;
  {
    auto device = cuda::make_measured_cost_model(units, options);
    cost::BudgetedCostModel budgeted(units, *device, ranking);
    const sched::Schedule schedule = search(budgeted);
    asked = device->progress().measured;
    CHECK(budgeted.counts().measured == asked);
    CHECK(budgeted.counts().predicted > 0);
    CHECK_FALSE(budgeted.counts().exhausted);
    for (const sched::Stage& stage : schedule.staged().stages) {
      CHECK(budgeted.is_measured(stage));
      CHECK(device->known_latency(stage) == stage.predicted_ms);
    }
    budgeted_ms = schedule.predicted_latency_ms;
  }
  {
    auto device = cuda::make_measured_cost_model(units, options);
    cost::BudgetedCostModel again(units, *device, ranking);
    search(again);
    CHECK(again.counts().reused > 0);
    CHECK(again.counts().measured == device->progress().measured);  // only stages new to the database
  }
  {
    auto device = cuda::make_measured_cost_model(units, options);
    const sched::Schedule full = search(*device);
    CHECK(budgeted_ms <= 1.03 * full.predicted_latency_ms);
  }
  std::filesystem::remove(db);
}

}  // namespace
}  // namespace ios::gputest
