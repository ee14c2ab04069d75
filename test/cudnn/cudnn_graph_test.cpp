// Convolutions through cuDNN's graph API, asked without a device
// (cuda/cudnn_graph.h): operation graphs with the epilogue the lowering
// fuses, engine configurations from heuristics for a described GPU, the math
// modes' filter, execution plans, and every convolution of the benchmark
// networks at TF32 and fp16.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cuda/cudnn_graph.h"
#include "cuda/operations.h"
#include "cuda/program.h"
#include "cudnn_probe.h"
#include "exec/plan.h"
#include "model/prepared_model.h"
#include "test_paths.h"

namespace ios::cudnntest {
namespace {

using cuda::ConvGraphSpec;
using cuda::ConvShape;
using cuda::DeviceTarget;
using cuda::HeuristicMode;
using cuda::TensorLayout;
using ir::ElementType;
using ir::MathMode;

const cuda::BackendDescriptor& h200() {
  static const cuda::BackendDescriptor device =
      cuda::make_device_properties(*DeviceTarget::preset("h200"));
  return device;
}

TEST_CASE("device targets: the presets describe the GPUs, and cuDNN accepts their JSON",
          "[cudnn]") {
  CHECK_FALSE(DeviceTarget::preset("v100"));
  for (const char* name : {"h100", "h200"}) {
    INFO(name);
    const auto t = DeviceTarget::preset(name);
    REQUIRE(t);
    const nlohmann::json j = nlohmann::json::parse(t->json());
    CHECK(j.at("deviceVer") == 900);
    CHECK(j.at("multiProcessorCount") == 132);
    CHECK(j.at("deviceName") == t->name);
    CHECK_NOTHROW(cuda::make_device_properties(*t));
  }
  // A description cuDNN cannot read is refused by name, not taken as no device.
  cuda::BackendDescriptor d(CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR);
  const std::string text = "{\"deviceVer\": 900}";
  d.set(CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
        static_cast<int64_t>(text.size()), text.data(), "device properties");
  CHECK_THROWS_WITH(d.finalize("device properties"), Catch::Contains("device properties"));
}

TEST_CASE(
    "an fp16 NHWC 3x3 convolution: heuristics A and B and the fallback list answer for a described "
    "H200",
    "[cudnn]") {
  const ConvGraphSpec spec =
      cuda::conv_graph_spec(conv3x3(ElementType::kFloat16), MathMode::kFp32, TensorLayout::kNhwc);
  const cuda::ConvOperationGraph graph = cuda::build_conv_graph(spec, nullptr, "c");
  CHECK(graph.operations == 1);
  for (HeuristicMode mode : {HeuristicMode::kA, HeuristicMode::kB, HeuristicMode::kFallback}) {
    INFO("mode " << cuda::heuristic_mode_name(mode));
    const auto configs = cuda::engine_configs(graph, spec, mode, &h200());
    REQUIRE_FALSE(configs.empty());
    for (const auto& c : configs) {
      CHECK(c.engine >= 0);
      CHECK(c.source == mode);
      CHECK(c.name().rfind("eng" + std::to_string(c.engine), 0) == 0);
    }
  }
  // The candidates: every configuration once, mode A's first.
  const auto all = cuda::candidate_configs(graph, spec, &h200());
  const auto a = cuda::engine_configs(graph, spec, HeuristicMode::kA, &h200());
  REQUIRE(all.size() >= a.size());
  CHECK(all.front().name() == a.front().name());
  std::set<std::string> names;
  for (const auto& c : all) CHECK(names.insert(c.name()).second);
}

TEST_CASE("the fused epilogue is part of the operation graph: bias, residual add, ReLU",
          "[cudnn]") {
  for (ElementType type : {ElementType::kFloat32, ElementType::kFloat16, ElementType::kBFloat16}) {
    INFO(ir::type_name(type));
    ConvShape plain = conv3x3(type);
    ConvShape fused = conv3x3(type, true);
    ConvShape residual = conv3x3(type, true);
    residual.has_z = true;
    residual.z_batch_stride = residual.y_item();
    const TensorLayout layout =
        type == ElementType::kFloat32 ? TensorLayout::kNchw : TensorLayout::kNhwc;
    const ConvGraphSpec p = cuda::conv_graph_spec(plain, MathMode::kTf32, layout);
    const ConvGraphSpec f = cuda::conv_graph_spec(fused, MathMode::kTf32, layout);
    const ConvGraphSpec r = cuda::conv_graph_spec(residual, MathMode::kTf32, layout);
    CHECK_FALSE(p.epilogue.any());
    CHECK((f.epilogue.bias && f.epilogue.relu && !f.epilogue.residual));
    CHECK((r.epilogue.bias && r.epilogue.relu && r.epilogue.residual));
    CHECK(cuda::build_conv_graph(p, nullptr, "p").operations == 1);
    CHECK(cuda::build_conv_graph(f, nullptr, "f").operations == 3);  // conv, + bias, ReLU
    CHECK(cuda::build_conv_graph(r, nullptr, "r").operations == 4);  // conv, + bias, + z, ReLU
    // The keys tell the three apart, and the layouts.
    const TensorLayout other =
        layout == TensorLayout::kNchw ? TensorLayout::kNhwc : TensorLayout::kNchw;
    const std::set<std::string> keys{p.key(), f.key(), r.key(),
                                     cuda::conv_graph_spec(plain, MathMode::kTf32, other).key()};
    CHECK(keys.size() == 4);
  }
}

TEST_CASE(
    "fused convolutions: bias + ReLU on pre-compiled engines, a residual add on runtime fusion in "
    "NHWC only "
    "(runtime fusion)",
    "[cudnn][fusion]") {
  for (ElementType type : {ElementType::kFloat32, ElementType::kFloat16, ElementType::kBFloat16}) {
    INFO(ir::type_name(type));
    for (bool residual : {false, true}) {
      INFO("residual " << residual);
      ConvShape s = conv3x3(type, true);
      s.has_z = residual;
      s.z_batch_stride = residual ? s.y_item() : 0;
      const ConvGraphSpec nhwc = cuda::conv_graph_spec(s, MathMode::kTf32, TensorLayout::kNhwc);
      const ConvGraphSpec nchw = cuda::conv_graph_spec(s, MathMode::kTf32, TensorLayout::kNchw);
      const auto in_nhwc = cuda::engine_configs(cuda::build_conv_graph(nhwc, nullptr, "f"), nhwc,
                                                HeuristicMode::kA, &h200());
      const auto in_nchw = cuda::engine_configs(cuda::build_conv_graph(nchw, nullptr, "f"), nchw,
                                                HeuristicMode::kA, &h200());
      REQUIRE_FALSE(in_nhwc.empty());
      auto compiled = [](const std::vector<cuda::EngineConfig>& c) {
        return std::any_of(c.begin(), c.end(), [](const auto& e) { return e.runtime_compiled(); });
      };
      if (!residual) {
        // conv + bias + ReLU: engines of cuDNN's own, in either layout.
        CHECK_FALSE(in_nchw.empty());
        CHECK_FALSE(compiled(in_nchw));
        continue;
      }
      // + z: only the runtime fusion engines (a kernel compiled when the plan
      // is built, NVRTC), and only channels-last. In ios's NCHW storage the
      // runtime runs the bare convolution's plan and its own epilogue kernel.
      CHECK(compiled(in_nhwc));
      CHECK(in_nchw.empty());
      ConvGraphSpec bare = nchw;
      bare.epilogue = {};
      CHECK_FALSE(cuda::engine_configs(cuda::build_conv_graph(bare, nullptr, "f"), bare,
                                       HeuristicMode::kA, &h200())
                      .empty());
    }
  }
}

TEST_CASE("strict FP32 leaves out tensor-core engines of float32 convolutions, TF32 keeps them",
          "[cudnn]") {
  // The rule on its own.
  cuda::EngineConfig tensor_core;
  tensor_core.numerical_notes = {CUDNN_NUMERICAL_NOTE_TENSOR_CORE};
  cuda::EngineConfig down_convert;
  down_convert.numerical_notes = {CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS};
  const cuda::EngineConfig plain;
  CHECK(cuda::config_allowed(tensor_core, ElementType::kFloat32, MathMode::kTf32));
  CHECK_FALSE(cuda::config_allowed(tensor_core, ElementType::kFloat32, MathMode::kFp32));
  CHECK(cuda::config_allowed(tensor_core, ElementType::kFloat16, MathMode::kFp32));
  CHECK_FALSE(cuda::config_allowed(down_convert, ElementType::kFloat32, MathMode::kTf32));
  CHECK(cuda::config_allowed(plain, ElementType::kFloat32, MathMode::kFp32));

  // cuDNN's answers for a float32 convolution on a described H200.
  for (MathMode math : {MathMode::kTf32, MathMode::kFp32}) {
    INFO(ir::math_mode_name(math));
    const ConvGraphSpec spec = cuda::conv_graph_spec(conv3x3(ElementType::kFloat32, true), math);
    const cuda::ConvOperationGraph graph = cuda::build_conv_graph(spec, nullptr, "c");
    const auto configs = cuda::candidate_configs(graph, spec, &h200());
    REQUIRE_FALSE(configs.empty());
    size_t tensor_cores = 0;
    for (const auto& c : configs)
      tensor_cores += c.has_numerical_note(CUDNN_NUMERICAL_NOTE_TENSOR_CORE) ? 1 : 0;
    if (math == MathMode::kFp32) {
      CHECK(tensor_cores == 0);
    } else {
      CHECK(tensor_cores > 0);  // TF32 engines are among the candidates
    }
  }
}

TEST_CASE("execution plans build for a described GPU and report their workspace", "[cudnn]") {
  for (ElementType type : {ElementType::kFloat32, ElementType::kFloat16}) {
    INFO(ir::type_name(type));
    const ConvGraphSpec spec = cuda::conv_graph_spec(
        conv3x3(type), MathMode::kTf32,
        type == ElementType::kFloat16 ? TensorLayout::kNhwc : TensorLayout::kNchw);
    const cuda::ConvOperationGraph graph = cuda::build_conv_graph(spec, nullptr, "c");
    // The fallback list: engines that need no runtime compilation.
    const auto configs = cuda::engine_configs(graph, spec, HeuristicMode::kFallback, &h200());
    int built = 0;
    for (const auto& c : configs) {
      const auto plan = cuda::build_plan(c, nullptr, &h200());
      if (!plan) continue;
      ++built;
      CHECK(plan->workspace >= 0);
      CHECK(plan->config == c.name());
    }
    CHECK(built > 0);
  }
}

TEST_CASE("a concatenation's channel slice is a strided batch in NCHW and refused in NHWC",
          "[cudnn]") {
  ConvShape s = conv3x3(ElementType::kFloat16);
  s.y_batch_stride = 2 * s.y_item();  // half of a two-way concatenation's channels
  s.y_align = 128;
  const ConvGraphSpec nchw = cuda::conv_graph_spec(s, MathMode::kTf32, TensorLayout::kNchw);
  const cuda::ConvOperationGraph graph = cuda::build_conv_graph(nchw, nullptr, "slice");
  CHECK_FALSE(cuda::engine_configs(graph, nchw, HeuristicMode::kA, &h200()).empty());
  CHECK_THROWS_WITH(
      cuda::build_conv_graph(cuda::conv_graph_spec(s, MathMode::kTf32, TensorLayout::kNhwc),
                             nullptr, "slice"),
      Catch::Contains("'slice'") && Catch::Contains("channels-last"));
}

// Every convolution ios runs for `file` at `precision` (batch 1, sequential
// schedule, lowered as the CUDA backend lowers it), by label.
std::map<std::string, ConvShape> network_convolutions(const std::string& file,
                                                      ir::Precision precision) {
  model::PrecisionRequest request;
  request.precision = precision;
  const auto prepared = model::prepare_model(test::model(file).string(),
                                             model::shape_options(1, false, {}), {}, request);
  const sched::UnitGraph& units = *prepared->units;
  sched::StagedSchedule staged;
  for (sched::UnitId u = 0; u < units.size(); ++u) {
    sched::Stage stage;
    stage.groups = {{u}};
    staged.stages.push_back(stage);
  }
  sched::Schedule schedule;
  schedule.body = staged;
  const cuda::Program program = cuda::lower_program(units, exec::lower(units, schedule));
  std::map<std::string, ConvShape> convs;
  for (const cuda::Launch& launch : program.launches) {
    for (const auto& op : launch.ops) {
      if (const auto* conv = dynamic_cast<const cuda::ConvOp*>(op.get())) {
        convs.emplace(conv->label, cuda::conv_shape(program, *conv));
      }
    }
  }
  return convs;
}

const std::vector<std::string>& benchmark_networks() {
  static const std::vector<std::string> files{"inception_v3-bdyn.onnx", "squeezenet1_1-bdyn.onnx",
                                              "randwire-bdyn-64x64.onnx",
                                              "nasnet_a_large-bdyn-99x99.onnx"};
  return files;
}

bool dense(const ConvShape& s) {
  return s.x_batch_stride == s.x_item() && s.y_batch_stride == s.y_item() &&
         (!s.has_z || s.z_batch_stride == s.y_item());
}

// Issue 51's acceptance check, for what runs without a device: every
// convolution's operation graph as the runtime builds it (ios's NCHW storage,
// its fused epilogue) builds, and heuristics mode A answers for the plan the
// runtime would run: the fused graph, or where no fusion engine takes NCHW
// (every fused one, see the case above) the bare convolution with the own
// epilogue kernel after it.
TEST_CASE(
    "every convolution of the four benchmark networks gets engine configurations from mode A, at "
    "TF32 and fp16",
    "[cudnn][models]") {
  for (const std::string& file : benchmark_networks()) {
    REQUIRE(std::filesystem::exists(test::model(file)));
    for (const ir::Precision precision :
         {ir::Precision::float32(MathMode::kTf32), ir::Precision::narrow(ElementType::kFloat16)}) {
      INFO(file << " at " << precision.name());
      const auto convs = network_convolutions(file, precision);
      CHECK(convs.size() >= 10);
      int fused = 0;
      for (const auto& [label, shape] : convs) {
        INFO("convolution '" << label << "' " << shape.key());
        CHECK(shape.type == precision.storage());
        const ConvGraphSpec spec = cuda::conv_graph_spec(shape, precision.math());
        const cuda::ConvOperationGraph graph = cuda::build_conv_graph(spec, nullptr, label);
        bool answered = !cuda::engine_configs(graph, spec, HeuristicMode::kA, &h200()).empty();
        if (spec.epilogue.any()) {
          ++fused;
          ConvGraphSpec bare = spec;
          bare.epilogue = {};
          answered = answered || !cuda::engine_configs(cuda::build_conv_graph(bare, nullptr, label),
                                                       bare, HeuristicMode::kA, &h200())
                                      .empty();
        }
        CHECK(answered);
      }
      CHECK(fused > 0);  // the epilogue is exercised on real layers
    }
  }
}

// The same convolutions at fp16 in channels-last layout with their fused
// epilogue, the runtime fusion engines' form (dense ones: a strided batch
// has no NHWC form here).
TEST_CASE(
    "every fp16 convolution of the four benchmark networks in NHWC with its epilogue gets engine "
    "configurations from mode A (runtime fusion)",
    "[cudnn][models][fusion]") {
  for (const std::string& file : benchmark_networks()) {
    INFO(file);
    const auto convs = network_convolutions(file, ir::Precision::narrow(ElementType::kFloat16));
    int asked = 0;
    std::string unanswered;
    int missing = 0;
    for (const auto& [label, shape] : convs) {
      if (!dense(shape)) continue;
      ++asked;
      const ConvGraphSpec spec = cuda::conv_graph_spec(shape, MathMode::kFp32, TensorLayout::kNhwc);
      const cuda::ConvOperationGraph graph = cuda::build_conv_graph(spec, nullptr, label);
      if (cuda::engine_configs(graph, spec, HeuristicMode::kA, &h200()).empty()) {
        ++missing;
        unanswered += "\n  " + label + " (" + shape.key() + ")";
      }
    }
    CHECK(asked > 0);
    INFO(missing << " of " << asked << " unanswered:" << unanswered);
    CHECK(missing == 0);
  }
}

}  // namespace
}  // namespace ios::cudnntest

namespace ios::cudnntest {
namespace {

TEST_CASE("the plans' timing keeps the smallest median of five samples or more", "[cudnn]") {
  CHECK(cuda::median_ms({}) == 0.0f);
  CHECK(cuda::median_ms({3.0f, 1.0f, 2.0f}) == 2.0f);
  CHECK(cuda::median_ms({4.0f, 1.0f, 2.0f, 3.0f}) == 2.5f);
  // One slow sample (a clock ramp, a flush that overlapped) does not decide.
  const std::vector<float> a{1.0f, 1.0f, 9.0f, 1.0f, 1.0f};  // median 1.0, mean 2.6
  const std::vector<float> b{1.5f, 1.5f, 1.5f, 1.5f, 1.5f};  // median and mean 1.5
  const std::vector<float> short_run{0.1f, 0.1f};  // fewer than kPlanSamples: no candidate
  CHECK(cuda::fastest_plan({b, a, short_run}) == std::optional<size_t>(1));
  CHECK(cuda::fastest_plan({a, a}) == std::optional<size_t>(0));  // the first of equals
  CHECK_FALSE(cuda::fastest_plan({short_run}).has_value());
  CHECK_FALSE(cuda::fastest_plan({}).has_value());
}

}  // namespace
}  // namespace ios::cudnntest
