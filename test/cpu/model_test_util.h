// Helpers for the tests that run the exported torchvision CNNs: locating the
// models and ONNX Runtime (both installed by scripts/setup.sh), running the
// oracle script, scheduling with a registered scheduler, and running a
// schedule on the CPU executor.
#pragma once

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <unistd.h>

#include "cost/device_profile.h"
#include "cost/simulated.h"
#include "cpu/executor.h"
#include "exec/npy.h"
#include "exec/plan.h"
#include "onnx/importer.h"
#include "sched/cost_model.h"
#include "sched/scheduler.h"
#include "sched/unit_graph.h"
#include "sched/validate.h"
#include "test_paths.h"

namespace ios::test {

// The torchvision CNNs that onnx_models/export_models.py produces, exported
// by scripts/make-models.sh with a symbolic batch dimension.
inline const std::vector<std::string>& torchvision_models() {
  static const std::vector<std::string> names{"inception_v3", "squeezenet1_1", "resnet50",
                                              "mobilenet_v2", "densenet121",   "googlenet"};
  return names;
}

// `size` is the export script's image-size suffix ("-64x64") for models
// exported at a reduced input size.
inline std::filesystem::path dynamic_batch_model(const std::string& name, const std::string& size = "") {
  const auto path = models_dir() / (name + "-bdyn" + size + ".onnx");
  if (!std::filesystem::exists(path)) {
    FAIL("model " << path.string() << " is missing: run scripts/setup.sh (it exports the models with "
                  << "onnx_models/export_models.py --dynamic-batch)");
  }
  return path;
}

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A scratch folder removed at the end of the test.
class TempDir {
 public:
  explicit TempDir(const std::string& tag)
      : path_(std::filesystem::temp_directory_path() / fmt::format("ios_{}_{}", tag, ::getpid())) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Runs tools/ort_run.js (ONNX Runtime, CPU) on `input`, writing to `target`
// (a .npy file for the first output, or a folder for every output); `level`
// is ONNX Runtime's graph optimization level. Fails the test with the
// script's message when node, onnxruntime-node or the script is unusable.
inline void run_ort_script(const std::filesystem::path& model, const exec::HostTensor& input, const TempDir& dir,
                           const std::string& level, const std::string& target) {
  const auto script = source_dir() / "tools" / "ort_run.js";
  if (std::system("node --version >/dev/null 2>&1") != 0) {
    FAIL("node is not installed: run scripts/setup.sh (ONNX Runtime is the tests' numerical oracle)");
  }
  if (!std::filesystem::exists(source_dir() / "node_modules" / "onnxruntime-node")) {
    FAIL("onnxruntime-node is not installed in " << source_dir().string()
                                                 << ": run scripts/setup.sh (npm install --ignore-scripts)");
  }
  const auto in = dir.path() / "input.npy";
  const auto log = dir.path() / "ort.log";
  exec::write_npy(in, input);
  const std::string cmd = fmt::format("ORT_GRAPH_OPTIMIZATION={} node '{}' '{}' '{}' '{}' 2>'{}'", level,
                                      script.string(), model.string(), in.string(), target, log.string());
  const int rc = std::system(cmd.c_str());
  if (rc != 0) {
    std::ifstream f(log);
    std::stringstream text;
    text << f.rdbuf();
    FAIL("ONNX Runtime failed (" << cmd << "): " << text.str() << " -- run scripts/setup.sh if it is not installed");
  }
}

// The model's first output from ONNX Runtime.
inline exec::HostTensor run_onnx_runtime(const std::filesystem::path& model, const exec::HostTensor& input,
                                         const TempDir& dir, const std::string& level = "disabled") {
  const auto out = dir.path() / ("ort_" + level + ".npy");
  run_ort_script(model, input, dir, level, out.string());
  return exec::read_npy(out);
}

// Every output of the model from ONNX Runtime, by name.
inline std::map<std::string, exec::HostTensor> run_onnx_runtime_outputs(const std::filesystem::path& model,
                                                                        const exec::HostTensor& input,
                                                                        const TempDir& dir) {
  const auto folder = dir.path() / "ort_outputs";
  std::filesystem::create_directories(folder);
  run_ort_script(model, input, dir, "disabled", folder.string() + "/");
  std::map<std::string, exec::HostTensor> outputs;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    outputs[entry.path().stem().string()] = exec::read_npy(entry.path());
  }
  return outputs;
}

// A schedule from a registered scheduler, validated against the graph.
inline sched::Schedule make_schedule(const std::string& scheduler, const std::string& params,
                                     const sched::UnitGraph& graph, sched::CostModel& cost) {
  const auto& entry = sched::find_scheduler(scheduler);
  auto instance = entry.make(sched::Params::parse(scheduler, entry.params, params));
  sched::SearchStats stats;
  sched::Schedule schedule = instance->run(graph, cost, stats);
  sched::validate_schedule(schedule, graph, scheduler);
  return schedule;
}

inline cost::SimulatedCostModel simulated_cost(const sched::UnitGraph& graph) {
  return cost::SimulatedCostModel(graph, cost::load_device_profile("h100"));
}

// Runs `schedule` on the CPU executor with the model's single input; every
// output by name.
inline std::map<std::string, exec::HostTensor> run_cpu_outputs(const sched::UnitGraph& graph,
                                                               const sched::Schedule& schedule,
                                                               const std::string& input_name,
                                                               const exec::HostTensor& input,
                                                               cpu::MemoryPlanStats* stats = nullptr) {
  cpu::CpuExecutor executor(graph, exec::lower(graph, schedule), cpu::ExecutorOptions{2});
  if (stats) *stats = executor.memory_stats();
  return executor.run({{input_name, input}});
}

// Runs `schedule` on the CPU executor with the model's single input.
inline exec::HostTensor run_cpu(const sched::UnitGraph& graph, const sched::Schedule& schedule,
                                const std::string& input_name, const exec::HostTensor& input,
                                cpu::MemoryPlanStats* stats = nullptr) {
  cpu::CpuExecutor executor(graph, exec::lower(graph, schedule), cpu::ExecutorOptions{2});
  if (stats) *stats = executor.memory_stats();
  auto outputs = executor.run({{input_name, input}});
  REQUIRE(outputs.size() == 1);
  return std::move(outputs.begin()->second);
}

}  // namespace ios::test
