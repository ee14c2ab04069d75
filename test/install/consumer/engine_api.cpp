// The engine API (ios/engine.h) as an application sees it, built against
// the installed package (test/cli/install.sh): optimize a model, run it on
// the CPU from host tensors and caller-owned buffers, refuse what does not
// fit with the programs' messages, and give identical outputs from several
// threads with a context each. Prints one line per check; exits 1 if one
// fails.
// Usage: engine_api MODEL.onnx OTHER_MODEL.onnx (OTHER: a model of its own,
// for the schedule made for another model).
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "ios/engine.h"

namespace {

int failures = 0;

void check(bool passed, const std::string& what) {
  std::printf("%s: %s\n", passed ? "ok" : "FAILED", what.c_str());
  if (!passed) ++failures;
}

// `call` must throw ios::UserError whose message contains `expected`.
void check_refused(const std::function<void()>& call, const std::string& expected,
                   const std::string& what) {
  try {
    call();
    check(false, what + " (nothing thrown)");
  } catch (const ios::UserError& e) {
    const std::string message = e.what();
    check(message.find(expected) != std::string::npos, what + ": " + message);
  } catch (const std::exception& e) {
    check(false, what + " (another exception: " + e.what() + ")");
  }
}

ios::Tensor random_input(const ios::TensorDesc& desc) {
  ios::Tensor t{desc.shape, std::vector<float>(static_cast<size_t>(desc.elements()))};
  uint32_t state = 12345;
  for (float& v : t.data) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>(state >> 8) / 16777216.0f * 2.0f - 1.0f;
  }
  return t;
}

ios::EngineOptions with_backend(const std::string& backend) {
  ios::EngineOptions options;
  options.backend = backend;
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: engine_api MODEL.onnx OTHER_MODEL.onnx\n");
    return 2;
  }
  const std::string model = argv[1], other = argv[2];
  try {
    ios::OptimizeOptions options;
    options.batch = 1;
    options.cost = "simulated";
    const ios::Schedule schedule = ios::Schedule::optimize(model, options);
    check(schedule.scheduler() == "ios" && schedule.batch() == 1 &&
              schedule.predicted_latency_ms() > 0.0 && !schedule.stages().empty() &&
              !schedule.report().empty(),
          "optimize: an ios schedule at batch 1 with stages, a latency and a report");

    ios::OptimizeOptions bounded = options;
    bounded.max_streams = 1;
    bounded.memory_limit = std::to_string(schedule.peak_memory_bytes().value_or(0));
    const ios::Schedule one_stream = ios::Schedule::optimize(model, bounded);
    bool single = true;
    for (const ios::ScheduleStage& stage : one_stream.stages()) single = single && stage.groups.size() == 1;
    check(schedule.peak_memory_bytes().value_or(0) > 0 && single &&
              one_stream.peak_memory_bytes().value_or(0) <= schedule.peak_memory_bytes().value_or(0),
          "optimize with max_streams 1 and the memory limit of the schedule's peak: one group per "
          "stage, within the limit");

    const ios::Engine engine(model, schedule);
    check(engine.inputs().size() == 1 && engine.inputs()[0].shape.size() == 4 &&
              engine.outputs().size() == 1,
          "engine: one input of rank 4, one output");
    const ios::TensorDesc& in = engine.inputs()[0];
    const ios::TensorDesc& out = engine.outputs()[0];
    const ios::TensorMap inputs = {{in.name, random_input(in)}};

    auto context = engine.create_context();
    const ios::TensorMap outputs = context->run(inputs);
    const std::vector<float>& y = outputs.at(out.name).data;
    bool finite = static_cast<int64_t>(y.size()) == out.elements();
    for (float v : y) finite = finite && std::isfinite(v);
    check(finite, "run: every output value computed and finite");

    // The same run into caller-owned buffers.
    std::vector<float> x = inputs.at(in.name).data, written(static_cast<size_t>(out.elements()));
    context->run(
        {{in.name, {x.data(), in.shape, ios::DataType::kFloat32, ios::DeviceKind::kCpu}}},
        {{out.name, {written.data(), out.shape, ios::DataType::kFloat32, ios::DeviceKind::kCpu}}});
    check(written == y, "run on caller buffers: the same outputs");

    // The sequential schedule (no schedule given) agrees within float32 sums.
    const ios::Engine sequential(model, [] {
      ios::EngineOptions o;
      o.batch = 1;
      return o;
    }());
    const std::vector<float> z = sequential.create_context()->run(inputs).at(out.name).data;
    double worst = 0.0;
    for (size_t i = 0; i < y.size(); ++i)
      worst = std::max(worst, std::fabs(double(y[i]) - double(z[i])));
    check(worst < 1e-3, "the ios schedule and the sequential one agree (max difference " +
                            std::to_string(worst) + ")");

    // Refusals, each a UserError with the message the programs print.
    ios::Tensor wrong_shape = inputs.at(in.name);
    wrong_shape.shape[2] += 1;
    check_refused([&] { context->run({{in.name, wrong_shape}}); }, "has shape", "a wrong shape");
    check_refused([&] { context->run(ios::TensorMap{}); }, "is missing", "a missing input");
    check_refused(
        [&] {
          context->run({{in.name, inputs.at(in.name)}, {"extra", inputs.at(in.name)}});
        },
        "unknown input 'extra'", "an extra input");
    check_refused(
        [&] {
          context->run(
              {{in.name, {x.data(), in.shape, ios::DataType::kFloat32, ios::DeviceKind::kCuda}}},
              {{out.name,
                {written.data(), out.shape, ios::DataType::kFloat32, ios::DeviceKind::kCpu}}});
        },
        "is in cuda memory", "device memory given to run()");
    check_refused([&] { context->enqueue({}, {}, nullptr); },
                  "enqueue() queues work on a CUDA stream", "enqueue on the cpu backend");
    check_refused([&] { ios::Engine(other, schedule); }, "another model",
                  "a schedule made for another model");
    check_refused([&] { ios::Engine(model, schedule, with_backend("tpu")); },
                  "unknown backend 'tpu'", "an unknown backend");
    check_refused([&] { ios::Schedule::from_json("{}", "empty.json"); }, "empty.json",
                  "a document that is no schedule");
    check_refused(
        [&] {
          ios::EngineOptions negative;
          negative.device = -1;
          ios::Engine(model, schedule, negative);
        },
        "device -1: expected a CUDA device ordinal", "a negative device");
    // The installed header's element types and error kinds.
    check(ios::to_string(ios::DataType::kBFloat16) == "bfloat16" &&
              ios::element_size(ios::DataType::kFloat16) == 2 &&
              ios::OutOfMemoryError("out of memory", 64).bytes() == 64 &&
              ios::DeviceError("x", true).sticky() &&
              ios::OutOfMemoryError("x", 1).exit_code() == ios::ExitCode::kOutOfMemory,
          "the header's 16-bit types and device error kinds");
    try {
      ios::Engine(model, schedule, with_backend("cuda"));
      std::printf("note: a GPU is present; the CUDA path is tested by ios_gpu_tests\n");
    } catch (const ios::NoDeviceError& e) {
      check(std::string(e.what()).rfind("no CUDA device", 0) == 0,
            std::string("cuda without a GPU: ") + e.what());
    }

    // The sim backend predicts and computes nothing.
    const ios::Engine predicted(model, schedule, with_backend("sim"));
    auto sim = predicted.create_context();
    check(sim->predict().latency_ms > 0.0, "sim: a predicted latency");
    check_refused([&] { sim->run(inputs); }, "computes no outputs", "run() on the sim backend");

    // Several threads, one context each: identical outputs.
    std::vector<std::vector<float>> results(3);
    std::vector<std::thread> threads;
    for (auto& result : results) {
      threads.emplace_back([&engine, &inputs, &out, &result] {
        auto own = engine.create_context();
        result = own->run(inputs).at(out.name).data;
      });
    }
    for (auto& t : threads) t.join();
    bool identical = true;
    for (const auto& r : results) identical = identical && r == y;
    check(identical, "3 threads, one context each: identical outputs");
  } catch (const ios::Error& e) {
    std::printf("FAILED: unexpected error: %s\n", e.what());
    return 1;
  }
  return failures == 0 ? 0 : 1;
}
