// The engine API's CUDA path (include/ios/engine.h) on a GPU, against the
// same engine on the CPU backend: host runs; enqueue on the caller's stream
// with the caller's device buffers; enqueue captured into the caller's CUDA
// graph and replayed; caller-provided device memory; one context per thread
// sharing the weights; a schedule planned for synced launches refused for
// enqueue. [host]: without a device the cuda backend is refused by name.
#include <catch2/catch.hpp>

#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cuda/engine.h"
#include "ios/engine.h"
#include "test_paths.h"

#if IOS_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace ios::gputest {
namespace {

std::string api_model() { return test::model("squeezenet1_1-bdyn.onnx").string(); }

ios::Schedule api_schedule() {
  ios::OptimizeOptions options;
  options.batch = 1;
  options.cost = "simulated";
  return ios::Schedule::optimize(api_model(), options);
}

TEST_CASE("engine API: the cuda backend without a device is refused", "[host]") {
  if (cuda::device_status().state == cuda::DeviceState::kUsable)
    return;  // the GPU cases below cover it
  EngineOptions options;
  options.backend = "cuda";
  options.batch = 1;
  REQUIRE_THROWS_AS(ios::Engine(api_model(), options), ios::NoDeviceError);
}

#if IOS_HAVE_CUDA

#define API_CUDA_CHECK(call) REQUIRE((call) == cudaSuccess)

ios::Tensor api_input(const ios::TensorDesc& desc, uint32_t seed) {
  ios::Tensor t{desc.shape, std::vector<float>(static_cast<size_t>(desc.elements()))};
  for (float& v : t.data) {
    seed = seed * 1664525u + 1013904223u;
    v = static_cast<float>(seed >> 8) / 16777216.0f * 2.0f - 1.0f;
  }
  return t;
}

void require_close(const std::vector<float>& actual, const std::vector<float>& expected,
                   const std::string& what) {
  REQUIRE(actual.size() == expected.size());
  double worst = 0.0;
  for (size_t i = 0; i < actual.size(); ++i) {
    REQUIRE(std::isfinite(actual[i]));
    worst = std::max(worst, std::fabs(double(actual[i]) - double(expected[i])) /
                                (1e-3 + std::fabs(double(expected[i]))));
  }
  INFO(what << ": worst relative difference " << worst);
  CHECK(worst < 1e-2);  // fp32 on both sides: only summation order differs
}

// Device buffers of one input and one output, owned by the test.
struct DeviceIo {
  explicit DeviceIo(const ios::Engine& engine)
      : in(engine.inputs().at(0)), out(engine.outputs().at(0)) {
    API_CUDA_CHECK(cudaMalloc(&x, static_cast<size_t>(in.elements()) * sizeof(float)));
    API_CUDA_CHECK(cudaMalloc(&y, static_cast<size_t>(out.elements()) * sizeof(float)));
  }
  ~DeviceIo() {
    cudaFree(x);
    cudaFree(y);
  }
  DeviceIo(const DeviceIo&) = delete;
  DeviceIo& operator=(const DeviceIo&) = delete;
  ios::TensorViewMap inputs() const {
    return {{in.name, {x, in.shape, DataType::kFloat32, DeviceKind::kCuda}}};
  }
  ios::TensorViewMap outputs() const {
    return {{out.name, {y, out.shape, DataType::kFloat32, DeviceKind::kCuda}}};
  }
  void upload(const std::vector<float>& data, cudaStream_t stream) {
    API_CUDA_CHECK(cudaMemcpyAsync(x, data.data(), data.size() * sizeof(float),
                                   cudaMemcpyHostToDevice, stream));
  }
  std::vector<float> download(cudaStream_t stream) {
    std::vector<float> data(static_cast<size_t>(out.elements()));
    API_CUDA_CHECK(cudaMemcpyAsync(data.data(), y, data.size() * sizeof(float),
                                   cudaMemcpyDeviceToHost, stream));
    API_CUDA_CHECK(cudaStreamSynchronize(stream));
    return data;
  }
  ios::TensorDesc in, out;
  void* x = nullptr;
  void* y = nullptr;
};

struct ApiFixture {
  ApiFixture()
      : schedule(api_schedule()),
        cpu(api_model(), schedule),
        gpu(api_model(), schedule, cuda_options()) {
    const ios::TensorDesc& in = cpu.inputs().at(0);
    x1 = api_input(in, 1).data;
    x2 = api_input(in, 2).data;
    const std::string out = cpu.outputs().at(0).name;
    auto context = cpu.create_context();
    y1 = context->run({{in.name, {in.shape, x1}}}).at(out).data;
    y2 = context->run({{in.name, {in.shape, x2}}}).at(out).data;
  }
  static ios::EngineOptions cuda_options(const std::string& launch = "") {
    ios::EngineOptions options;
    options.backend = "cuda";
    options.precision = "fp32";
    options.launch = launch;
    return options;
  }
  ios::Schedule schedule;
  ios::Engine cpu, gpu;
  std::vector<float> x1, x2, y1, y2;  // inputs and the CPU backend's outputs
};

TEST_CASE_METHOD(ApiFixture, "engine API: cuda run on host tensors matches the cpu backend",
                 "[gpu][api]") {
  const ios::TensorDesc& in = gpu.inputs().at(0);
  auto context = gpu.create_context();
  require_close(context->run({{in.name, {in.shape, x1}}}).at(gpu.outputs()[0].name).data, y1,
                "run");
}

TEST_CASE_METHOD(ApiFixture, "engine API: enqueue on the caller's stream with the caller's buffers",
                 "[gpu][api]") {
  for (const std::string launch : {"graph", "plain"}) {
    const ios::Engine engine(api_model(), schedule, cuda_options(launch));
    auto context = engine.create_context();
    cudaStream_t stream = nullptr;
    API_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    DeviceIo io(engine);
    io.upload(x1, stream);
    context->enqueue(io.inputs(), io.outputs(), stream);
    require_close(io.download(stream), y1, "enqueue, launch " + launch);
    io.upload(x2, stream);  // queued behind the first, no host wait between
    context->enqueue(io.inputs(), io.outputs(), stream);
    require_close(io.download(stream), y2, "second enqueue, launch " + launch);
    API_CUDA_CHECK(cudaStreamDestroy(stream));
  }
}

TEST_CASE_METHOD(ApiFixture, "engine API: enqueue captured into the caller's CUDA graph",
                 "[gpu][api]") {
  auto context = gpu.create_context();
  cudaStream_t stream = nullptr;
  API_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  DeviceIo io(gpu);
  API_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  context->enqueue(io.inputs(), io.outputs(), stream);
  cudaGraph_t graph = nullptr;
  API_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  API_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (const auto& [x, y] : {std::pair{&x1, &y1}, std::pair{&x2, &y2}}) {
    io.upload(*x, stream);
    API_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    require_close(io.download(stream), *y, "graph replay");
  }
  API_CUDA_CHECK(cudaGraphExecDestroy(exec));
  API_CUDA_CHECK(cudaGraphDestroy(graph));
  API_CUDA_CHECK(cudaStreamDestroy(stream));
}

TEST_CASE_METHOD(ApiFixture, "engine API: a context in caller-provided device memory",
                 "[gpu][api]") {
  const size_t bytes = gpu.device_memory_size();
  REQUIRE(bytes > 0);
  void* memory = nullptr;
  API_CUDA_CHECK(cudaMalloc(&memory, bytes));
  {
    REQUIRE_THROWS_WITH(gpu.create_context({memory, bytes - 1}),
                        Catch::Contains("smaller than it needs"));
    auto context = gpu.create_context({memory, bytes});
    cudaStream_t stream = nullptr;
    API_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    DeviceIo io(gpu);
    io.upload(x1, stream);
    context->enqueue(io.inputs(), io.outputs(), stream);
    require_close(io.download(stream), y1, "caller memory");
    API_CUDA_CHECK(cudaStreamDestroy(stream));
  }
  API_CUDA_CHECK(cudaFree(memory));
}

TEST_CASE_METHOD(ApiFixture,
                 "engine API: one context per thread, shared weights, identical outputs",
                 "[gpu][api]") {
  // Buffers made here; the threads make no Catch2 assertion (it is not
  // thread-safe) and report their CUDA errors and exceptions instead.
  constexpr int kThreads = 3;
  std::vector<std::unique_ptr<DeviceIo>> io;
  for (int i = 0; i < kThreads; ++i) io.push_back(std::make_unique<DeviceIo>(gpu));
  std::vector<std::vector<float>> results(kThreads, std::vector<float>(y1.size()));
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([this, i, &io, &results, &errors] {
      try {
        auto context = gpu.create_context();
        cudaStream_t stream = nullptr;
        cudaError_t rc = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
        if (rc == cudaSuccess) {
          rc = cudaMemcpyAsync(io[i]->x, x1.data(), x1.size() * sizeof(float),
                               cudaMemcpyHostToDevice, stream);
        }
        if (rc == cudaSuccess) context->enqueue(io[i]->inputs(), io[i]->outputs(), stream);
        if (rc == cudaSuccess) {
          rc = cudaMemcpyAsync(results[i].data(), io[i]->y, results[i].size() * sizeof(float),
                               cudaMemcpyDeviceToHost, stream);
        }
        if (rc == cudaSuccess) rc = cudaStreamSynchronize(stream);
        if (stream != nullptr) cudaStreamDestroy(stream);
        if (rc != cudaSuccess) errors[i] = cudaGetErrorString(rc);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) {
    INFO("thread " << i << ": " << errors[i]);
    REQUIRE(errors[i].empty());
    require_close(results[i], y1, "a thread's context");
    CHECK(results[i] == results[0]);  // the same algorithms and the same weights: the same bits
  }
}

TEST_CASE_METHOD(ApiFixture,
                 "engine API: a schedule run with synced launches is refused for enqueue",
                 "[gpu][api]") {
  const ios::Engine synced(api_model(), schedule, cuda_options("synced"));
  auto context = synced.create_context();
  DeviceIo io(synced);
  REQUIRE_THROWS_WITH(context->enqueue(io.inputs(), io.outputs(), nullptr),
                      Catch::Contains("synced launches"));
  // Host runs still work: the host may synchronize the device there.
  const ios::TensorDesc& in = synced.inputs().at(0);
  require_close(context->run({{in.name, {in.shape, x1}}}).at(synced.outputs()[0].name).data, y1,
                "synced run");
}

#endif  // IOS_HAVE_CUDA

}  // namespace
}  // namespace ios::gputest
