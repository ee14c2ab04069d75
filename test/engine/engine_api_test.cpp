// The engine API (include/ios/engine.h) on the host: the options it checks
// before any work (device), the element types of a schedule made with
// --half-io (TensorDesc, 16-bit TensorViews on the cpu backend, refusals of
// the wrong type), and the error kinds of ios/error.h. The CUDA half of
// these (the device restored, buffers and streams of another device, a
// sticky error) is in test/gpu/api_tests.cpp.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
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
