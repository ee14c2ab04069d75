// The shipped models (onnx_models/export_models.py output in models_dir()):
// for every scheduler of the registry, its schedule's outputs equal the
// sequential schedule's (ios-run --check semantics), with and without CUDA
// graphs, at batch 1 and 8; at batch 1 the sequential schedule also matches
// the CPU reference. IOS_GPU_TEST_MODELS=name,name restricts the models.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

#include "cost/device_profile.h"
#include "cost/simulated.h"
#include "cpu/reference.h"
#include "gpu_util.h"
#include "onnx/importer.h"
#include "sched/scheduler.h"
#include "sched/validate.h"
#include "test_paths.h"

namespace ios::gputest {
namespace {

// Model names: files "<name>.onnx" (no batch or size suffix) in models_dir().
std::vector<std::string> shipped_models() {
  std::vector<std::string> names;
  const std::regex plain("[a-z0-9_]+\\.onnx");
  if (!std::filesystem::is_directory(test::models_dir())) return names;
  for (const auto& entry : std::filesystem::directory_iterator(test::models_dir())) {
    const std::string file = entry.path().filename().string();
    if (entry.is_regular_file() && std::regex_match(file, plain)) names.push_back(file.substr(0, file.size() - 5));
  }
  std::sort(names.begin(), names.end());
  if (const char* only = std::getenv("IOS_GPU_TEST_MODELS")) {
    std::set<std::string> keep;
    std::stringstream list(only);
    for (std::string name; std::getline(list, name, ',');) keep.insert(name);
    std::erase_if(names, [&](const std::string& n) { return !keep.count(n); });
  }
  return names;
}

std::string model_file(const std::string& name, int64_t batch) {
  const auto dynamic = test::models_dir() / (name + "-bdyn.onnx");
  if (batch != 1 && std::filesystem::exists(dynamic)) return dynamic.string();
  return (test::models_dir() / (name + ".onnx")).string();
}

TEST_CASE("every scheduler's schedule gives the sequential schedule's outputs on every shipped model",
          "[gpu][models]") {
  const std::vector<std::string> models = shipped_models();
  INFO("models directory: " << test::models_dir());
  REQUIRE_FALSE(models.empty());  // generate them with onnx_models/export_models.py
  for (const std::string& name : models) {
    for (int64_t batch : {1, 8}) {
      const std::string what = name + " at batch " + std::to_string(batch);
      INFO(what);
      onnx::ImportOptions import;
      import.batch = batch;
      const onnx::ImportedModel model = onnx::import_model(model_file(name, batch), import);
      const sched::UnitGraph units = sched::UnitGraph::form(model.graph);
      const HostMap inputs = random_inputs(model.graph, 21);
      cuda::EngineOptions fp32;
      fp32.precision = cuda::Precision::kFp32;
      const exec::ExecPlan sequential_plan = exec::lower(units, sequential_schedule(units));
      const HostMap sequential = run_gpu(units, sequential_plan, inputs, fp32);
      if (batch == 1) {
        check_outputs(sequential, cpu::run_graph_reference(model.graph, inputs, 8), {1e-3, 1e-3},
                      what + ": sequential (fp32) against the CPU reference");
      }
      cuda::EngineOptions tf32;
      const HostMap sequential_tf32 = run_gpu(units, sequential_plan, inputs, tf32);
      check_outputs(sequential_tf32, sequential, {5e-2, 5e-2}, what + ": sequential tf32 against fp32");

      cost::SimulatedCostModel cost(units, cost::load_device_profile("h100"));
      for (const sched::SchedulerEntry& entry : sched::scheduler_registry()) {
        sched::SearchStats stats;
        const sched::Schedule schedule =
            entry.make(sched::Params::parse(entry.name, entry.params, ""))->run(units, cost, stats);
        sched::validate_schedule(schedule, units, entry.name);
        const exec::ExecPlan plan = exec::lower(units, schedule);
        for (bool graph : {true, false}) {
          fp32.cuda_graph = graph;
          check_outputs(run_gpu(units, plan, inputs, fp32), sequential, {1e-3, 1e-3},
                        what + ": " + entry.name + (graph ? " (fp32, CUDA graph)" : " (fp32, plain launches)"));
        }
        check_outputs(run_gpu(units, plan, inputs, tf32), sequential_tf32, {5e-2, 5e-2},
                      what + ": " + entry.name + " (tf32, CUDA graph)");
      }
    }
  }
}

}  // namespace
}  // namespace ios::gputest
