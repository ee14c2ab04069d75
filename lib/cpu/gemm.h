// Single-precision matrix multiply for the CPU reference backend.
//
// A cache-blocked GEMM in the GotoBLAS/BLIS style, written plainly: B is
// packed into column panels and A into row panels that fit the caches, and a
// 6x8 register-tiled micro-kernel (GCC/Clang vector extensions, so it compiles
// to SSE on any x86-64 and NEON on ARM) accumulates in float. Convolutions
// (im2col or 1x1) and Gemm/MatMul nodes all come here.
#pragma once

#include <cstdint>

namespace ios::cpu {

// A matrix operand: element (i, j) is at data[i * row_stride + j * col_stride],
// so a transposed operand is the same memory with the strides swapped.
struct MatrixRef {
  const float* data = nullptr;
  int64_t row_stride = 0;
  int64_t col_stride = 1;
  float at(int64_t i, int64_t j) const { return data[i * row_stride + j * col_stride]; }
};

// The default length of the K blocks: each block's products are summed in
// registers, in order, and the block sum is then added to C.
inline constexpr int64_t kDefaultKBlock = 256;

// C[m x n] += A[m x k] * B[k x n], where C is row-major with leading dimension
// ldc. Uses up to `threads` threads (split along the larger of m and n; the
// result does not depend on the split). `k_block` sets where the K blocks
// start (multiples of it), which fixes the rounding of every sum: callers
// that must reproduce another GEMM's sums bit for bit choose it (conv2d).
void gemm_accumulate(int64_t m, int64_t n, int64_t k, MatrixRef a, MatrixRef b, float* c, int64_t ldc,
                     int threads, int64_t k_block = kDefaultKBlock);

}  // namespace ios::cpu
