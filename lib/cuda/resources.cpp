#include "cuda/resources.h"

#include "cuda/check.h"
#include "cuda/cublaslt.h"

namespace ios::cuda {

void StreamTraits::destroy(cudaStream_t h) noexcept { IOS_CUDA_CALL_NOTHROW(cudaStreamDestroy(h)); }
void EventTraits::destroy(cudaEvent_t h) noexcept { IOS_CUDA_CALL_NOTHROW(cudaEventDestroy(h)); }
void GraphTraits::destroy(cudaGraph_t h) noexcept { IOS_CUDA_CALL_NOTHROW(cudaGraphDestroy(h)); }
void GraphExecTraits::destroy(cudaGraphExec_t h) noexcept { IOS_CUDA_CALL_NOTHROW(cudaGraphExecDestroy(h)); }
void CudnnTraits::destroy(cudnnHandle_t h) noexcept { IOS_CUDNN_CALL_NOTHROW(cudnnDestroy(h)); }
void CublasLtTraits::destroy(cublasLtHandle_t h) noexcept {
  // A handle exists only once cuBLASLt was loaded.
  if (const CublasLt* lt = load_cublaslt()) IOS_CUBLAS_CALL_NOTHROW(lt->cublasLtDestroy(h));
}
void TensorDescTraits::destroy(cudnnTensorDescriptor_t h) noexcept {
  IOS_CUDNN_CALL_NOTHROW(cudnnDestroyTensorDescriptor(h));
}
void FilterDescTraits::destroy(cudnnFilterDescriptor_t h) noexcept {
  IOS_CUDNN_CALL_NOTHROW(cudnnDestroyFilterDescriptor(h));
}
void ConvDescTraits::destroy(cudnnConvolutionDescriptor_t h) noexcept {
  IOS_CUDNN_CALL_NOTHROW(cudnnDestroyConvolutionDescriptor(h));
}
void PoolDescTraits::destroy(cudnnPoolingDescriptor_t h) noexcept {
  IOS_CUDNN_CALL_NOTHROW(cudnnDestroyPoolingDescriptor(h));
}
void ActivationDescTraits::destroy(cudnnActivationDescriptor_t h) noexcept {
  IOS_CUDNN_CALL_NOTHROW(cudnnDestroyActivationDescriptor(h));
}

Stream make_stream() {
  cudaStream_t h = nullptr;
  IOS_CUDA_CALL(cudaStreamCreateWithFlags(&h, cudaStreamNonBlocking));
  return Stream(h);
}

Event make_event(bool timing) {
  cudaEvent_t h = nullptr;
  IOS_CUDA_CALL(cudaEventCreateWithFlags(&h, timing ? cudaEventDefault : cudaEventDisableTiming));
  return Event(h);
}

CublasLtHandle make_cublaslt() {
  cublasLtHandle_t h = nullptr;
  IOS_CUBLAS_CALL(cublaslt().cublasLtCreate(&h));
  return CublasLtHandle(h);
}

CudnnHandle make_cudnn(cudaStream_t stream) {
  cudnnHandle_t h = nullptr;
  IOS_CUDNN_CALL(cudnnCreate(&h));
  CudnnHandle handle(h);
  IOS_CUDNN_CALL(cudnnSetStream(h, stream));
  return handle;
}

TensorDesc make_tensor_desc() {
  cudnnTensorDescriptor_t h = nullptr;
  IOS_CUDNN_CALL(cudnnCreateTensorDescriptor(&h));
  return TensorDesc(h);
}

FilterDesc make_filter_desc() {
  cudnnFilterDescriptor_t h = nullptr;
  IOS_CUDNN_CALL(cudnnCreateFilterDescriptor(&h));
  return FilterDesc(h);
}

ConvDesc make_conv_desc() {
  cudnnConvolutionDescriptor_t h = nullptr;
  IOS_CUDNN_CALL(cudnnCreateConvolutionDescriptor(&h));
  return ConvDesc(h);
}

PoolDesc make_pool_desc() {
  cudnnPoolingDescriptor_t h = nullptr;
  IOS_CUDNN_CALL(cudnnCreatePoolingDescriptor(&h));
  return PoolDesc(h);
}

ActivationDesc make_activation_desc() {
  cudnnActivationDescriptor_t h = nullptr;
  IOS_CUDNN_CALL(cudnnCreateActivationDescriptor(&h));
  return ActivationDesc(h);
}

DeviceBuffer::DeviceBuffer(size_t bytes) {
  if (bytes == 0) return;
  IOS_CUDA_ALLOC(cudaMalloc(&ptr_, bytes), bytes);
  bytes_ = bytes;
}

void DeviceBuffer::reset() noexcept {
  if (ptr_ != nullptr) IOS_CUDA_CALL_NOTHROW(cudaFree(ptr_));
  ptr_ = nullptr;
  bytes_ = 0;
}

}  // namespace ios::cuda
