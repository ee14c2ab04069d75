// The engine API (include/ios/engine.h) on the host: the options it checks
// before any work (device), the element types of a schedule made with
// --half-io (TensorDesc, 16-bit TensorViews on the cpu backend, refusals of
// the wrong type), and the error kinds of ios/error.h. The CUDA half of
// these (the device restored, buffers and streams of another device, a
// sticky error) is in test/gpu/api_tests.cpp.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ios/engine.h"
#include "ir/element_type.h"
#include "test_paths.h"

namespace ios {
namespace {

std::string small_model() { return test::model("squeezenet1_1-64x64.onnx").string(); }

Schedule io_schedule(const std::string& precision, bool half_io) {
  OptimizeOptions options;
  options.cost = "simulated";
  options.precision = precision;
  options.half_io = half_io;
  return Schedule::optimize(small_model(), options);
}

std::vector<float> input_values(int64_t n) {
  std::vector<float> values(static_cast<size_t>(n));
  uint32_t state = 7;
  for (float& v : values) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>(state >> 8) / 16777216.0f * 2.0f - 1.0f;
  }
  return values;
}

template <typename Call>
std::string user_error_of(Call&& call) {
  try {
    call();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no UserError)";
}

TEST_CASE("engine API: device is a CUDA ordinal, 0 or more, for the cuda backend", "[engine]") {
  EngineOptions options;
  options.device = -1;
  const std::string negative = user_error_of([&] { Engine(small_model(), options); });
  CHECK(negative == "device -1: expected a CUDA device ordinal, 0 (the first GPU) or more");
  options.device = 1;
  const std::string cpu = user_error_of([&] { Engine(small_model(), options); });
  CHECK(cpu == "device 1: the cpu backend runs on no GPU; device is for backend cuda (drop it)");
  options.backend = "sim";
  CHECK(user_error_of([&] { Engine(small_model(), options); }).find("the sim backend") !=
        std::string::npos);
  // A device this machine does not have is no input error: the GPU is absent.
  options.backend = "cuda";
  options.device = 1000;
  REQUIRE_THROWS_AS(Engine(small_model(), options), NoDeviceError);
  try {
    Engine(small_model(), options);
  } catch (const NoDeviceError& e) {
    CHECK(std::string(e.what()).rfind("no CUDA device: ", 0) == 0);
  }
}

TEST_CASE("engine API: the element types' names and sizes", "[engine]") {
  CHECK(to_string(DataType::kFloat32) == "float32");
  CHECK(to_string(DataType::kFloat16) == "float16");
  CHECK(to_string(DataType::kBFloat16) == "bfloat16");
  CHECK(element_size(DataType::kFloat32) == 4);
  CHECK(element_size(DataType::kFloat16) == 2);
  CHECK(element_size(DataType::kBFloat16) == 2);
}

TEST_CASE("engine API: error kinds and their exit codes", "[engine]") {
  const OutOfMemoryError oom("out of memory: cudaMalloc asked for 1024 bytes", 1024);
  const DeviceError& as_device = oom;  // an OutOfMemoryError is a DeviceError
  CHECK(oom.bytes() == 1024);
  CHECK_FALSE(as_device.sticky());
  CHECK(as_device.exit_code() == ExitCode::kOutOfMemory);
  CHECK(DeviceError("x").exit_code() == ExitCode::kDevice);
  CHECK(DeviceError("x", true).sticky());
  // Documented in docs/cli.md (test/cli/docs_drift.sh checks the table).
  CHECK(static_cast<int>(ExitCode::kDevice) == 5);
  CHECK(static_cast<int>(ExitCode::kOutOfMemory) == 6);
}

// The float32 engine's tensors are float32, and a 16-bit view is refused.
TEST_CASE("engine API: a float32 engine refuses 16-bit views by name", "[engine]") {
  const Engine engine(small_model(), io_schedule("", false));
  const TensorDesc& in = engine.inputs().at(0);
  const TensorDesc& out = engine.outputs().at(0);
  CHECK(in.type == DataType::kFloat32);
  CHECK(out.type == DataType::kFloat32);
  std::vector<uint16_t> x(static_cast<size_t>(in.elements()));
  std::vector<float> y(static_cast<size_t>(out.elements()));
  auto context = engine.create_context();
  const std::string message = user_error_of([&] {
    context->run({{in.name, {x.data(), in.shape, DataType::kFloat16, DeviceKind::kCpu}}},
                 {{out.name, {y.data(), out.shape, DataType::kFloat32, DeviceKind::kCpu}}});
  });
  CHECK(message == "input '" + in.name +
                       "' holds float16 but the engine's inputs are float32; pass float32 (16-bit "
                       "data is for a schedule made with --half-io or a model typed so)");
}

// A --half-io schedule: the engine reports the 16-bit type, takes and gives
// 16-bit host views on the cpu backend with the values the float32 path
// computes from the same (rounded) inputs, and refuses the other 16-bit type.
void check_half_io(const std::string& precision, DataType type) {
  const Engine engine(small_model(), io_schedule(precision, true));
  REQUIRE(engine.inputs().size() == 1);
  const TensorDesc& in = engine.inputs().at(0);
  const TensorDesc& out = engine.outputs().at(0);
  CHECK(in.type == type);
  CHECK(out.type == type);
  const ir::ElementType element =
      type == DataType::kFloat16 ? ir::ElementType::kFloat16 : ir::ElementType::kBFloat16;

  // The input, rounded to the 16-bit type: its bits, and the float32 values they hold.
  const std::vector<float> values = input_values(in.elements());
  std::vector<uint16_t> bits(values.size());
  std::vector<float> rounded(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    bits[i] = static_cast<uint16_t>(ir::to_bits(values[i], element));
    rounded[i] = ir::from_bits(bits[i], element);
  }
  auto context = engine.create_context();
  const std::vector<float> expected =
      context->run({{in.name, {in.shape, rounded}}}).at(out.name).data;
  bool finite = !expected.empty();
  for (float v : expected) finite = finite && std::isfinite(v);
  REQUIRE(finite);

  // 16-bit in, 16-bit out: the float32 path's outputs, stored in the type.
  std::vector<uint16_t> y16(static_cast<size_t>(out.elements()), 0xffff);
  context->run({{in.name, {bits.data(), in.shape, type, DeviceKind::kCpu}}},
               {{out.name, {y16.data(), out.shape, type, DeviceKind::kCpu}}});
  size_t differ = 0;
  for (size_t i = 0; i < y16.size(); ++i)
    differ += y16[i] == static_cast<uint16_t>(ir::to_bits(expected[i], element)) ? 0 : 1;
  CHECK(differ == 0);

  // 16-bit in, float32 out: the same values, widened (exactly representable).
  std::vector<float> y32(static_cast<size_t>(out.elements()));
  context->run({{in.name, {bits.data(), in.shape, type, DeviceKind::kCpu}}},
               {{out.name, {y32.data(), out.shape, DataType::kFloat32, DeviceKind::kCpu}}});
  CHECK(y32 == expected);

  // The other 16-bit type is refused, naming the tensor and both types.
  const DataType other = type == DataType::kFloat16 ? DataType::kBFloat16 : DataType::kFloat16;
  const std::string message = user_error_of([&] {
    context->run({{in.name, {bits.data(), in.shape, other, DeviceKind::kCpu}}},
                 {{out.name, {y16.data(), out.shape, type, DeviceKind::kCpu}}});
  });
  CHECK(message == "input '" + in.name + "' holds " + to_string(other) +
                       " but the engine's inputs are " + to_string(type) + "; pass float32 or " +
                       to_string(type));
}

TEST_CASE("engine API: fp16 inputs and outputs of a --half-io schedule on the cpu backend",
          "[engine]") {
  check_half_io("fp16", DataType::kFloat16);
}

TEST_CASE("engine API: bf16 inputs and outputs of a --half-io schedule on the cpu backend",
          "[engine]") {
  check_half_io("bf16", DataType::kBFloat16);
}

TEST_CASE("engine API: a schedule converted without --half-io keeps float32 inputs and outputs",
          "[engine]") {
  const Engine engine(small_model(), io_schedule("fp16", false));
  CHECK(engine.inputs().at(0).type == DataType::kFloat32);
  CHECK(engine.outputs().at(0).type == DataType::kFloat32);
}

}  // namespace
}  // namespace ios

namespace ios {
namespace {

Schedule batch_schedule(int64_t batch) {
  OptimizeOptions options;
  options.cost = "simulated";
  options.scheduler = "sequential";  // no merged convolution: the model's weights only
  options.batch = batch;
  options.rewrite_batch = true;  // the model's batch is static (1)
  return Schedule::optimize(small_model(), options);
}

// The schedules above were made with rewrite_batch: the engine imports so too.
EngineOptions rewriting() {
  EngineOptions options;
  options.rewrite_batch = true;
  return options;
}

TensorMap batch_inputs(const std::vector<TensorDesc>& inputs) {
  TensorMap given;
  for (const TensorDesc& t : inputs) given[t.name] = Tensor{t.shape, input_values(t.elements())};
  return given;
}

TEST_CASE("engine API: three contexts and two batch sizes hold the weights once", "[engine]") {
  const Schedule one = batch_schedule(1), two = batch_schedule(2);
  // What an engine of one batch size holds: the model's weights, and one
  // activation arena per context once it has run.
  const Engine single(small_model(), one, rewriting()), single_two(small_model(), two, rewriting());
  const int64_t weight_bytes = single.allocations().weights.bytes;
  REQUIRE(weight_bytes > 0);
  CHECK(single_two.allocations().weights.bytes == weight_bytes);
  const TensorMap in_one = batch_inputs(single.inputs()),
                  in_two = batch_inputs(single_two.inputs());
  auto reference = single.create_context(), reference_two = single_two.create_context();
  const TensorMap out_one = reference->run(in_one), out_two = reference_two->run(in_two);
  const int64_t arena_one = single.allocations().activations.bytes;
  const int64_t arena_two = single_two.allocations().activations.bytes;
  REQUIRE(arena_one > 0);
  CHECK(arena_two > arena_one);

  const Engine engine(small_model(), std::vector<Schedule>{one, two}, rewriting());
  CHECK(engine.batch_sizes() == std::vector<int64_t>{1, 2});
  CHECK(engine.inputs(2).at(0).shape.at(0) == 2);
  CHECK(engine.allocations().weights.allocations == 1);
  CHECK(engine.allocations().weights.bytes == weight_bytes);
  {
    std::vector<std::unique_ptr<ExecutionContext>> contexts;
    for (int c = 0; c < 3; ++c) contexts.push_back(engine.create_context());
    CHECK(engine.allocations().activations.allocations == 0);  // cpu: made by the first run
    for (auto& context : contexts) {
      // Each call chooses its schedule by the inputs' batch: the outputs are
      // those of the engine made for that batch alone.
      CHECK(context->run(in_two).at(single.outputs().at(0).name).data ==
            out_two.at(single.outputs().at(0).name).data);
      CHECK(context->run(in_one).at(single.outputs().at(0).name).data ==
            out_one.at(single.outputs().at(0).name).data);
    }
    const Allocations held = engine.allocations();
    CHECK(held.weights.allocations == 1);
    CHECK(held.weights.bytes == weight_bytes);
    CHECK(held.activations.allocations == 6);
    CHECK(held.activations.bytes == 3 * (arena_one + arena_two));

    // A batch the engine does not hold: one line naming the input, its batch and the held ones.
    TensorMap in_three = in_one;
    const TensorDesc& x = engine.inputs().at(0);
    std::vector<int64_t> shape = x.shape;
    shape[0] = 3;
    in_three[x.name] = Tensor{shape, input_values(x.elements() * 3)};
    CHECK(user_error_of([&] { contexts[0]->run(in_three); }) ==
          "input '" + x.name + "' has batch 3 (shape " +
              [&] {
                std::string s;
                for (int64_t d : shape) s += (s.empty() ? "" : "x") + std::to_string(d);
                return s;
              }() +
              ") but the engine holds batch sizes 1, 2; give one of them, or load the engine with "
              "a schedule for batch 3 too");
  }
  // The contexts' activations go with them; the weights stay with the engine.
  CHECK(engine.allocations().activations.allocations == 0);
  CHECK(engine.allocations().activations.bytes == 0);
  CHECK(engine.allocations().weights.bytes == weight_bytes);
}

TEST_CASE("engine API: an engine of several schedules refuses a repeated batch and a batch option",
          "[engine]") {
  const Schedule one = batch_schedule(1), two = batch_schedule(2);
  CHECK(user_error_of([&] {
          Engine(small_model(), std::vector<Schedule>{one, two, one}, rewriting());
        }) ==
        "schedules 1 and 3 are both for batch 1: an engine holds one schedule per batch size; "
        "drop one");
  EngineOptions options = rewriting();
  options.batch = 2;
  CHECK(user_error_of([&] {
          Engine(small_model(), std::vector<Schedule>{one, two}, options);
        }) ==
        "batch and input_shapes are for an engine of one schedule: with 2 schedules each runs at "
        "the batch it was made for (drop them)");
  CHECK(user_error_of([&] { Engine(small_model(), std::vector<Schedule>{}); }) ==
        "no schedule given: an engine needs one or more, one per batch size");
}

}  // namespace
}  // namespace ios
