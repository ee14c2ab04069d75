// Matrix products (Gemm, MatMul, merged products): cuBLASLt wherever it can
// serve the product's layout, the backend's own tiled kernel (kernels::gemm)
// only where it cannot. The choice is a plain function of the product's
// strides and scalars (plan_gemm, host-tested); the cuBLASLt algorithm is
// cuBLASLt's heuristic for the shape, the precision and the pointers'
// alignment, and is run once on scratch memory before it is kept.
//
// cuBLASLt is column-major; a row-major Y[m, n] = A[m, k] B[k, n] is the
// column-major Y^T[n, m] = B^T[n, k] A^T[k, m]. So cuBLASLt's A is the
// product's B and its B the product's A: a row-major operand (column stride
// 1) is its own transpose in column-major order, untransposed; a transposed
// one (row stride 1, as PyTorch exports Linear's weight) is a column-major
// matrix that cuBLASLt transposes.
#pragma once

#include <cublasLt.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "cuda/context.h"
#include "cuda/kernels.h"

namespace ios::cuda {

// One column-major matrix operand as cuBLASLt sees it.
struct LtMatrix {
  bool transpose = false;  // cuBLASLt applies op T
  int64_t rows = 0, cols = 0, ld = 0;  // as stored (before op)
  int64_t batch_stride = 0;            // 0: the same matrix for every batch
};

// How a product runs: on cuBLASLt (with its layouts) or on the own kernel
// (with why, for plans and logs).
struct GemmPlan {
  bool cublas = false;
  std::string own_reason;  // why the own kernel; empty for cuBLASLt
  LtMatrix a, b;           // cuBLASLt's A (the product's B) and B (the product's A)
  LtMatrix c, d;           // c used when c_matrix
  bool c_matrix = false;   // beta * C added as a full matrix
  bool bias = false;       // C broadcast over rows, beta == 1: cuBLASLt's bias epilogue
  int batch = 1;
};

// The plan for `p` (pointers are ignored). Pure: no device needed.
GemmPlan plan_gemm(const kernels::GemmParams& p);

// What prepare() chose for a product, shared by its launches.
struct GemmChoice {
  GemmPlan plan;
  cublasLtHandle_t handle = nullptr;  // the Context's
  bool tf32 = false;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
  // Byte alignments of the product's A, B, C and Y pointers the algorithm
  // was chosen for (a launch checks its pointers against them).
  uint32_t align_a = 4, align_b = 4, align_c = 4, align_y = 4;
};

// The byte alignment the pointer at element offset `offset` of a
// kBufferAlignment-aligned buffer of `type` has (power of two, at most 256).
uint32_t gemm_alignment(int64_t element_offset, ir::ElementType type = ir::ElementType::kFloat32);

// Chooses the product's path on ctx's device: cuBLASLt's heuristic under
// the precision (kTf32: TF32 tensor cores, kFp32: strict FP32), tried once
// on scratch memory, else the own kernel. `label` names it in logs.
GemmChoice choose_gemm(Context& ctx, const kernels::GemmParams& p, uint32_t align_a, uint32_t align_b,
                       uint32_t align_c, uint32_t align_y, const std::string& label);

// One product on cuBLASLt (choice.plan.cublas): its descriptors, made once
// for the pointers of `p` (bias), run with a workspace of at least
// choice.workspace bytes.
class LtProduct {
 public:
  LtProduct(const GemmChoice& choice, const kernels::GemmParams& p);
  ~LtProduct();
  LtProduct(const LtProduct&) = delete;
  LtProduct& operator=(const LtProduct&) = delete;
  cublasStatus_t run(const kernels::GemmParams& p, void* workspace, cudaStream_t stream) const;
  cublasLtMatmulDesc_t descriptor() const;
  cublasLtMatrixLayout_t layout(int i) const;  // cuBLASLt's A, B, C, D

 private:
  struct Descriptors;
  GemmChoice choice_;
  std::unique_ptr<Descriptors> d_;
};

// The cuBLASLt workspace a product may use, per stream (shared with cuDNN's:
// operations on one stream run one after another).
constexpr size_t kGemmWorkspaceLimit = size_t{32} << 20;

}  // namespace ios::cuda
