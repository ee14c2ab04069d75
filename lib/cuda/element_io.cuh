// Device-side reads and writes of the element types (ir/element_type.h) for
// the backend's own kernels: every value is read into float, computed in
// float and stored rounded to nearest even into its tensor's type (the
// conversions of cuda_fp16.h and cuda_bf16.h, which round as
// ir::round_to does). Included by .cu files only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "ir/element_type.h"

namespace ios::cuda::kernels {

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// p[i] of a tensor stored in `type`, as float (for operands whose type the
// kernel is not templated on: the element-wise chain's operands).
__device__ __forceinline__ float load_as_float(const void* p, ir::ElementType type, int64_t i) {
  switch (type) {
    case ir::ElementType::kFloat32: return static_cast<const float*>(p)[i];
    case ir::ElementType::kFloat16: return __half2float(static_cast<const __half*>(p)[i]);
    case ir::ElementType::kBFloat16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  }
  return 0.0f;  // not reached: every type is a case
}

template <typename T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<T>{}) with the storage type of `type` (host side: the
// launchers pick the kernel's instantiation).
template <typename F>
void dispatch_type(ir::ElementType type, F&& f) {
  switch (type) {
    case ir::ElementType::kFloat32: f(TypeTag<float>{}); break;
    case ir::ElementType::kFloat16: f(TypeTag<__half>{}); break;
    case ir::ElementType::kBFloat16: f(TypeTag<__nv_bfloat16>{}); break;
  }
}

}  // namespace ios::cuda::kernels
