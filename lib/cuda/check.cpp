#include "cuda/check.h"

#include <string>

#include "core/error.h"
#include "core/log.h"
#include "cuda/cublaslt.h"

namespace ios::cuda::detail {
namespace {

// cuBLAS's name for a status, or its number when cuBLASLt is not loaded.
std::string cublas_status_text(cublasStatus_t status) {
  const CublasLt* lt = load_cublaslt();
  return lt != nullptr ? lt->cublasLtGetStatusString(status) : fmt::format("cuBLAS status {}", static_cast<int>(status));
}

std::string short_file(const char* file) {
  const std::string path(file);
  const auto lib = path.rfind("lib/");
  return lib == std::string::npos ? path : path.substr(lib);
}

}  // namespace

bool is_no_device_error(cudaError_t error) {
  return error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver ||
         error == cudaErrorInvalidDevice || error == cudaErrorDevicesUnavailable ||
         error == cudaErrorStubLibrary || error == cudaErrorSystemDriverMismatch ||
         error == cudaErrorCompatNotSupportedOnDevice;
}

void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line) {
  const std::string what = fmt::format("{} failed: {} ({})", call, cudaGetErrorName(error),
                                       cudaGetErrorString(error));
  if (is_no_device_error(error)) throw NoDeviceError("no CUDA device: " + what);
  throw InternalError(fmt::format("CUDA error at {}:{}: {}", short_file(file), line, what));
}

void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line) {
  throw InternalError(fmt::format("cuDNN error at {}:{}: {} failed: {}", short_file(file), line, call,
                                  cudnnGetErrorString(status)));
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw InternalError(fmt::format("cuBLAS error at {}:{}: {} failed: {}", short_file(file), line, call,
                                  cublas_status_text(status)));
}

void log_cuda_error(cudaError_t error, const char* call, const char* file, int line) noexcept {
  try {
    logger("cuda")->warn("{}:{}: {} failed: {}", short_file(file), line, call, cudaGetErrorName(error));
  } catch (...) {  // logging must not throw out of a destructor
  }
}

void log_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line) noexcept {
  try {
    logger("cuda")->warn("{}:{}: {} failed: {}", short_file(file), line, call, cudnnGetErrorString(status));
  } catch (...) {
  }
}

void log_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) noexcept {
  try {
    logger("cuda")->warn("{}:{}: {} failed: {}", short_file(file), line, call, cublas_status_text(status));
  } catch (...) {
  }
}

cudaError_t clear_failed_attempt() noexcept { return cudaGetLastError(); }

}  // namespace ios::cuda::detail
