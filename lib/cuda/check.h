// One macro family for every CUDA runtime, cuDNN and cuBLAS call (ONNX Runtime's
// CUDA_CALL / CUDNN_CALL): a failure throws, naming the call, the file and
// the line. The status decides the kind (include/ios/error.h): "no device"
// conditions (no GPU, driver missing or too old) throw NoDeviceError (exit
// code 3); a failed allocation OutOfMemoryError (exit 6) with the bytes asked
// where the call says them (IOS_CUDA_ALLOC); every other failure DeviceError
// (exit 5), sticky where CUDA documents that the context is lost. None is an
// InternalError: a status cannot tell a bug in ios from a failing device, and
// the message names the call either way.
//
// Destructors use the _NOTHROW variants: they log and carry on.
#pragma once

#include <cuda_runtime_api.h>
#include <cublasLt.h>
#include <cudnn.h>

#include <cstddef>

namespace ios::cuda::detail {

// `bytes`: what an allocation asked for (IOS_CUDA_ALLOC), 0 for other calls.
[[noreturn]] void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line,
                                   size_t bytes = 0);
[[noreturn]] void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line);
void log_cuda_error(cudaError_t error, const char* call, const char* file, int line) noexcept;
void log_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line) noexcept;
void log_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) noexcept;

// Clears the calling thread's last CUDA error after a failed attempt (a
// cuDNN algorithm or a fused call that was refused, a cuBLASLt trial): a
// refused call may leave a non-sticky launch error behind, which the next
// harmless IOS_CUDA_CALL would otherwise report as its own. Returns what
// was cleared (cudaSuccess when nothing was pending).
cudaError_t clear_failed_attempt() noexcept;

// True for the errors that mean "there is no usable device here".
bool is_no_device_error(cudaError_t error);

// True for the errors CUDA documents as sticky ("the process must be
// terminated and relaunched"): the context is lost, and every later call
// returns the same error.
bool is_sticky_error(cudaError_t error);

// True for the statuses of a failed allocation (of device memory, or of
// pinned host memory for cudaMallocHost).
bool is_out_of_memory(cudaError_t error);
bool is_out_of_memory(cudnnStatus_t status);
bool is_out_of_memory(cublasStatus_t status);

// Saves the calling thread's current device and restores it when the guard
// goes, if the code it guarded changed it (the engine API leaves the
// caller's device as it found it: its calls set the engine's own). Where no
// device could be read (none present), nothing is restored. Never throws
// from its destructor.
class CurrentDevice {
 public:
  CurrentDevice() noexcept;
  ~CurrentDevice();
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

 private:
  int saved_ = -1;
};

}  // namespace ios::cuda::detail

#define IOS_CUDA_CALL(expr)                                                          \
  do {                                                                               \
    const cudaError_t ios_cuda_status_ = (expr);                                     \
    if (ios_cuda_status_ != cudaSuccess) {                                           \
      ::ios::cuda::detail::throw_cuda_error(ios_cuda_status_, #expr, __FILE__, __LINE__); \
    }                                                                                \
  } while (false)

// An allocation of `bytes`: OutOfMemoryError says how many were asked for.
#define IOS_CUDA_ALLOC(expr, bytes)                                                          \
  do {                                                                                       \
    const cudaError_t ios_cuda_status_ = (expr);                                             \
    if (ios_cuda_status_ != cudaSuccess) {                                                   \
      ::ios::cuda::detail::throw_cuda_error(ios_cuda_status_, #expr, __FILE__, __LINE__, (bytes)); \
    }                                                                                        \
  } while (false)

#define IOS_CUDNN_CALL(expr)                                                          \
  do {                                                                                \
    const cudnnStatus_t ios_cudnn_status_ = (expr);                                   \
    if (ios_cudnn_status_ != CUDNN_STATUS_SUCCESS) {                                  \
      ::ios::cuda::detail::throw_cudnn_error(ios_cudnn_status_, #expr, __FILE__, __LINE__); \
    }                                                                                 \
  } while (false)

#define IOS_CUDA_CALL_NOTHROW(expr)                                                 \
  do {                                                                              \
    const cudaError_t ios_cuda_status_ = (expr);                                    \
    if (ios_cuda_status_ != cudaSuccess) {                                          \
      ::ios::cuda::detail::log_cuda_error(ios_cuda_status_, #expr, __FILE__, __LINE__); \
    }                                                                               \
  } while (false)

#define IOS_CUDNN_CALL_NOTHROW(expr)                                                 \
  do {                                                                               \
    const cudnnStatus_t ios_cudnn_status_ = (expr);                                  \
    if (ios_cudnn_status_ != CUDNN_STATUS_SUCCESS) {                                 \
      ::ios::cuda::detail::log_cudnn_error(ios_cudnn_status_, #expr, __FILE__, __LINE__); \
    }                                                                                \
  } while (false)

#define IOS_CUBLAS_CALL(expr)                                                          \
  do {                                                                                 \
    const cublasStatus_t ios_cublas_status_ = (expr);                                  \
    if (ios_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                                 \
      ::ios::cuda::detail::throw_cublas_error(ios_cublas_status_, #expr, __FILE__, __LINE__); \
    }                                                                                  \
  } while (false)

#define IOS_CUBLAS_CALL_NOTHROW(expr)                                                 \
  do {                                                                                \
    const cublasStatus_t ios_cublas_status_ = (expr);                                 \
    if (ios_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                                \
      ::ios::cuda::detail::log_cublas_error(ios_cublas_status_, #expr, __FILE__, __LINE__); \
    }                                                                                 \
  } while (false)
