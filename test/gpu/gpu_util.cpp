#include "gpu_util.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <regex>
#include <set>
#include <sstream>

#include "cpu/executor.h"
#include "cpu/reference.h"
#include "ir/half_conversion.h"

namespace ios::gputest {

HostMap random_inputs(const ir::Graph& graph, uint64_t seed) {
  HostMap inputs;
  for (ir::TensorId t : graph.inputs()) {
    inputs[graph.tensor(t).name] = exec::random_tensor(graph.tensor(t).shape, seed++);
  }
  return inputs;
}

std::vector<ShippedModel> shipped_models(const std::filesystem::path& dir) {
  std::map<std::string, ShippedModel> by_name;
  // NAME[-bN|-bdyn][-SIZE].onnx, SIZE an image's HxW, a clip's TxHxW or a
  // sequence's L.
  const std::regex file_name("([a-z0-9_]+)(-b([0-9]+)|-bdyn)?(-[0-9]+(x[0-9]+)*)?\\.onnx");
  if (!std::filesystem::is_directory(dir)) return {};
  std::set<std::string> keep;
  if (const char* only = std::getenv("IOS_GPU_TEST_MODELS")) {
    std::stringstream list(only);
    for (std::string name; std::getline(list, name, ',');) keep.insert(name);
  }
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string file = entry.path().filename().string();
    std::smatch m;
    if (!entry.is_regular_file() || !std::regex_match(file, m, file_name)) continue;
    if (!keep.empty() && !keep.count(m[1].str())) continue;
    ShippedModel model{m[1].str(), entry.path(), std::nullopt};
    if (m[2].matched && m[3].matched) {
      model.batch = std::stoll(m[3].str());
    } else if (!m[2].matched) {
      model.batch = 1;
    }
    auto it = by_name.find(model.name);
    // A symbolic batch runs at every batch: prefer it; otherwise the first file by name.
    if (it == by_name.end() || (!model.batch && it->second.batch) ||
        (model.batch.has_value() == it->second.batch.has_value() && file < it->second.file.filename().string())) {
      by_name[model.name] = model;
    }
  }
  std::vector<ShippedModel> models;
  for (auto& [name, model] : by_name) models.push_back(std::move(model));
  return models;
}

cuda::TensorMap to_tensor_map(const HostMap& inputs) {
  cuda::TensorMap map;
  for (const auto& [name, tensor] : inputs) map[name] = tensor.data;
  return map;
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
    options.math = ir::MathMode::kFp32;
    check_outputs(run_gpu(units, plan, inputs, options), expected, {1e-4, 1e-3},
                  what + (cuda_graph ? " (fp32, CUDA graph)" : " (fp32, plain launches)"));
  }
  cuda::EngineOptions tf32;
  tf32.math = ir::MathMode::kTf32;
  check_outputs(run_gpu(units, plan, inputs, tf32), expected, {2e-2, 2e-2}, what + " (tf32)");
  // The convolutions through cuDNN's graph-API plans (--conv-kernels graph),
  // strict FP32, with a plan cache of this process's own: run twice, the
  // second engine's plans come from the cache.
  const std::filesystem::path cache =
      std::filesystem::temp_directory_path() / ("ios-gpu-test-plans-" + std::to_string(::getpid()) + ".sqlite");
  cuda::EngineOptions graph_api;
  graph_api.math = ir::MathMode::kFp32;
  graph_api.conv_kernels = exec::ConvKernels::kGraph;
  graph_api.plan_cache = cache.string();
  for (const char* run : {"timed", "from the plan cache"}) {
    check_outputs(run_gpu(units, plan, inputs, graph_api), expected, {1e-4, 1e-3},
                  what + " (fp32, graph-API convolutions, " + run + ")");
  }
  std::filesystem::remove(cache);
}

double half_bound(ir::ElementType type, double expected, double ulps) {
  const double ulp = type == ir::ElementType::kFloat16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
  return ulps * ulp * (1.0 + std::fabs(expected));
}

HalfMismatches half_mismatches(const exec::HostTensor& actual, const exec::HostTensor& expected,
                               ir::ElementType type, double ulps, size_t keep) {
  HalfMismatches out;
  if (actual.shape != expected.shape || actual.data.size() != expected.data.size()) {
    out.count = static_cast<int64_t>(std::max(actual.data.size(), expected.data.size()));
    out.first.push_back("shape " + ir::to_string(actual.shape) + ", expected " +
                        ir::to_string(expected.shape));
    return out;
  }
  for (size_t i = 0; i < expected.data.size(); ++i) {
    const double a = actual.data[i], e = expected.data[i];
    bool ok;
    if (std::isnan(e) || std::isnan(a)) {
      ok = std::isnan(e) && std::isnan(a);
    } else if (std::isinf(e) || std::isinf(a)) {
      ok = a == e;
    } else {
      ok = std::fabs(a - e) <= half_bound(type, e, ulps);
    }
    if (ok) continue;
    ++out.count;
    if (out.first.size() < keep) {
      std::ostringstream line;
      line << "element " << i << ": " << a << ", expected " << e << " (bound "
           << half_bound(type, e, ulps) << ")";
      out.first.push_back(line.str());
    }
  }
  return out;
}

void check_half_against_executor(const ir::Graph& graph, const std::string& what) {
  for (const ir::ElementType type : {ir::ElementType::kFloat16, ir::ElementType::kBFloat16}) {
    ir::Graph g = graph;
    ir::ConversionOptions options;
    options.type = type;
    options.half_io = true;
    ir::convert_to_half(g, options, what);
    const sched::UnitGraph units = sched::UnitGraph::form(g);
    const exec::ExecPlan plan = exec::lower(units, sequential_schedule(units));
    HostMap inputs = random_inputs(graph, 7);
    for (auto& [name, tensor] : inputs) {
      for (float& v : tensor.data) v = ir::round_to(v, type);
    }
    cpu::CpuExecutor cpu(units, plan, cpu::ExecutorOptions{1});
    const HostMap expected = cpu.run(inputs);
    INFO(what << " in " << ir::type_name(type));
    check_half_outputs(run_gpu(units, plan, inputs, cuda::EngineOptions{}), expected, type);
  }
}

void check_half_outputs(const HostMap& actual, const HostMap& expected, ir::ElementType type) {
  constexpr double kUlps = 4.0;
  REQUIRE(actual.size() == expected.size());
  for (const auto& [name, tensor] : expected) {
    INFO(name);
    const auto it = actual.find(name);
    REQUIRE(it != actual.end());
    const HalfMismatches bad = half_mismatches(it->second, tensor, type, kUlps);
    std::string lines;
    for (const std::string& line : bad.first) lines += line + "\n";
    INFO(bad.count << " of " << tensor.data.size() << " elements beyond " << kUlps
                   << " ulps x (1 + |expected|):\n"
                   << lines);
    CHECK(bad.count == 0);
  }
}

}  // namespace ios::gputest
