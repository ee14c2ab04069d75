// The operators the IR can hold. A plain enum in a header of its own, with no
// library dependencies, so that CUDA device code (cuda/kernels.cu, through
// ir/elementwise.h) can name element-wise operators by the same enum as the
// rest of the program. Everything else about an operator (its ONNX name,
// attributes, shapes, traits and work) is in its entry of the operator table,
// ir/op_info.h.
#pragma once

namespace ios::ir {

// The importer rejects anything else by name (ir/op_info.h lists the names).
enum class OpKind : int {
  kConv,
  kRelu,
  kClip,
  kSigmoid,
  kHardSigmoid,
  kHardSwish,
  kAdd,
  kMul,
  kConcat,
  kSplit,
  kSlice,
  kMaxPool,
  kAveragePool,
  kGlobalAveragePool,
  kReduceMean,
  kFlatten,
  kReshape,
  kTranspose,
  kGemm,
  kMatMul,
  kSoftmax,
  kPad,
  kBatchNorm,  // only where no convolution precedes it (otherwise folded)
  kTanh,
  // Element-wise arithmetic of normalisation layers and GELU (ConvNeXt, ViT).
  kSub,
  kDiv,
  kPow,  // the exponent must be a constant
  kSqrt,
  kReciprocal,
  kErf,
  kExp,
  kResize,     // ONNX Resize, and Upsample of opsets 7-9
  kLayerNorm,  // ONNX LayerNormalization (opset 17); PyTorch's decomposed form is fused
  kGelu,       // ONNX Gelu (opset 20), and the erf/tanh chains exporters write for it
  kCount,      // not an operator: the number of operators, for tables indexed by OpKind
};

inline constexpr int kNumOpKinds = static_cast<int>(OpKind::kCount);

}  // namespace ios::ir
