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

namespace ios::cuda {

struct ConvShape {
  int64_t n = 1, c = 1, h = 1, w = 1;  // input
  int64_t k = 1, r = 1, s = 1;         // filter [k, c / group, r, s]
  int64_t oh = 1, ow = 1;              // output
  int64_t pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1, group = 1;
  int64_t x_batch_stride = 0, y_batch_stride = 0, z_batch_stride = 0;
  // Byte alignment of the x, y and z pointers (power of two, at most
  // kBufferAlignment): algorithm choice is made, and cached, per alignment.
  int64_t x_align = 256, y_align = 256, z_align = 256;
  bool fused = false;  // bias + ReLU (+ z when z_batch_stride > 0)
  bool has_z = false;
  ir::ElementType type = ir::ElementType::kFloat32;  // of x, w, y, z and the bias

  std::string key() const;
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

}  // namespace ios::cuda
