#include "gpu_util.h"

#include "cpu/reference.h"

namespace ios::gputest {

HostMap random_inputs(const ir::Graph& graph, uint64_t seed) {
  HostMap inputs;
  for (ir::TensorId t : graph.inputs()) {
    inputs[graph.tensor(t).name] = exec::random_tensor(graph.tensor(t).shape, seed++);
  }
  return inputs;
}

cuda::TensorMap to_tensor_map(const HostMap& inputs) {
  cuda::TensorMap map;
  for (const auto& [name, tensor] : inputs) map[name] = tensor.data;
  return map;
}

sched::Schedule sequential_schedule(const sched::UnitGraph& graph) {
  sched::StagedSchedule staged;
  for (sched::UnitId u = 0; u < graph.size(); ++u) {
    sched::Stage stage;
    stage.groups = {{u}};
    staged.stages.push_back(stage);
  }
  sched::Schedule schedule;
  schedule.body = staged;
  return schedule;
}

HostMap run_gpu(const sched::UnitGraph& graph, const exec::ExecPlan& plan, const HostMap& inputs,
                const cuda::EngineOptions& options) {
  cuda::Engine engine(graph, plan, options);
  const cuda::TensorMap outputs = engine.run(to_tensor_map(inputs));
  HostMap result;
  const ir::Graph& ir = *graph.ir();
  for (const auto& [name, data] : outputs) {
    const auto id = ir.find_tensor(name);
    REQUIRE(id.has_value());
    result[name] = exec::HostTensor(ir.tensor(*id).shape, data);
  }
  return result;
}

void check_outputs(const HostMap& actual, const HostMap& expected, const exec::Tolerance& tolerance,
                   const std::string& what) {
  INFO(what);
  REQUIRE(actual.size() == expected.size());
  for (const auto& [name, tensor] : expected) {
    auto it = actual.find(name);
    REQUIRE(it != actual.end());
    const exec::CompareResult result = exec::compare(it->second, tensor, tolerance, name);
    INFO(exec::format_report(result));
    CHECK(result.passed());
  }
}

void check_against_reference(const ir::Graph& graph, const std::string& what) {
  const sched::UnitGraph units = sched::UnitGraph::form(graph);
  const exec::ExecPlan plan = exec::lower(units, sequential_schedule(units));
  const HostMap inputs = random_inputs(graph, 7);
  const HostMap expected = cpu::run_graph_reference(graph, inputs);
  for (bool cuda_graph : {true, false}) {
    cuda::EngineOptions options;
    options.cuda_graph = cuda_graph;
    options.precision = cuda::Precision::kFp32;
    check_outputs(run_gpu(units, plan, inputs, options), expected, {1e-4, 1e-3},
                  what + (cuda_graph ? " (fp32, CUDA graph)" : " (fp32, plain launches)"));
  }
  cuda::EngineOptions tf32;
  tf32.precision = cuda::Precision::kTf32;
  check_outputs(run_gpu(units, plan, inputs, tf32), expected, {2e-2, 2e-2}, what + " (tf32)");
}

}  // namespace ios::gputest
