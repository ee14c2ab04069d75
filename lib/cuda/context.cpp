#include "cuda/context.h"

#include <fmt/format.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "core/error.h"
#include "core/log.h"
#include "cuda/check.h"
#include "cuda/cublaslt.h"
#include "cuda/version.h"

namespace ios::cuda {
namespace {

std::string version_text(int v, int major_div, int minor_div) {
  return fmt::format("{}.{}", v / major_div, (v % major_div) / minor_div);
}

// The kernel driver's version ("570.86.15") from /proc; empty when unreadable.
std::string kernel_driver_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  std::istringstream words(line);
  std::string word, previous;
  while (words >> word) {
    if (previous == "Module" && !word.empty() && std::isdigit(static_cast<unsigned char>(word[0]))) return word;
    previous = word;
  }
  return "";
}

// The versions in this process (version.h).
RuntimeVersions runtime_versions() {
  RuntimeVersions v;
  if (cudaDriverGetVersion(&v.driver) != cudaSuccess) {
    cudaGetLastError();  // probing is not an error
    v.driver = 0;
  }
  v.runtime = CUDART_VERSION;
  v.cudnn = cudnnGetVersion();
  v.cudnn_built_major = CUDNN_MAJOR;
  v.cudnn_cudart = cudnnGetCudartVersion();
  return v;
}

// Why the device is unusable, or empty when it is usable. `count_out`: what
// cudaGetDeviceCount reported, -1 when it failed or was not asked.
std::string check_device(int ordinal, DeviceSummary* out, int* count_out = nullptr) {
  if (count_out != nullptr) *count_out = -1;
  // Versions first, before any work: a driver too old or a cuDNN for another
  // CUDA fails later in ways that name neither. Without a driver (0) the
  // device count below says there is no device.
  const RuntimeVersions versions = runtime_versions();
  if (versions.driver != 0) {
    const std::string problem = version_problem(versions);
    if (!problem.empty()) return problem;
  }
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (count_out != nullptr) *count_out = err == cudaSuccess ? count : err == cudaErrorNoDevice ? 0 : -1;
  if (err != cudaSuccess) {
    cudaGetLastError();  // clear it: probing is not an error
    return fmt::format("cudaGetDeviceCount failed: {} ({})", cudaGetErrorName(err), cudaGetErrorString(err));
  }
  if (count == 0) return "no CUDA device is present";
  if (ordinal < 0 || ordinal >= count) return fmt::format("device {} requested but {} present", ordinal, count);
  cudaDeviceProp prop{};
  err = cudaGetDeviceProperties(&prop, ordinal);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return fmt::format("cudaGetDeviceProperties failed: {}", cudaGetErrorName(err));
  }
  if (prop.major < 7) {
    return fmt::format("{} has compute capability {}.{}; ios needs 7.0 or newer", prop.name, prop.major, prop.minor);
  }
  const int driver = versions.driver;
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  const size_t cudnn = versions.cudnn;
  if (out != nullptr) {
    out->ordinal = ordinal;
    out->name = prop.name;
    out->compute_capability = fmt::format("{}.{}", prop.major, prop.minor);
    const std::string kernel = kernel_driver_version();
    out->driver = kernel.empty() ? "cuda " + version_text(driver, 1000, 10) : kernel;
    out->runtime = version_text(runtime, 1000, 10);
    out->cudnn = fmt::format("{}.{}.{}", cudnn / 10000, (cudnn % 10000) / 100, cudnn % 100);
    out->sm_count = prop.multiProcessorCount;
    out->memory_bytes = prop.totalGlobalMem;
  }
  return "";
}

}  // namespace

std::optional<DeviceSummary> probe_device(int ordinal) {
  DeviceSummary summary;
  const std::string why = check_device(ordinal, &summary);
  if (!why.empty()) {
    logger("cuda")->debug("no usable CUDA device: {}", why);
    return std::nullopt;
  }
  return summary;
}

DeviceSummary require_device(int ordinal) {
  DeviceSummary summary;
  const std::string why = check_device(ordinal, &summary);
  if (!why.empty()) throw NoDeviceError("no CUDA device: " + why);
  return summary;
}

DeviceStatus device_status(int ordinal) {
  DeviceStatus status;
  DeviceSummary summary;
  int count = -1;
  status.reason = check_device(ordinal, &summary, &count);
  std::error_code ec;
  const bool driver = std::filesystem::exists("/proc/driver/nvidia/version", ec) ||
                      std::filesystem::exists("/dev/nvidiactl", ec);
  status.state = classify_device(count, driver, status.reason);
  if (status.state == DeviceState::kUsable) status.summary = summary;
  return status;
}

DeviceSummary init_device(int ordinal) {
  DeviceSummary summary = require_device(ordinal);
  IOS_CUDA_CALL(cudaSetDevice(ordinal));
  return summary;
}

std::string device_key(int ordinal) {
  cudaDeviceProp prop{};
  IOS_CUDA_CALL(cudaGetDeviceProperties(&prop, ordinal));
  std::string uuid;
  for (char c : prop.uuid.bytes) uuid += fmt::format("{:02x}", static_cast<unsigned char>(c));
  return fmt::format("{}|{}.{}|{}", prop.name, prop.major, prop.minor, uuid);
}

Context::Context(int ordinal, ir::MathMode math, size_t workspace_limit, exec::ConvKernels conv_kernels)
    : ordinal_(ordinal), math_(math), workspace_limit_(workspace_limit), conv_kernels_(conv_kernels) {
  device_ = init_device(ordinal);
  key_ = device_key(ordinal);
  ensure_streams(1);
}

std::string Context::cublas_version() const {
  const CublasLt* lt = load_cublaslt();  // loaded on first use, as for matrix products
  if (lt == nullptr) return "none";
  const size_t v = lt->cublasLtGetVersion();  // major * 10000 + minor * 100 + patch
  return fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100);
}

void Context::ensure_streams(int n) {
  IOS_CUDA_CALL(cudaSetDevice(ordinal_));
  while (static_cast<int>(streams_.size()) < n) {
    Stream stream = make_stream();
    handles_.push_back(make_cudnn(stream.get()));
    streams_.push_back(std::move(stream));
    workspaces_.emplace_back();
  }
}

cublasLtHandle_t Context::cublaslt() {
  if (!cublaslt_) {
    IOS_CUDA_CALL(cudaSetDevice(ordinal_));
    cublaslt_ = make_cublaslt();
  }
  return cublaslt_.get();
}

void Context::ensure_workspace(int i, size_t bytes) {
  DeviceBuffer& ws = workspaces_.at(static_cast<size_t>(i));
  if (ws.bytes() >= bytes) return;
  ws.reset();
  ws = DeviceBuffer(bytes);
}

size_t Context::total_workspace_bytes() const {
  size_t total = 0;
  for (const DeviceBuffer& ws : workspaces_) total += ws.bytes();
  return total;
}

void* Context::scratch(int slot, size_t bytes) {
  if (scratch_.size() <= static_cast<size_t>(slot)) scratch_.resize(static_cast<size_t>(slot) + 1);
  DeviceBuffer& buf = scratch_[static_cast<size_t>(slot)];
  if (buf.bytes() < bytes) {
    buf.reset();
    buf = DeviceBuffer(bytes);
    IOS_CUDA_CALL(cudaMemsetAsync(buf.get(), 0, bytes, stream(0)));
    IOS_CUDA_CALL(cudaStreamSynchronize(stream(0)));
  }
  return buf.get();
}

void Context::release_scratch() { scratch_.clear(); }

}  // namespace ios::cuda
