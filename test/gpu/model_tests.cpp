// The shipped models (what scripts/make-models.sh writes into models_dir(),
// named <name>[-b<N>|-bdyn][-<size>].onnx, size an image's HxW or a clip's
// TxHxW): every scheduler's schedule on the GPU, with and without CUDA
// graphs, in FP32 and TF32, and the sequential and IOS schedules of the
// model converted to float16 and bfloat16, each output judged by the GPU's
// accuracy rule (accuracy_rule.h): against a float64 truth of the file, by
// comparison with an independent run of the file at the same precision on
// the same GPU. At batch 8 (files with a symbolic batch) the input is the
// batch-1 input repeated, and every sample is judged against the same truth,
// by comparison with the peer run at batch 8 on the same repeated input.
// The data come from the GPU kit (scripts/gpu/accuracy.py; IOS_ACCURACY_DIR).
// IOS_GPU_TEST_MODELS=name,name restricts the models; each model is its own
// section so a run can take them one by one.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "accuracy_rule.h"
#include "cost/device_profile.h"
#include "cost/simulated.h"
#include "cpu/executor.h"
#ifdef IOS_HAVE_CUDA
#include "cuda/program.h"
#endif
#include "gpu_util.h"
#include "ir/half_conversion.h"
#include "onnx/importer.h"
#include "sched/scheduler.h"
#include "sched/validate.h"
#include "test_paths.h"

namespace ios::gputest {
namespace {

// The batch-1 inputs repeated `batch` times along the first axis.
HostMap repeated(const std::map<std::string, exec::HostTensor>& inputs, int64_t batch) {
  HostMap out;
  for (const auto& [name, t] : inputs) {
    ir::Shape shape = t.shape;
    REQUIRE(!shape.empty());
    REQUIRE(shape[0] == 1);
    shape[0] = batch;
    exec::HostTensor r(shape);
    for (int64_t b = 0; b < batch; ++b) std::copy(t.data.begin(), t.data.end(), r.data.begin() + b * t.size());
    out[name] = std::move(r);
  }
  return out;
}

// Every output of `actual` judged by the rule against `data` at `precision`.
void judge_outputs(const HostMap& actual, const AccuracyData& data, RulePrecision precision, int64_t samples,
                   const std::string& what) {
  INFO(what);
  // The peer at the same batch: another batch runs other kernels, with other
  // rounding (a batch-1 peer held batch-8 FP32 to a bound 1.03-1.15x too
  // tight on DenseNet and GoogLeNet, H200, 2026-11-28).
  INFO("the peer's outputs at " << rule_name(precision) << ", batch " << samples
                                << ", are made on the GPU by scripts/gpu/accuracy.py peers (first-run.sh)");
  const auto at_batch = data.peers.find(samples);
  REQUIRE(at_batch != data.peers.end());
  const auto peer = at_batch->second.find(precision);
  REQUIRE(peer != at_batch->second.end());
  REQUIRE(actual.size() == data.truth.size());
  for (const auto& [name, truth] : data.truth) {
    INFO("output " << name);
    const auto it = actual.find(name);
    REQUIRE(it != actual.end());
    const RuleVerdict verdict = judge(it->second, truth, peer->second.at(name), precision, samples);
    INFO(verdict.report());
    CHECK(verdict.passed());
  }
}

sched::Schedule schedule_of(const sched::SchedulerEntry& entry, const sched::UnitGraph& units) {
  cost::SimulatedCostModel cost(units, cost::load_device_profile("h100"));
  sched::SearchStats stats;
  const sched::Schedule schedule =
      entry.make(sched::Params::parse(entry.name, entry.params, ""))->run(units, cost, stats);
  sched::validate_schedule(schedule, units, entry.name);
  return schedule;
}

void check_float_model(const ShippedModel& shipped, const AccuracyData& data, int64_t batch) {
  const std::string what = shipped.file.filename().string() + " at batch " + std::to_string(batch);
  INFO(what);
  onnx::ImportOptions import;
  import.batch = shipped.import_batch(batch);
  const onnx::ImportedModel model = onnx::import_model(shipped.file.string(), import);
  const sched::UnitGraph units = sched::UnitGraph::form(model.graph);
  const HostMap inputs = repeated(data.inputs, batch);
  cuda::EngineOptions fp32, tf32;
  fp32.math = ir::MathMode::kFp32;
  tf32.math = ir::MathMode::kTf32;
  for (const sched::SchedulerEntry& entry : sched::scheduler_registry()) {
    const exec::ExecPlan plan = exec::lower(units, schedule_of(entry, units));
    for (bool graph : {true, false}) {
      fp32.cuda_graph = tf32.cuda_graph = graph;
      const std::string how = entry.name + (graph ? " (CUDA graph" : " (plain launches");
      judge_outputs(run_gpu(units, plan, inputs, fp32), data, RulePrecision::kFp32, batch, what + ": " + how + ", fp32)");
      judge_outputs(run_gpu(units, plan, inputs, tf32), data, RulePrecision::kTf32, batch, what + ": " + how + ", tf32)");
    }
  }
}

// The model converted by ir::convert_to_half (float32 inputs and outputs,
// Casts at the boundaries, the sensitive operators kept float32), its
// sequential and IOS schedules, at batch 1.
void check_half_model(const ShippedModel& shipped, const AccuracyData& data, ir::ElementType type) {
  const std::string what = shipped.file.filename().string() + " in " + ir::type_name(type);
  INFO(what);
  onnx::ImportOptions import;
  import.batch = shipped.import_batch(1);
  onnx::ImportedModel model = onnx::import_model(shipped.file.string(), import);
  ir::ConversionOptions precision;
  precision.type = type;
  ir::convert_to_half(model.graph, precision, shipped.file.string());
  const sched::UnitGraph units = sched::UnitGraph::form(model.graph);
  const HostMap inputs = repeated(data.inputs, 1);
  const RulePrecision rule = type == ir::ElementType::kFloat16 ? RulePrecision::kFp16 : RulePrecision::kBf16;
  for (const sched::SchedulerEntry& entry : sched::scheduler_registry()) {
    if (entry.name != "sequential" && entry.name != "ios") continue;
    const exec::ExecPlan plan = exec::lower(units, schedule_of(entry, units));
    cuda::EngineOptions options;  // the precision option concerns float32 tensors only
    judge_outputs(run_gpu(units, plan, inputs, options), data, rule, 1, what + ": " + entry.name);
  }
}

void check_model(const ShippedModel& shipped) {
  onnx::ImportOptions import;
  import.batch = shipped.import_batch(1);
  const onnx::ImportedModel model = onnx::import_model(shipped.file.string(), import);
  const std::filesystem::path folder = accuracy_dir() / shipped.file.stem();
  std::string why;
  const std::optional<AccuracyData> data = read_accuracy_data(folder, model.graph, why);
  INFO(why);
  REQUIRE(data.has_value());
  for (int64_t batch : {1, 8}) {
    if (shipped.runs_at(batch)) check_float_model(shipped, *data, batch);
  }
  for (const ir::ElementType type : {ir::ElementType::kFloat16, ir::ElementType::kBFloat16}) {
    check_half_model(shipped, *data, type);
  }
}

TEST_CASE("every scheduler's schedule on every shipped model meets the accuracy rule", "[gpu][models]") {
  const std::vector<ShippedModel> models = shipped_models(test::models_dir());
  INFO("models directory: " << test::models_dir() << "; accuracy data: " << accuracy_dir());
  REQUIRE_FALSE(models.empty());  // scripts/make-models.sh generates them
  for (const ShippedModel& model : models) {
    DYNAMIC_SECTION(model.name) { check_model(model); }
  }
}

// The rule itself, on numbers whose verdict is known.
TEST_CASE("the accuracy rule: twice the peer's rms, four times its largest error, plus half an ulp", "[host]") {
  const exec::HostTensor truth({1, 4}, {1.0f, -2.0f, 4.0f, 0.5f});
  const exec::HostTensor peer({1, 4}, {1.01f, -2.0f, 4.0f, 0.5f});  // rms 0.005, max 0.01
  const double floor = std::ldexp(1.0, -11) * 4.0;
  // Within: rms 0.0099 <= 0.01 + floor, max 0.0198 <= 0.04 + floor.
  const exec::HostTensor close({1, 4}, {1.0198f, -2.0f, 4.0f, 0.5f});
  const RuleVerdict ok = judge(close, truth, peer, RulePrecision::kFp16);
  CHECK(ok.floor == Approx(floor));
  CHECK(ok.passed());
  // The same error spread over the elements: rms beyond twice the peer's.
  const exec::HostTensor spread({1, 4}, {1.015f, -2.015f, 4.015f, 0.515f});
  CHECK_FALSE(judge(spread, truth, peer, RulePrecision::kFp16).passed());
  // One element far off: max beyond four times the peer's.
  const exec::HostTensor spike({1, 4}, {1.0f, -2.0f, 4.06f, 0.5f});
  CHECK_FALSE(judge(spike, truth, peer, RulePrecision::kFp16).passed());
  // A peer as exact as the truth leaves the floor: half an ulp at max |truth|.
  const RuleVerdict exact = judge(truth, truth, truth, RulePrecision::kFp32);
  CHECK(exact.passed());
  CHECK_FALSE(judge(spike, truth, truth, RulePrecision::kFp32).passed());
  // Every sample of a repeated batch is judged; inf never passes.
  exec::HostTensor twice({2, 4}, {1.0f, -2.0f, 4.0f, 0.5f, 1.0f, -2.0f, 4.06f, 0.5f});
  CHECK_FALSE(judge(twice, truth, peer, RulePrecision::kFp16, 2).passed());
  const exec::HostTensor inf({1, 4}, {1.0f, -2.0f, INFINITY, 0.5f});
  CHECK_FALSE(judge(inf, truth, peer, RulePrecision::kBf16).passed());
  // A peer at the same batch: its worst sample sets the limits. Its second
  // sample is 0.04 off (max 0.04, rms 0.02), which lets the spike through.
  const exec::HostTensor batched_peer({2, 4}, {1.01f, -2.0f, 4.0f, 0.5f, 1.0f, -2.0f, 4.04f, 0.5f});
  const RuleVerdict at_batch = judge(twice, truth, batched_peer, RulePrecision::kFp16, 2);
  CHECK(at_batch.peer_max == Approx(0.04).epsilon(1e-4));
  CHECK(at_batch.peer_rms == Approx(0.02).epsilon(1e-4));
  CHECK(at_batch.passed());
}

TEST_CASE("the accuracy data are read by tensor name, peers per precision", "[host]") {
  const auto folder = std::filesystem::temp_directory_path() / "ios-accuracy-data-test";
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  ir::Graph graph;
  ir::Tensor in, out;
  in.name = "x:0";
  in.shape = {1, 2};
  out.name = "y/out";
  out.shape = {1, 2};
  graph.inputs().push_back(graph.add_tensor(in));
  graph.outputs().push_back(graph.add_tensor(out));
  std::string why;
  CHECK_FALSE(read_accuracy_data(folder, graph, why).has_value());
  CHECK(why.find("input-x_0.npy") != std::string::npos);
  exec::write_npy(folder / "input-x_0.npy", exec::HostTensor({1, 2}, {1.0f, 2.0f}));
  exec::write_npy(folder / "truth-y_out.npy", exec::HostTensor({1, 2}, {3.0f, 4.0f}));
  exec::write_npy(folder / "peer-tf32-y_out.npy", exec::HostTensor({1, 2}, {3.0f, 4.5f}));
  const auto data = read_accuracy_data(folder, graph, why);
  REQUIRE(data.has_value());
  CHECK(data->inputs.at("x:0").data == std::vector<float>{1.0f, 2.0f});
  CHECK(data->truth.at("y/out").data == std::vector<float>{3.0f, 4.0f});
  REQUIRE(data->peers.size() == 1);
  CHECK(data->peers.at(1).size() == 1);
  CHECK(data->peers.at(1).at(RulePrecision::kTf32).at("y/out").data[1] == 4.5f);
  // A peer at batch 8 is read beside it, under its own batch.
  exec::write_npy(folder / "peer-fp32-b8-y_out.npy", exec::HostTensor({8, 2}, std::vector<float>(16, 3.5f)));
  const auto batched = read_accuracy_data(folder, graph, why);
  REQUIRE(batched.has_value());
  CHECK(batched->peers.at(1).count(RulePrecision::kFp32) == 0);
  CHECK(batched->peers.at(8).at(RulePrecision::kFp32).at("y/out").shape == ir::Shape{8, 2});
  std::filesystem::remove_all(folder);
}

#ifdef IOS_HAVE_CUDA
// Without a GPU: the converted models lower for the CUDA backend (every
// operator accepts its 16-bit tensors), and the memory the plan asks for
// is that of the storages' types: a converted model's activations take
// less than the float32 model's.
TEST_CASE("shipped models converted to float16 and bfloat16 lower with typed buffers", "[host][models]") {
  const std::vector<ShippedModel> models = shipped_models(test::models_dir());
  int lowered = 0;
  for (const ShippedModel& shipped : models) {
    if (shipped.name != "squeezenet1_1" && shipped.name != "mobilenet_v2" && shipped.name != "vit_style") continue;
    INFO(shipped.name);
    onnx::ImportOptions import;
    import.batch = shipped.import_batch(1);
    const onnx::ImportedModel reference = onnx::import_model(shipped.file.string(), import);
    const sched::UnitGraph float_units = sched::UnitGraph::form(reference.graph);
    const cuda::Program float_program =
        cuda::lower_program(float_units, exec::lower(float_units, sequential_schedule(float_units)));
    int64_t float_bytes = 0;
    for (const cuda::Buffer& b : float_program.buffers) float_bytes += b.bytes();
    for (const ir::ElementType type : {ir::ElementType::kFloat16, ir::ElementType::kBFloat16}) {
      INFO(ir::type_name(type));
      onnx::ImportedModel model = onnx::import_model(shipped.file.string(), import);
      ir::ConversionOptions precision;
      precision.type = type;
      ir::convert_to_half(model.graph, precision, shipped.file.string());
      const sched::UnitGraph units = sched::UnitGraph::form(model.graph);
      const exec::ExecPlan plan = exec::lower(units, sequential_schedule(units));
      cuda::Program p;
      REQUIRE_NOTHROW(p = cuda::lower_program(units, plan));
      int64_t bytes = 0, half_buffers = 0;
      for (const cuda::Buffer& b : p.buffers) {
        bytes += b.bytes();
        half_buffers += b.type == type ? 1 : 0;
      }
      CHECK(half_buffers > 0);
      CHECK(bytes < float_bytes);
      for (const auto& [name, v] : p.inputs) CHECK(p.values.at(static_cast<size_t>(v)).type == ir::ElementType::kFloat32);
      for (const cuda::Constant& c : p.constants) {
        if (const auto t = model.graph.find_tensor(c.name)) CHECK(c.type == model.graph.tensor(*t).type);
      }
    }
    ++lowered;
  }
  // Without one of them the case would check nothing and pass.
  INFO("none of squeezenet1_1, mobilenet_v2, vit_style in "
       << test::models_dir() << " (scripts/make-models.sh writes them)");
  REQUIRE(lowered > 0);
}
#endif

}  // namespace
}  // namespace ios::gputest
