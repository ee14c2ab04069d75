// The operators the IR can hold. A plain list in a header of its own, with no
// library dependencies, so that CUDA device code (cuda/kernels.cu, through
// ir/elementwise.h) can name element-wise operators by the same enum as the
// rest of the program.
//
// IOS_OPERATORS is the one list of operators: each line names an OpKind and
// the function in lib/ir/ops that returns the operator's table entry (its
// ONNX name, attributes, shapes, traits and work; ir/op_info.h). The enum
// and the operator table are both made from it, in this order.
#pragma once

// The importer rejects anything else by name (ir/op_info.h lists the names).
#define IOS_OPERATORS(X)                                                                    \
  X(kConv, conv_op)                                                                         \
  X(kRelu, relu_op)                                                                         \
  X(kClip, clip_op)                                                                         \
  X(kSigmoid, sigmoid_op)                                                                   \
  X(kHardSigmoid, hard_sigmoid_op)                                                          \
  X(kHardSwish, hard_swish_op)                                                              \
  X(kAdd, add_op)                                                                           \
  X(kMul, mul_op)                                                                           \
  X(kConcat, concat_op)                                                                     \
  X(kSplit, split_op)                                                                       \
  X(kSlice, slice_op)                                                                       \
  X(kMaxPool, max_pool_op)                                                                  \
  X(kAveragePool, average_pool_op)                                                          \
  X(kGlobalAveragePool, global_average_pool_op)                                             \
  X(kReduceMean, reduce_mean_op)                                                            \
  X(kFlatten, flatten_op)                                                                   \
  X(kReshape, reshape_op)                                                                   \
  X(kTranspose, transpose_op)                                                               \
  X(kGemm, gemm_op)                                                                         \
  X(kMatMul, mat_mul_op)                                                                    \
  X(kSoftmax, softmax_op)                                                                   \
  X(kPad, pad_op)                                                                           \
  X(kBatchNorm, batch_norm_op) /* only where no convolution precedes it (else folded) */    \
  X(kTanh, tanh_op)                                                                         \
  /* Element-wise arithmetic of normalisation layers and GELU (ConvNeXt, ViT). */           \
  X(kSub, sub_op)                                                                           \
  X(kDiv, div_op)                                                                           \
  X(kPow, pow_op) /* the exponent must be a constant */                                     \
  X(kSqrt, sqrt_op)                                                                         \
  X(kReciprocal, reciprocal_op)                                                             \
  X(kErf, erf_op)                                                                           \
  X(kExp, exp_op)                                                                           \
  X(kResize, resize_op)        /* ONNX Resize, and Upsample of opsets 7-9 */                \
  X(kLayerNorm, layer_norm_op) /* ONNX LayerNormalization (17); PyTorch's form is fused */  \
  X(kGelu, gelu_op)            /* ONNX Gelu (20), and the erf/tanh chains written for it */ \
  /* Activations of networks outside torchvision (YOLO, U-Net, audio CNNs, HRNet). */       \
  X(kLeakyRelu, leaky_relu_op)                                                              \
  X(kPRelu, prelu_op) /* binary: the slope is input 1, broadcast to x */                    \
  X(kElu, elu_op)                                                                           \
  X(kSelu, selu_op)                                                                         \
  X(kCelu, celu_op)                                                                         \
  X(kSoftplus, softplus_op)                                                                 \
  X(kSoftsign, softsign_op)                                                                 \
  X(kMish, mish_op) /* ONNX Mish (18), and x * tanh(softplus(x)) */                         \
  X(kThresholdedRelu, thresholded_relu_op)                                                  \
  X(kNeg, neg_op)                                                                           \
  X(kAbs, abs_op)                                                                           \
  X(kMax, max_op) /* binary; variadic Max is a chain of them */                             \
  X(kMin, min_op) /* binary; variadic Min is a chain of them */                             \
  X(kLogSoftmax, log_softmax_op)                                                            \
  X(kReduceSum, reduce_sum_op)                                                              \
  X(kReduceMax, reduce_max_op)                                                              \
  X(kReduceMin, reduce_min_op)                                                              \
  X(kReduceProd, reduce_prod_op)                                                            \
  X(kReduceL1, reduce_l1_op)                                                                \
  X(kReduceL2, reduce_l2_op)                                                                \
  X(kReduceSumSquare, reduce_sum_square_op)                                                 \
  X(kReduceLogSumExp, reduce_log_sum_exp_op)                                                \
  X(kTile, tile_op)                                                                         \
  X(kConvTranspose, conv_transpose_op) /* 2-D; a conv unit that never merges */             \
  X(kCast, cast_op) /* between float32, float16 and bfloat16 (ir/element_type.h) */

namespace ios::ir {

#define IOS_OPERATOR_KIND(kind, definition) kind,
enum class OpKind : int {
  IOS_OPERATORS(IOS_OPERATOR_KIND)
  kCount,  // not an operator: the number of operators, for tables indexed by OpKind
};
#undef IOS_OPERATOR_KIND

inline constexpr int kNumOpKinds = static_cast<int>(OpKind::kCount);

}  // namespace ios::ir
