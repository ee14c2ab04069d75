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

bool is_sticky_error(cudaError_t error) {
  switch (error) {
    case cudaErrorECCUncorrectable:
    case cudaErrorNvlinkUncorrectable:
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorTensorMemoryLeak:
    case cudaErrorMpsClientTerminated:
      return true;
    default:
      return false;
  }
}

bool is_out_of_memory(cudaError_t error) { return error == cudaErrorMemoryAllocation; }

bool is_out_of_memory(cudnnStatus_t status) {
  return status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED ||
         status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
}

bool is_out_of_memory(cublasStatus_t status) { return status == CUBLAS_STATUS_ALLOC_FAILED; }

namespace {

constexpr const char* kOutOfMemoryHint =
    "; lower the batch size, create fewer execution contexts, or free the device memory other "
    "processes hold";
constexpr const char* kStickyNote =
    "; the CUDA context is lost (a sticky error): every later CUDA call of this process fails, "
    "only a new process can use the GPU again";

std::string bytes_text(size_t bytes) {
  if (bytes < (size_t{1} << 20)) return fmt::format("{} bytes", bytes);
  return fmt::format("{} bytes, {:.1f} MiB", bytes, static_cast<double>(bytes) / (1 << 20));
}

// A cuDNN or cuBLAS call fails with its own status where a kernel it
// launched met a sticky CUDA error; the runtime still holds that error.
bool sticky_error_pending() noexcept { return is_sticky_error(cudaPeekAtLastError()); }

[[noreturn]] void throw_library_error(const std::string& where, bool out_of_memory) {
  if (out_of_memory) throw OutOfMemoryError("out of memory: " + where + kOutOfMemoryHint, 0);
  if (sticky_error_pending()) throw DeviceError(where + kStickyNote, true);
  throw DeviceError(where);
}

}  // namespace

void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line,
                      size_t bytes) {
  const std::string what = fmt::format("{} failed: {} ({})", call, cudaGetErrorName(error),
                                       cudaGetErrorString(error));
  if (is_no_device_error(error)) throw NoDeviceError("no CUDA device: " + what);
  const std::string where = fmt::format("CUDA error at {}:{}: {}", short_file(file), line, what);
  if (is_out_of_memory(error)) {
    const std::string asked = bytes > 0 ? fmt::format(" (asked for {})", bytes_text(bytes)) : "";
    throw OutOfMemoryError("out of memory: " + where + asked + kOutOfMemoryHint, bytes);
  }
  if (is_sticky_error(error)) throw DeviceError(where + kStickyNote, true);
  throw DeviceError(where);
}

void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line) {
  throw_library_error(fmt::format("cuDNN error at {}:{}: {} failed: {}", short_file(file), line,
                                  call, cudnnGetErrorString(status)),
                      is_out_of_memory(status));
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw_library_error(fmt::format("cuBLAS error at {}:{}: {} failed: {}", short_file(file), line,
                                  call, cublas_status_text(status)),
                      is_out_of_memory(status));
}

CurrentDevice::CurrentDevice() noexcept {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess) {
    saved_ = current;
  } else {
    clear_failed_attempt();  // no device: nothing to restore, and no error left behind
  }
}

CurrentDevice::~CurrentDevice() {
  if (saved_ < 0) return;
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current == saved_) return;
  IOS_CUDA_CALL_NOTHROW(cudaSetDevice(saved_));
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
