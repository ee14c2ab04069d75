// RAII owners for every CUDA and cuDNN resource the backend creates:
// non-copyable, movable, and destructors that never throw (a failed destroy
// is logged). The make_* functions create with the settings the engine
// relies on (streams non-blocking, synchronization events without timing).
#pragma once

#include <cuda_runtime_api.h>
#include <cublasLt.h>
#include <cudnn.h>

#include <cstddef>
#include <utility>

namespace ios::cuda {

template <typename Handle, typename Traits>
class Unique {
 public:
  Unique() = default;
  explicit Unique(Handle handle) : handle_(handle) {}
  ~Unique() { reset(); }
  Unique(const Unique&) = delete;
  Unique& operator=(const Unique&) = delete;
  Unique(Unique&& other) noexcept : handle_(std::exchange(other.handle_, Handle{})) {}
  Unique& operator=(Unique&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, Handle{});
    }
    return *this;
  }
  Handle get() const { return handle_; }
  explicit operator bool() const { return handle_ != Handle{}; }
  void reset() noexcept {
    if (handle_ != Handle{}) Traits::destroy(handle_);
    handle_ = Handle{};
  }

 private:
  Handle handle_{};
};

struct StreamTraits { static void destroy(cudaStream_t h) noexcept; };
struct EventTraits { static void destroy(cudaEvent_t h) noexcept; };
struct GraphTraits { static void destroy(cudaGraph_t h) noexcept; };
struct GraphExecTraits { static void destroy(cudaGraphExec_t h) noexcept; };
struct CudnnTraits { static void destroy(cudnnHandle_t h) noexcept; };
struct CublasLtTraits { static void destroy(cublasLtHandle_t h) noexcept; };
struct TensorDescTraits { static void destroy(cudnnTensorDescriptor_t h) noexcept; };
struct FilterDescTraits { static void destroy(cudnnFilterDescriptor_t h) noexcept; };
struct ConvDescTraits { static void destroy(cudnnConvolutionDescriptor_t h) noexcept; };
struct PoolDescTraits { static void destroy(cudnnPoolingDescriptor_t h) noexcept; };
struct ActivationDescTraits { static void destroy(cudnnActivationDescriptor_t h) noexcept; };

using Stream = Unique<cudaStream_t, StreamTraits>;
using Event = Unique<cudaEvent_t, EventTraits>;
using Graph = Unique<cudaGraph_t, GraphTraits>;
using GraphExec = Unique<cudaGraphExec_t, GraphExecTraits>;
using CudnnHandle = Unique<cudnnHandle_t, CudnnTraits>;
using CublasLtHandle = Unique<cublasLtHandle_t, CublasLtTraits>;
using TensorDesc = Unique<cudnnTensorDescriptor_t, TensorDescTraits>;
using FilterDesc = Unique<cudnnFilterDescriptor_t, FilterDescTraits>;
using ConvDesc = Unique<cudnnConvolutionDescriptor_t, ConvDescTraits>;
using PoolDesc = Unique<cudnnPoolingDescriptor_t, PoolDescTraits>;
using ActivationDesc = Unique<cudnnActivationDescriptor_t, ActivationDescTraits>;

Stream make_stream();                       // cudaStreamNonBlocking
Event make_event(bool timing = false);      // cudaEventDisableTiming unless timing
CudnnHandle make_cudnn(cudaStream_t stream);  // bound to `stream`
CublasLtHandle make_cublaslt();             // streams are passed per call
TensorDesc make_tensor_desc();
FilterDesc make_filter_desc();
ConvDesc make_conv_desc();
PoolDesc make_pool_desc();
ActivationDesc make_activation_desc();

// Device memory: cudaMalloc'd, freed in the destructor.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);  // zero bytes: no allocation
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      ptr_ = std::exchange(other.ptr_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  void* get() const { return ptr_; }
  float* floats() const { return static_cast<float*>(ptr_); }
  size_t bytes() const { return bytes_; }
  void reset() noexcept;

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace ios::cuda
