// The shipped models (what scripts/make-models.sh writes into models_dir(),
// named <name>[-b<N>|-bdyn][-<H>x<W>].onnx): for every scheduler of the
// registry, its schedule's GPU outputs equal the CPU executor's outputs (the
// numerical reference, independent of any GPU engine bug), with and without
// CUDA graphs, in FP32 and TF32, at batch 1 and 8 (a model with a static
// batch runs at that batch only). IOS_GPU_TEST_MODELS=name,name restricts the
// models; each model is its own test case so a run can take them one by one.
#include <catch2/catch.hpp>

#include "cost/device_profile.h"
#include "cost/simulated.h"
#include "cpu/executor.h"
#include "gpu_util.h"
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

}  // namespace
}  // namespace ios::gputest
