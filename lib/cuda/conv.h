// cuDNN convolutions: descriptors and algorithm choice.
//
// The algorithm of every convolution is chosen by timing the ways to run it
// on scratch memory and keeping the fastest. cuDNN's own search
// (cudnnFindConvolutionForwardAlgorithmEx, which runs every algorithm) ranks
// the algorithms, each result's status checked, results over the workspace
// limit or using tensor cores under strict FP32 dropped; for the best few,
// the exact calls the engine would make are timed: the fused bias + residual
// + ReLU call (when the chain asks for it) and the plain call followed by
// the engine's own epilogue kernel, both on the tensors' layout as requested
// (strided input/output) and, when x or y is strided, on dense staging
// buffers with the staging copies' time added. A call cuDNN refuses is
// skipped, and the CUDA error it may have left is cleared so that the next
// launch does not report it as its own. Choices are cached per device for
// the process.
//
// Types: x, w, y, z and the bias are all of the convolution's element type
// (float32, float16 or bfloat16; the lowering refuses a mix), in NCHW. The
// convolution descriptor computes in float (CUDNN_DATA_FLOAT) for every type;
// a 16-bit convolution always runs on tensor cores (its math type is not
// restricted by Precision, which is the math of float32 tensors only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cuda/context.h"
#include "cuda/kernels.h"
#include "cuda/resources.h"
#include "ir/graph.h"

namespace ios::cuda {

// A convolution's geometry as cuDNN is given it. The spatial axes are two
// (H, W) or three (T, H, W): cuDNN's convolutions need 4-D or 5-D tensors,
// so a 1-D convolution over N,C,L is the 2-D one over N,C,1,L with kernel,
// stride and dilation 1 and no pad on H (cudnn_dims in launch.h), which
// computes the same values on the same memory.
struct ConvShape {
  int64_t n = 1, c = 1;  // input batch and channels
  int64_t k = 1;         // output channels; the filter is [k, c / group, filter...]
  int64_t group = 1;
  ir::Dims in{1, 1}, filter{1, 1}, out{1, 1};        // per spatial axis
  ir::Dims pad{0, 0}, stride{1, 1}, dilation{1, 1};  // per spatial axis (pads symmetric)
  int64_t x_batch_stride = 0, y_batch_stride = 0, z_batch_stride = 0;
  // Byte alignment of the x, y and z pointers (power of two, at most
  // kBufferAlignment): algorithm choice is made, and cached, per alignment.
  int64_t x_align = 256, y_align = 256, z_align = 256;
  bool fused = false;  // bias + ReLU (+ z when z_batch_stride > 0)
  bool has_z = false;
  ir::ElementType type = ir::ElementType::kFloat32;  // of x, w, y, z and the bias

  size_t spatial() const { return in.size(); }
  ir::Shape x_dims() const;  // [n, c, in...]
  ir::Shape y_dims() const;  // [n, k, out...]
  ir::Shape w_dims() const;  // [k, c / group, filter...]
  int64_t x_item() const;    // elements of one image of x, dense
  int64_t y_item() const;
  std::string key() const;  // the full geometry, strides, alignments, fusion and type
};

struct ConvDescriptors {
  TensorDesc x, y, z, bias;
  FilterDesc w;
  ConvDesc conv;
  ActivationDesc relu;
};
// Descriptors for `shape` with the given math type.
struct Program;
class ConvOp;
// The shape, strides and pointer alignments of `op` in `program`.
ConvShape conv_shape(const Program& program, const ConvOp& op);

ConvDescriptors make_conv_descriptors(const ConvShape& shape, cudnnMathType_t math);

struct ConvChoice {
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t workspace = 0;
  bool fused = false;    // cuDNN runs the fused call (else plain + own epilogue)
  bool x_dense = false;  // stage x in a dense copy first
  bool y_dense = false;  // compute into a dense buffer, then copy to y
  float time_ms = 0.0f;  // measured: the call, plus the own epilogue and staging copies it needs
};

// One way to run a convolution, tried on scratch memory: its time (ms), or
// nullopt when cuDNN refuses it.
using ConvAttempt = std::function<std::optional<float>()>;
// Runs every attempt in order and returns the index of the fastest that ran
// (the first of equals), nullopt when none did. After each refused attempt
// it calls `clear_error` (in the engine: clear the CUDA error the refusal
// may have left, then let a sticky one surface).
std::optional<size_t> fastest_attempt(const std::vector<ConvAttempt>& attempts,
                                      const std::function<void()>& clear_error);

// The own epilogue of a convolution whose fused call is not used:
// y = relu(y + bias [+ z]) in place, y with `y_batch_stride`, z with the
// shape's z_batch_stride.
kernels::EwParams conv_epilogue(const ConvShape& shape, void* y, int64_t y_batch_stride, const void* bias,
                                const void* z);

// Chooses (or recalls) the algorithm for `shape` on ctx's device and precision.
// `label` names the convolution in errors.
ConvChoice choose_conv(Context& ctx, const ConvShape& shape, const std::string& label);

const char* conv_algo_name(cudnnConvolutionFwdAlgo_t algo);

// ConvTranspose: cuDNN's backward-data convolution, whose dy is the
// transposed convolution's input x and whose dx is its output y. The filter
// is the weight [c_in, c_out / group, filter...]. Spatial axes as ConvShape's
// (a 1-D one is the 2-D one with H = 1). The bias and the rest of the chain
// are the element-wise operation after it, not part of the call.
struct ConvTransposeShape {
  int64_t n = 1, c_in = 1, c_out = 1, group = 1;
  ir::Dims in{1, 1}, filter{1, 1}, out{1, 1};
  ir::Dims pad{0, 0}, stride{1, 1}, dilation{1, 1};
  int64_t x_batch_stride = 0, y_batch_stride = 0;
  int64_t x_align = 256, y_align = 256;
  ir::ElementType type = ir::ElementType::kFloat32;

  ir::Shape x_dims() const;  // [n, c_in, in...]
  ir::Shape y_dims() const;  // [n, c_out, out...]
  ir::Shape w_dims() const;  // [c_in, c_out / group, filter...]
  std::string key() const;
};

struct ConvTransposeDescriptors {
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
};
ConvTransposeDescriptors make_conv_transpose_descriptors(const ConvTransposeShape& shape,
                                                         cudnnMathType_t math);

struct ConvTransposeChoice {
  cudnnConvolutionBwdDataAlgo_t algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t workspace = 0;
  float time_ms = 0.0f;  // measured
};

// Chooses (or recalls) the backward-data algorithm for `shape` as
// choose_conv does for forward ones: cuDNN's search ranks the algorithms
// (cudnnFindConvolutionBackwardDataAlgorithmEx, each status checked, over the
// workspace limit or tensor-op under strict FP32 for float32 dropped), the
// best few are timed with the exact call the engine makes, the fastest is
// kept and cached per device, precision, geometry and alignment.
ConvTransposeChoice choose_conv_transpose(Context& ctx, const ConvTransposeShape& shape,
                                          const std::string& label);

const char* conv_transpose_algo_name(cudnnConvolutionBwdDataAlgo_t algo);

}  // namespace ios::cuda
