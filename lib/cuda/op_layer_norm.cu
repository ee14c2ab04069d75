// LayerNormalization's kernel (op_layer_norm.cpp declares its launcher and
// builds its launch): one block per row of the normalized dims, two passes
// over the row for the mean and the variance, a third writes the output, all
// in float. x and y are stored in T (float, __half, __nv_bfloat16), scale
// and bias in their own types.
#include <cstdint>

#include <cuda_runtime_api.h>

#include "cuda/element_io.cuh"

namespace ios::cuda::kernels {
namespace {

constexpr int kMaxThreads = 256;

// The sum of v over the block (blockDim.x a multiple of 32, at most 1024),
// returned to every thread; `scratch` holds 32 floats.
__device__ float block_sum(float v, float* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  __syncthreads();  // scratch may still be read from the previous sum
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const int warps = static_cast<int>(blockDim.x / 32);
  float total = 0.0f;
  for (int w = 0; w < warps; ++w) total += scratch[w];
  return total;
}

// A grid-stride loop over rows, one block at a time.
template <typename T>
__global__ void layer_norm_kernel(const T* __restrict__ xs, const void* __restrict__ scale,
                                  const void* __restrict__ bias, ir::ElementType param_type, T* __restrict__ ys,
                                  int64_t rows, int64_t cols, float epsilon) {
  __shared__ float scratch[32];
  const float inv_cols = 1.0f / static_cast<float>(cols);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x = xs + row * cols;
    T* y = ys + row * cols;
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) sum += to_float(x[j]);
    const float mean = block_sum(sum, scratch) * inv_cols;
    float squares = 0.0f;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const float d = to_float(x[j]) - mean;
      squares += d * d;
    }
    const float inv_std = rsqrtf(block_sum(squares, scratch) * inv_cols + epsilon);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const float v = (to_float(x[j]) - mean) * inv_std * load_as_float(scale, param_type, j);
      y[j] = from_float<T>(bias != nullptr ? v + load_as_float(bias, param_type, j) : v);
    }
  }
}

}  // namespace

cudaError_t layer_norm(const void* x, const void* scale, const void* bias, void* y, ir::ElementType type,
                       ir::ElementType param_type, int64_t rows, int64_t cols, float epsilon,
                       cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  // Whole warps, as few as cover a short row, at most kMaxThreads.
  const int64_t warps = (cols + 31) / 32;
  const int threads = static_cast<int>(warps * 32 < kMaxThreads ? warps * 32 : kMaxThreads);
  const int64_t blocks = rows < 65535 ? rows : 65535;
  dispatch_type(type, [&](auto t) {
    using T = typename decltype(t)::type;
    layer_norm_kernel<T><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(
        static_cast<const T*>(x), scale, bias, param_type, static_cast<T*>(y), rows, cols, epsilon);
  });
  return cudaGetLastError();
}

}  // namespace ios::cuda::kernels
