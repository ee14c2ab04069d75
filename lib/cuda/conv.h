// cuDNN convolutions: descriptors and algorithm choice.
//
// The algorithm of every convolution is chosen by cuDNN's own search
// (cudnnFindConvolutionForwardAlgorithmEx, which runs every algorithm), each
// result's status checked, results over the workspace limit or using tensor
// cores under strict FP32 dropped; the best remaining candidate is then run
// once with the exact call the engine will make (plain or fused bias +
// residual + ReLU, strided input/output) and the first that succeeds is kept.
// If cuDNN supports no fused variant the convolution runs plain with the
// engine's own epilogue kernel; if it supports no strided layout, dense
// staging copies are used. Choices are cached per device for the process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "cuda/context.h"
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
  float time_ms = 0.0f;  // cuDNN's measurement of the chosen algorithm
};

// Chooses (or recalls) the algorithm for `shape` on ctx's device and precision.
// `label` names the convolution in errors.
ConvChoice choose_conv(Context& ctx, const ConvShape& shape, const std::string& label);

const char* conv_algo_name(cudnnConvolutionFwdAlgo_t algo);

}  // namespace ios::cuda
