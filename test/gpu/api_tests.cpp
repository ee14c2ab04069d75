// The engine API's CUDA path (include/ios/engine.h) on a GPU, against the
// same engine on the CPU backend: host runs; enqueue on the caller's stream
// with the caller's device buffers; enqueue captured into the caller's CUDA
// graph and replayed; caller-provided device memory; one context per thread
// sharing the weights; a schedule planned for synced launches refused for
// enqueue; the caller's current device restored; host memory and another
// device's buffers and streams refused; a --half-io engine enqueued with
// 16-bit buffers; after a sticky CUDA error (in a child process: it loses
// the process's CUDA context) every call says the engine is unusable.
// [host]: without a device the cuda backend is refused by name.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cuda/engine.h"
#include "ios/engine.h"
#include "test_paths.h"

#if IOS_HAVE_CUDA
#include <cuda_runtime.h>
#include <sys/wait.h>

#include "ir/element_type.h"
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
    // Host memory is refused (where CUDA can tell, as here: plain host memory).
    void* host = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    REQUIRE(host != nullptr);
    CHECK_THROWS_WITH(gpu.create_context({host, bytes}), Catch::Contains("is host memory"));
    std::free(host);
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

int device_count() {
  int count = 0;
  API_CUDA_CHECK(cudaGetDeviceCount(&count));
  return count;
}

int current_device() {
  int device = -1;
  API_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

TEST_CASE_METHOD(ApiFixture, "engine API: every call leaves the caller's current device as it was",
                 "[gpu][api]") {
  // With one GPU the engine's device is the caller's: nothing may change it.
  // With two, the caller works on the last and the engine on device 0.
  const int caller = device_count() - 1;
  API_CUDA_CHECK(cudaSetDevice(caller));
  {
    const ios::Engine engine(api_model(), schedule, cuda_options());
    CHECK(current_device() == caller);
    auto context = engine.create_context();
    CHECK(current_device() == caller);
    const ios::TensorDesc& in = engine.inputs().at(0);
    require_close(context->run({{in.name, {in.shape, x1}}}).at(engine.outputs()[0].name).data, y1,
                  "run from another current device");
    CHECK(current_device() == caller);
    API_CUDA_CHECK(cudaSetDevice(0));  // the buffers: the engine's device
    DeviceIo io(engine);
    cudaStream_t stream = nullptr;
    API_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    io.upload(x2, stream);
    API_CUDA_CHECK(cudaSetDevice(caller));
    context->enqueue(io.inputs(), io.outputs(), stream);
    CHECK(current_device() == caller);
    require_close(io.download(stream), y2, "enqueue from another current device");
    API_CUDA_CHECK(cudaStreamDestroy(stream));
    context.reset();
    CHECK(current_device() == caller);
  }
  CHECK(current_device() == caller);  // the Engine's destruction too
  // A device the machine does not have.
  ios::EngineOptions absent = cuda_options();
  absent.device = device_count();
  REQUIRE_THROWS_AS(ios::Engine(api_model(), schedule, absent), ios::NoDeviceError);
  CHECK(current_device() == caller);
  API_CUDA_CHECK(cudaSetDevice(0));
}

TEST_CASE_METHOD(ApiFixture, "engine API: enqueue refuses host memory and another device's buffers",
                 "[gpu][api]") {
  auto context = gpu.create_context();
  DeviceIo io(gpu);
  // Plain host memory, marked as device memory: refused before anything is queued.
  std::vector<float> host(static_cast<size_t>(io.in.elements()));
  ios::TensorViewMap host_inputs = io.inputs();
  host_inputs.begin()->second.data = host.data();
  REQUIRE_THROWS_WITH(context->enqueue(host_inputs, io.outputs(), nullptr),
                      Catch::Contains("is host memory that CUDA does not know"));
  // A 16-bit buffer for a float32 engine: refused by name.
  ios::TensorViewMap half_inputs = io.inputs();
  half_inputs.begin()->second.type = ios::DataType::kFloat16;
  REQUIRE_THROWS_WITH(context->enqueue(half_inputs, io.outputs(), nullptr),
                      Catch::Contains("holds float16 but the engine's inputs are float32"));
  if (device_count() < 2) {
    // No other device to own a buffer or a stream: the refusals above are
    // what one GPU can show; the engine still works after them.
    cudaStream_t stream = nullptr;
    API_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    io.upload(x1, stream);
    context->enqueue(io.inputs(), io.outputs(), stream);
    require_close(io.download(stream), y1, "enqueue after refusals");
    API_CUDA_CHECK(cudaStreamDestroy(stream));
    return;
  }
  API_CUDA_CHECK(cudaSetDevice(1));
  void* other = nullptr;
  API_CUDA_CHECK(cudaMalloc(&other, static_cast<size_t>(io.out.elements()) * sizeof(float)));
  cudaStream_t other_stream = nullptr;
  API_CUDA_CHECK(cudaStreamCreateWithFlags(&other_stream, cudaStreamNonBlocking));
  API_CUDA_CHECK(cudaSetDevice(0));
  ios::TensorViewMap other_outputs = io.outputs();
  other_outputs.begin()->second.data = other;
  REQUIRE_THROWS_WITH(
      context->enqueue(io.inputs(), other_outputs, nullptr),
      Catch::Contains("is memory of CUDA device 1 but the engine runs on device 0"));
  REQUIRE_THROWS_WITH(context->enqueue(io.inputs(), io.outputs(), other_stream),
                      Catch::Contains("belongs to CUDA device 1 but the engine runs on device 0"));
  API_CUDA_CHECK(cudaSetDevice(1));
  API_CUDA_CHECK(cudaStreamDestroy(other_stream));
  API_CUDA_CHECK(cudaFree(other));
  API_CUDA_CHECK(cudaSetDevice(0));
}

TEST_CASE("engine API: a --half-io engine enqueued with 16-bit device buffers", "[gpu][api]") {
  ios::OptimizeOptions search;
  search.batch = 1;
  search.cost = "simulated";
  search.precision = "fp16";
  search.half_io = true;
  const ios::Schedule half = ios::Schedule::optimize(api_model(), search);
  ios::EngineOptions options;
  options.backend = "cuda";
  const ios::Engine engine(api_model(), half, options);
  const ios::TensorDesc& in = engine.inputs().at(0);
  const ios::TensorDesc& out = engine.outputs().at(0);
  REQUIRE(in.type == ios::DataType::kFloat16);
  REQUIRE(out.type == ios::DataType::kFloat16);
  const std::vector<float> x = api_input(in, 3).data;
  std::vector<uint16_t> x16(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    x16[i] = static_cast<uint16_t>(ir::to_bits(x[i], ir::ElementType::kFloat16));
  auto context = engine.create_context();
  // The reference: the same engine on host tensors (rounded to fp16 on the way in).
  const std::vector<float> expected = context->run({{in.name, {in.shape, x}}}).at(out.name).data;
  void* dx = nullptr;
  void* dy = nullptr;
  API_CUDA_CHECK(cudaMalloc(&dx, x16.size() * 2));
  API_CUDA_CHECK(cudaMalloc(&dy, static_cast<size_t>(out.elements()) * 2));
  API_CUDA_CHECK(cudaMemcpy(dx, x16.data(), x16.size() * 2, cudaMemcpyHostToDevice));
  context->enqueue({{in.name, {dx, in.shape, ios::DataType::kFloat16, ios::DeviceKind::kCuda}}},
                   {{out.name, {dy, out.shape, ios::DataType::kFloat16, ios::DeviceKind::kCuda}}},
                   nullptr);
  std::vector<uint16_t> y16(static_cast<size_t>(out.elements()));
  API_CUDA_CHECK(cudaMemcpy(y16.data(), dy, y16.size() * 2, cudaMemcpyDeviceToHost));
  std::vector<float> y(y16.size());
  for (size_t i = 0; i < y.size(); ++i) y[i] = ir::from_bits(y16[i], ir::ElementType::kFloat16);
  CHECK(y == expected);  // the same plan on the same values: the same bits
  API_CUDA_CHECK(cudaFree(dx));
  API_CUDA_CHECK(cudaFree(dy));
}

// A kernel that stores to address 8: an illegal address, CUDA's sticky error.
constexpr const char* kIllegalWritePtx = R"(
.version 7.0
.target sm_70
.address_size 64

.visible .entry ios_write_to_address_8()
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  mov.b32 %r1, 1;
  mov.b64 %rd1, 8;
  st.global.b32 [%rd1], %r1;
  ret;
}
)";

// Run alone, in a child process (below): it loses the process's CUDA context.
TEST_CASE_METHOD(ApiFixture, "engine API: a sticky error makes the engine unusable (child)",
                 "[.sticky-child]") {
  auto context = gpu.create_context();
  auto spare = gpu.create_context();
  cudaLibrary_t library = nullptr;
  API_CUDA_CHECK(
      cudaLibraryLoadData(&library, kIllegalWritePtx, nullptr, nullptr, 0, nullptr, nullptr, 0));
  cudaKernel_t kernel = nullptr;
  API_CUDA_CHECK(cudaLibraryGetKernel(&kernel, library, "ios_write_to_address_8"));
  API_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(1), dim3(1), nullptr,
                                  0, nullptr));
  // An illegal address (or, on some drivers, an unspecified launch failure):
  // sticky either way.
  const cudaError_t fault = cudaDeviceSynchronize();
  REQUIRE((fault == cudaErrorIllegalAddress || fault == cudaErrorLaunchFailure));
  const std::string fault_name = cudaGetErrorName(fault);
  const ios::TensorDesc& in = gpu.inputs().at(0);
  const ios::TensorMap inputs{{in.name, {in.shape, x1}}};
  // The first call meets the error itself: a sticky DeviceError, not an InternalError.
  try {
    context->run(inputs);
    FAIL("run() after an illegal address succeeded");
  } catch (const ios::DeviceError& e) {
    CHECK(e.sticky());
    CHECK(e.exit_code() == ios::ExitCode::kDevice);
    CHECK_THAT(e.what(), Catch::Contains(fault_name));
  }
  // Every later call, of any context of the engine, says the engine is unusable.
  for (int attempt = 0; attempt < 2; ++attempt) {
    CHECK_THROWS_WITH(context->run(inputs), Catch::StartsWith("this engine is unusable"));
    CHECK_THROWS_WITH(spare->run(inputs), Catch::StartsWith("this engine is unusable"));
    CHECK_THROWS_WITH(gpu.create_context(), Catch::StartsWith("this engine is unusable"));
  }
  try {
    spare->run(inputs);
  } catch (const ios::DeviceError& e) {
    CHECK(e.sticky());
    CHECK_THAT(e.what(), Catch::Contains(fault_name));  // the first error, quoted
  }
}

TEST_CASE("engine API: a sticky error makes the engine unusable", "[gpu][api]") {
  // The case above runs in a process of its own: after an illegal address
  // nothing in the process can use CUDA, the other test cases included.
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string command = "'" + self + "' '[sticky-child]' >&2";
  const int status = std::system(command.c_str());
  REQUIRE(status != -1);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

// Weights once, many batch sizes: an engine of two schedules (batch 1 and
// 2) and three contexts holds one weight buffer, counted by the engine's
// allocator and seen by the driver (cudaMemGetInfo, this process's device
// memory) as once, not once per batch size or context; each context holds
// an arena per batch size; each call runs the schedule of its inputs' batch.
TEST_CASE("engine API: three contexts and two batch sizes hold the weights once on the GPU",
          "[gpu][api]") {
  auto schedule_for = [](int64_t batch) {
    ios::OptimizeOptions options;
    options.batch = batch;
    options.cost = "simulated";
    // No merged convolution: their assembled weights differ between the
    // batch sizes' schedules, the model's own do not.
    options.scheduler = "sequential";
    return ios::Schedule::optimize(api_model(), options);
  };
  const ios::Schedule one = schedule_for(1), two = schedule_for(2);
  const ios::EngineOptions options = ApiFixture::cuda_options();
  auto free_bytes = [] {
    API_CUDA_CHECK(cudaDeviceSynchronize());
    size_t free = 0, total = 0;
    API_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return static_cast<int64_t>(free);
  };
  // The driver allocates in pages (2 MiB) and cuDNN loads its kernels on
  // first use: an engine and a context of each batch made and run first, so
  // that what follows measures the engine's own memory.
  int64_t single_weights = 0;
  std::vector<float> y_one, y_two;
  const ios::TensorDesc in_one = [&] {
    const ios::Engine warm_one(api_model(), one, options), warm_two(api_model(), two, options);
    single_weights = warm_one.allocations().weights.bytes;
    CHECK(warm_two.allocations().weights.bytes == single_weights);
    CHECK(warm_one.allocations().weights.allocations == 1);
    const ios::TensorDesc& a = warm_one.inputs().at(0);
    const ios::TensorDesc& b = warm_two.inputs().at(0);
    y_one = warm_one.create_context()
                ->run({{a.name, api_input(a, 1)}})
                .at(warm_one.outputs().at(0).name)
                .data;
    y_two = warm_two.create_context()
                ->run({{b.name, api_input(b, 2)}})
                .at(warm_two.outputs().at(0).name)
                .data;
    return a;
  }();
  REQUIRE(single_weights > 0);
  constexpr int64_t kPage = int64_t{2} << 20;
  auto pages = [&](int64_t bytes) { return (bytes + kPage - 1) / kPage * kPage; };

  const int64_t before = free_bytes();
  const ios::Engine engine(api_model(), std::vector<ios::Schedule>{one, two}, options);
  const int64_t after_engine = free_bytes();
  const ios::Allocations held = engine.allocations();
  CHECK(held.weights.allocations == 1);
  CHECK(held.weights.bytes == single_weights);  // once for both batch sizes (cudaMalloc'd size)
  CHECK(held.activations.allocations == 0);     // the engine builds no context of its own
  // The driver's figure: the weights once (twice would be a page or more beyond).
  INFO("engine: the driver saw " << before - after_engine << " bytes, weights " << single_weights);
  CHECK(before - after_engine >= single_weights);
  CHECK(before - after_engine <= pages(single_weights) + kPage);
  {
    std::vector<std::unique_ptr<ios::ExecutionContext>> contexts;
    for (int c = 0; c < 3; ++c) contexts.push_back(engine.create_context());
    const int64_t after_contexts = free_bytes();
    const ios::Allocations now = engine.allocations();
    CHECK(now.weights.allocations == 1);
    CHECK(now.weights.bytes == single_weights);
    CHECK(now.activations.allocations == 6);  // each context, each batch size
    // The driver saw at least what the engine counts for the contexts (it
    // also holds their streams, handles and graphs, which are not counted).
    INFO("contexts: the driver saw " << after_engine - after_contexts << " bytes, counted "
                                     << now.activations.bytes + now.workspaces.bytes);
    CHECK(after_engine - after_contexts >= now.activations.bytes + now.workspaces.bytes);
    const ios::TensorDesc& b = engine.inputs(2).at(0);
    const std::string out = engine.outputs().at(0).name;
    for (auto& context : contexts) {
      require_close(context->run({{b.name, api_input(b, 2)}}).at(out).data, y_two, "batch 2");
      require_close(context->run({{in_one.name, api_input(in_one, 1)}}).at(out).data, y_one,
                    "batch 1");
    }
  }
  CHECK(engine.allocations().activations.allocations == 0);
  CHECK(engine.allocations().weights.bytes == single_weights);
}

#endif  // IOS_HAVE_CUDA

}  // namespace
}  // namespace ios::gputest
