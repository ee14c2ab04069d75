// The backend's own CUDA kernels, for the work cuDNN does not fuse or does
// not do: element-wise chains (bias, activations, residual adds, gating
// multiplies) in one pass, strided copies (slice, split, transpose, reshape,
// concat inputs that cannot be written in place), padding, pooling with
// asymmetric pads, ceil mode or dilation (and every 16-bit pooling), Resize,
// reductions, layer normalization, and the GEMM of the matrix products
// cuBLASLt cannot serve (gemm.h). Pooling and Resize work on T, H, W
// (ir/window.h's Window3 form), one kernel for 1 to 3 spatial axes.
//
// Element types: every tensor pointer is untyped and comes with the
// ir::ElementType it is stored in (float, __half or __nv_bfloat16). The
// kernels are templates over the storage types they read and write; every
// value is converted to float when it is read, all arithmetic (and every
// accumulation) is float32, and a result is rounded to nearest even into its
// output's type when it is stored (ir/element_type.h's rounding, which the
// CPU reference applies where these kernels store). The launchers dispatch on
// the types at run time.
//
// Parameters are plain structs passed by value; launchers return the launch
// status (the caller checks it with IOS_CUDA_CALL). Shapes are int64 and
// indices are computed in int64, except by the element-wise kernel, which
// runs in 32-bit indices with precomputed divisors whenever every offset it
// forms is below 2^31 (ew_index_bits).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#if defined(__CUDACC__)
#define IOS_HOST_DEVICE __host__ __device__
#else
#define IOS_HOST_DEVICE
#endif

#include "ir/element_type.h"
#include "ir/op_kind.h"
#include "ir/resize_math.h"

namespace ios::cuda::kernels {

constexpr int kMaxDims = 6;
constexpr int kMaxEwSteps = 8;

// How an operand of an element-wise chain is addressed, relative to the
// output (shape [N, C, rest...], item = C * hw):
//  kFull: same shape; offset n * batch_stride + r (r within the item)
//  kChannel: per channel of dim 1, ptr[c]
//  kBatchChannel: per (n, c), ptr[n * batch_stride + c]
//  kScalar: ptr[0]
//  kGeneric: any broadcast; strides[d] per output dimension (0 = broadcast)
enum OperandMode : int { kFull = 0, kChannel = 1, kBatchChannel = 2, kScalar = 3, kGeneric = 4 };

struct EwOperand {
  const void* ptr = nullptr;
  ir::ElementType type = ir::ElementType::kFloat32;  // read in its own type
  int mode = kFull;
  int64_t batch_stride = 0;
  int64_t strides[kMaxDims] = {};
};

// Division of unsigned 32-bit dividends below 2^31 by a fixed divisor in
// [1, 2^31) as a multiply-high, an add and a shift (Granlund and Montgomery;
// PyTorch's IntDivider): a 64-bit division is dozens of instructions on the
// GPU, and the element-wise kernel makes several per element.
struct IntDivider {
  uint32_t divisor = 1;
  uint32_t magic = 1;
  uint32_t shift = 0;

  IntDivider() = default;
  IOS_HOST_DEVICE explicit IntDivider(uint32_t d) : divisor(d) {
    shift = 0;
    while (shift < 32 && (uint64_t{1} << shift) < d) ++shift;
    magic = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << shift) - d)) / d + 1);
  }
  IOS_HOST_DEVICE uint32_t div(uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const uint32_t t = __umulhi(n, magic);
#else
    const uint32_t t = static_cast<uint32_t>((static_cast<uint64_t>(n) * magic) >> 32);
#endif
    return (t + n) >> shift;  // t <= n < 2^31: no overflow
  }
  IOS_HOST_DEVICE uint32_t mod(uint32_t n) const { return n - div(n) * divisor; }
};

// One step of a chain: an element-wise operator of ir/elementwise.h, whose
// math the kernel runs (the same functor as the CPU kernels).
struct EwStepParams {
  ir::OpKind kind = ir::OpKind::kRelu;
  float p0 = 0.0f, p1 = 0.0f;  // ir::ew::Params: Clip's min, max; HardSigmoid's alpha, beta
  int operand = -1;            // index into EwParams::operands for a binary operator (Add, Sub, ...)
  bool operand_first = false;  // y = f(operand, v) rather than f(v, operand) (c - x, c / x)
};

struct EwParams {
  int rank = 1;
  int64_t dims[kMaxDims] = {};  // output shape
  int64_t total = 0;
  int64_t item = 0;      // elements per item of dim 0
  int64_t channels = 1;  // dim 1 (1 for rank < 2)
  int64_t hw = 1;        // item / channels
  void* y = nullptr;
  ir::ElementType y_type = ir::ElementType::kFloat32;
  int64_t y_batch_stride = 0;
  EwOperand x;  // its type may differ from y's only in a type-changing Cast
  int num_steps = 0;
  EwStepParams steps[kMaxEwSteps];
  int num_operands = 0;
  EwOperand operands[kMaxEwSteps];
  bool generic = false;  // some operand is kGeneric: decompose every index
  // 0: the launcher picks (ew_index_bits); 32 or 64 force a path (tests).
  int index_bits = 0;
};
cudaError_t elementwise(const EwParams& params, cudaStream_t stream);

// 32 when every element index and every offset the element-wise kernel
// forms for `params` (output, input, operands) is below 2^31 and no stride
// is negative, so it may index in 32 bits; 64 otherwise.
int ew_index_bits(const EwParams& params);

// dst[...] = src[...] over dims, both addressed by element strides.
struct CopyParams {
  int rank = 1;
  int64_t dims[kMaxDims] = {};
  int64_t total = 0;
  const void* src = nullptr;
  int64_t src_strides[kMaxDims] = {};
  void* dst = nullptr;
  int64_t dst_strides[kMaxDims] = {};
  // A copy between two types converts (the 16-bit graph inputs and outputs
  // from and to their float32 host arrays); otherwise it moves the bits.
  ir::ElementType src_type = ir::ElementType::kFloat32;
  ir::ElementType dst_type = ir::ElementType::kFloat32;
};
cudaError_t copy(const CopyParams& params, cudaStream_t stream);

enum PadMode : int { kPadConstant = 0, kPadReflect, kPadEdge };
struct PadParams {
  int rank = 1;
  int64_t out_dims[kMaxDims] = {};
  int64_t in_dims[kMaxDims] = {};
  int64_t begin[kMaxDims] = {};
  int64_t total = 0;
  const void* src = nullptr;
  int64_t src_strides[kMaxDims] = {};
  void* dst = nullptr;
  int64_t dst_strides[kMaxDims] = {};
  ir::ElementType type = ir::ElementType::kFloat32;  // of src and dst
  int mode = kPadConstant;
  float value = 0.0f;
};
cudaError_t pad(const PadParams& params, cudaStream_t stream);

enum PoolMode : int { kPoolMax = 0, kPoolAverageInclude, kPoolAverageExclude };
// A pooling window over T, H and W (ir/window.h's Window3: a 1-D or 2-D
// window has length-1 axes in front with kernel 1 and no pads), with
// dilation (MaxPool). The count of AveragePool's count_include_pad divisor is
// the window's taps inside the padded extent [-pad_begin, in + pad_end), as
// the CPU reference counts them.
struct PoolParams {
  int64_t n = 0, c = 0;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1}, dilation[3] = {1, 1, 1};
  int64_t pad_begin[3] = {0, 0, 0}, pad_end[3] = {0, 0, 0};
  int mode = kPoolMax;
  const void* x = nullptr;
  int64_t x_batch_stride = 0;
  void* y = nullptr;
  int64_t y_batch_stride = 0;
  ir::ElementType type = ir::ElementType::kFloat32;  // of x and y
};
cudaError_t pool(const PoolParams& params, cudaStream_t stream);

// Resize of 1 to 3 spatial axes, nearest or (bi/tri)linear (the math of
// ir/resize_math.h and the CPU reference's order), on T, H and W: axes
// added in front of a 1-D or 2-D resize have length 1 and scale 1, and read
// one tap of weight 1.
struct ResizeParams {
  int64_t n = 0, c = 0;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int rank = 2;  // spatial axes of the tensors (1 to 3): the last `rank` of T, H, W
  ir::resize::Mode mode = ir::resize::Mode::kNearest;
  ir::resize::Coordinates coordinates = ir::resize::Coordinates::kHalfPixel;
  ir::resize::Nearest nearest = ir::resize::Nearest::kRoundPreferFloor;
  float scale[3] = {1.0f, 1.0f, 1.0f};
  const void* x = nullptr;
  int64_t x_batch_stride = 0;
  void* y = nullptr;
  int64_t y_batch_stride = 0;
  ir::ElementType type = ir::ElementType::kFloat32;  // of x and y
};
cudaError_t resize(const ResizeParams& params, cudaStream_t stream);

// Mean over the dimensions flagged in `reduced`; y indexed by out_strides
// over the input's dimensions (0 for reduced ones).
enum ReduceOp : int {
  kReduceMean = 0,
  kReduceSum,
  kReduceMax,
  kReduceMin,
  kReduceProd,
  kReduceL1,
  kReduceL2,
  kReduceSumSquare,
  kReduceLogSumExp,  // max + log(sum exp(x - max)): a first pass over x takes the max
};
struct ReduceParams {
  int op = kReduceMean;
  int rank = 1;
  int64_t dims[kMaxDims] = {};
  bool reduced[kMaxDims] = {};
  int64_t out_total = 0;
  int64_t count = 1;  // elements averaged per output
  const void* x = nullptr;
  int64_t x_strides[kMaxDims] = {};
  void* y = nullptr;
  int64_t y_strides[kMaxDims] = {};
  ir::ElementType type = ir::ElementType::kFloat32;  // of x and y; accumulated in float
};
cudaError_t reduce_mean(const ReduceParams& params, cudaStream_t stream);

// Y[b][i][j] = alpha * sum_l A[b][i][l] * B[b][l][j] + beta * C[b][i][j],
// every operand addressed by (batch, row, column) element strides (a
// transpose swaps strides, a broadcast has stride 0). C may be null.
struct GemmParams {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  ir::ElementType type = ir::ElementType::kFloat32;  // of A, B, C and Y; accumulated in float
  const void* a = nullptr;
  int64_t a_batch = 0, a_row = 0, a_col = 0;
  const void* b = nullptr;
  int64_t b_batch = 0, b_row = 0, b_col = 0;
  const void* c = nullptr;
  bool has_c = false;  // beta * C is added (said apart from c: plans are made before pointers exist)
  int64_t c_batch = 0, c_row = 0, c_col = 0;
  void* y = nullptr;
  int64_t y_batch = 0, y_row = 0;
  float alpha = 1.0f, beta = 0.0f;
};
cudaError_t gemm(const GemmParams& params, cudaStream_t stream);

// The own GEMM kernel's launch: 16 x 16 tiles, grid.x over column tiles (at
// most 2^31 - 1), grid.y over row tiles and grid.z over batches, each capped
// at 65,535 with the kernel looping over the rest. `error` is empty when it
// can launch, else why not (gemm() then refuses with
// cudaErrorInvalidConfiguration instead of launching a wrong grid).
constexpr int kGemmTile = 16;
constexpr int64_t kMaxGridX = 2147483647;
constexpr int64_t kMaxGridYZ = 65535;
struct GemmGrid {
  int64_t x = 1, y = 1, z = 1;
  const char* error = nullptr;  // null when the grid is valid
};
GemmGrid gemm_grid(int64_t m, int64_t n, int64_t batch);

// p[i] = a pseudo-random value in [-1, 1) from (seed, i), stored in `type`:
// inputs for stage measurement, made on the device instead of uploaded from
// the host.
cudaError_t fill_uniform(void* p, ir::ElementType type, int64_t n, uint64_t seed, cudaStream_t stream);

}  // namespace ios::cuda::kernels
