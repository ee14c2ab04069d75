// The shipped models (what scripts/make-models.sh writes into models_dir(),
// named <name>[-b<N>|-bdyn][-<H>x<W>].onnx): for every scheduler of the
// registry, its schedule's GPU outputs equal the CPU executor's outputs (the
// numerical reference, independent of any GPU engine bug), with and without
// CUDA graphs, in FP32 and TF32, at batch 1 and 8 (a model with a static
// batch runs at that batch only). IOS_GPU_TEST_MODELS=name,name restricts the
// models; each model is its own test case so a run can take them one by one.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "cost/device_profile.h"
#include "cost/simulated.h"
#include "cpu/executor.h"
#ifdef IOS_HAVE_CUDA
#include "cuda/program.h"
#endif
#include "gpu_util.h"
#include "ir/precision.h"
#include "onnx/importer.h"
#include "sched/scheduler.h"
#include "sched/validate.h"
#include "test_paths.h"

namespace ios::gputest {
namespace {

// FP32 convolutions still differ from the CPU's summation order; TF32 rounds
// the convolution inputs to 10 mantissa bits.
constexpr exec::Tolerance kFp32Tolerance{1e-3, 1e-3};
constexpr exec::Tolerance kTf32Tolerance{5e-2, 5e-2};

void check_model(const ShippedModel& shipped, int64_t batch) {
  const std::string what = shipped.file.filename().string() + " at batch " + std::to_string(batch);
  INFO(what);
  onnx::ImportOptions import;
  import.batch = shipped.import_batch(batch);
  const onnx::ImportedModel model = onnx::import_model(shipped.file.string(), import);
  const sched::UnitGraph units = sched::UnitGraph::form(model.graph);
  const HostMap inputs = random_inputs(model.graph, 21);
  const exec::ExecPlan sequential_plan = exec::lower(units, sequential_schedule(units));
  cpu::CpuExecutor cpu(units, sequential_plan, cpu::ExecutorOptions{0});
  const HostMap expected = cpu.run(inputs);

  cuda::EngineOptions fp32, tf32;
  fp32.precision = cuda::Precision::kFp32;
  tf32.precision = cuda::Precision::kTf32;
  cost::SimulatedCostModel cost(units, cost::load_device_profile("h100"));
  for (const sched::SchedulerEntry& entry : sched::scheduler_registry()) {
    sched::SearchStats stats;
    const sched::Schedule schedule =
        entry.make(sched::Params::parse(entry.name, entry.params, ""))->run(units, cost, stats);
    sched::validate_schedule(schedule, units, entry.name);
    const exec::ExecPlan plan = exec::lower(units, schedule);
    for (bool graph : {true, false}) {
      fp32.cuda_graph = tf32.cuda_graph = graph;
      const std::string how = graph ? "CUDA graph" : "plain launches";
      check_outputs(run_gpu(units, plan, inputs, fp32), expected, kFp32Tolerance,
                    what + ": " + entry.name + " (fp32, " + how + ") against the CPU executor");
      check_outputs(run_gpu(units, plan, inputs, tf32), expected, kTf32Tolerance,
                    what + ": " + entry.name + " (tf32, " + how + ") against the CPU executor");
    }
  }
}

TEST_CASE("every scheduler's schedule on every shipped model matches the CPU executor", "[gpu][models]") {
  const std::vector<ShippedModel> models = shipped_models(test::models_dir());
  INFO("models directory: " << test::models_dir());
  REQUIRE_FALSE(models.empty());  // scripts/make-models.sh generates them
  for (const ShippedModel& model : models) {
    DYNAMIC_SECTION(model.name) {
      for (int64_t batch : {1, 8}) {
        if (model.runs_at(batch)) check_model(model, batch);
      }
    }
  }
}

// Half precision at the model level: a shipped model converted by
// ir::convert_to_half (float32 inputs and outputs, Casts at the boundaries,
// the sensitive operators kept float32) to float16 and to bfloat16, its
// sequential and IOS schedules on the GPU against the CPU executor on the
// same converted graph and plan (the CPU reference rounds where the GPU
// stores). Rounding flips propagate through the layers, so the tolerance is
// 16 ulps of the type (2^-10 for float16, 2^-7 for bfloat16) relative to the
// output's largest |value|, or to the element itself.
void check_half_model(const ShippedModel& shipped, int64_t batch, ir::ElementType type) {
  const std::string what =
      shipped.file.filename().string() + " in " + ir::type_name(type) + " at batch " + std::to_string(batch);
  INFO(what);
  onnx::ImportOptions import;
  import.batch = shipped.import_batch(batch);
  onnx::ImportedModel model = onnx::import_model(shipped.file.string(), import);
  ir::PrecisionOptions precision;
  precision.type = type;
  ir::convert_to_half(model.graph, precision, shipped.file.string());
  const sched::UnitGraph units = sched::UnitGraph::form(model.graph);
  const HostMap inputs = random_inputs(model.graph, 21);
  const double ulp = type == ir::ElementType::kFloat16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
  cost::SimulatedCostModel cost(units, cost::load_device_profile("h100"));
  for (const sched::SchedulerEntry& entry : sched::scheduler_registry()) {
    if (entry.name != "sequential" && entry.name != "ios") continue;
    sched::SearchStats stats;
    const sched::Schedule schedule =
        entry.make(sched::Params::parse(entry.name, entry.params, ""))->run(units, cost, stats);
    const exec::ExecPlan plan = exec::lower(units, schedule);
    cpu::CpuExecutor cpu(units, plan, cpu::ExecutorOptions{0});
    const HostMap expected = cpu.run(inputs);
    cuda::EngineOptions options;  // the precision option concerns float32 tensors only
    const HostMap actual = run_gpu(units, plan, inputs, options);
    REQUIRE(actual.size() == expected.size());
    for (const auto& [name, tensor] : expected) {
      INFO(entry.name << ": output " << name);
      double largest = 0.0;
      for (float v : tensor.data) largest = std::max(largest, static_cast<double>(std::fabs(v)));
      const exec::Tolerance tolerance{16 * ulp * std::max(largest, 1e-3), 16 * ulp};
      const exec::CompareResult result = exec::compare(actual.at(name), tensor, tolerance, name);
      INFO(exec::format_report(result));
      CHECK(result.passed());
    }
  }
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
      ir::PrecisionOptions precision;
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
  if (lowered == 0) WARN("no squeezenet1_1, mobilenet_v2 or vit_style in " << test::models_dir());
}
#endif

TEST_CASE("shipped models in float16 and bfloat16 match the CPU executor on the converted graph", "[gpu][models]") {
  const std::vector<ShippedModel> models = shipped_models(test::models_dir());
  REQUIRE_FALSE(models.empty());  // scripts/make-models.sh generates them
  int ran = 0;
  for (const ShippedModel& model : models) {
    if (model.name != "squeezenet1_1" && model.name != "mobilenet_v2") continue;
    DYNAMIC_SECTION(model.name) {
      for (const ir::ElementType type : {ir::ElementType::kFloat16, ir::ElementType::kBFloat16}) {
        for (int64_t batch : {1, 8}) {
          if (model.runs_at(batch)) check_half_model(model, batch, type);
        }
      }
    }
    ++ran;
  }
  if (std::getenv("IOS_GPU_TEST_MODELS") != nullptr && ran == 0) {
    WARN("IOS_GPU_TEST_MODELS holds neither squeezenet1_1 nor mobilenet_v2");
  } else {
    CHECK(ran > 0);
  }
}

}  // namespace
}  // namespace ios::gputest
