// One macro family for every CUDA runtime, cuDNN and cuBLAS call (ONNX Runtime's
// CUDA_CALL / CUDNN_CALL): a failure throws, naming the call, the file and
// the line. "No device" conditions (no GPU, driver missing or too old) throw
// NoDeviceError (exit code 3); everything else InternalError.
//
// Destructors use the _NOTHROW variants: they log and carry on.
#pragma once

#include <cuda_runtime_api.h>
#include <cublasLt.h>
#include <cudnn.h>

namespace ios::cuda::detail {

[[noreturn]] void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line);
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

}  // namespace ios::cuda::detail

#define IOS_CUDA_CALL(expr)                                                          \
  do {                                                                               \
    const cudaError_t ios_cuda_status_ = (expr);                                     \
    if (ios_cuda_status_ != cudaSuccess) {                                           \
      ::ios::cuda::detail::throw_cuda_error(ios_cuda_status_, #expr, __FILE__, __LINE__); \
    }                                                                                \
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
