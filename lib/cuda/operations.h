// The GPU operations that more than one lowering emits (a convolution's
// explicit pad, dense copies in front of Softmax or LayerNorm, the element-wise
// chain after every operator) and that the host tests inspect. Each is
// defined, with its launch, in its op_<name>.cpp; operations that only their
// own lowering emits (pooling, softmax, reductions, resize, layer
// normalization) are declared there alone.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda/program.h"

namespace ios::cuda {

struct ConvChoice;      // conv.h
struct ConvPlanChoice;  // cudnn_graph.h
struct GemmChoice;      // gemm.h

// y = conv(x, w), cuDNN (op_conv.cpp). Pads are symmetric (asymmetric
// padding is made explicit by a PadOp in front). With `fused`, y = relu(conv
// + bias [+ z]) in one cudnnConvolutionBiasActivationForward (if cuDNN rejects
// the fused call for these shapes, the engine runs the convolution and then
// that epilogue with its own kernel); otherwise the bias and the rest of the
// unit's element-wise chain are an EwOp that follows, in place on y.
class ConvOp final : public Operation {
 public:
  int x = -1, y = -1;
  int weight = -1;  // constant [M, C/group, k...], one k per spatial axis
  int bias = -1;    // constant [M] (fused convolutions always have one)
  int z = -1;       // value added before the ReLU (fused only)
  bool relu = false;
  bool fused = false;
  // Per spatial axis of x (1 to 3; conv_shape maps a 1-D one onto cuDNN's
  // 2-D form). Pads are symmetric: the begin of each axis.
  ir::Dims kernel{1, 1}, stride{1, 1}, dilation{1, 1}, pad{0, 0};
  int64_t group = 1;
  // Filled by prepare() when cuDNN supports no algorithm for a strided x or
  // y: x is first copied to `x_dense`, y computed in `y_dense` then copied.
  int x_dense = -1, y_dense = -1;
  std::string label;  // for messages: the node's output tensor
  // The algorithm prepare() chose on the device: a graph-API plan (with
  // --conv-kernels graph, where one builds), else a legacy call.
  std::shared_ptr<const ConvChoice> choice;
  std::shared_ptr<const ConvPlanChoice> plan;

  void uses(Uses& uses) const override;
  std::string describe(const Program& program) const override;
  void prepare(Preparation& prep) override;
  std::unique_ptr<GpuOp> launch(const Binding& binding) const override;
};

// Steps one element-wise kernel launch applies (kernels::kMaxEwSteps, which
// also bounds its operands). The lowering splits longer chains into several
// EwOps, the later ones in place on y.
constexpr int kMaxEwStepsPerOp = 8;
struct EwStep {
  ir::OpKind kind = ir::OpKind::kRelu;  // an element-wise operator of ir/elementwise.h
  float p0 = 0.0f, p1 = 0.0f;           // Clip: min, max; HardSigmoid: alpha, beta
  Ref operand;                          // binary operators: broadcast to y's shape (ONNX rules)
  // The operand is the left one: y = f(operand, v), as in c - x or c / x
  // (the chain value v is the node's input 1).
  bool operand_first = false;
};
// y = steps(x), element-wise (op_elementwise.cpp); x broadcast to y's
// shape. y may be x (in place). At most kMaxEwStepsPerOp steps.
class EwOp final : public Operation {
 public:
  Ref x;
  int y = -1;
  std::vector<EwStep> steps;

  EwOp(Ref x_, int y_, std::vector<EwStep> steps_) : x(x_), y(y_), steps(std::move(steps_)) {}
  void uses(Uses& uses) const override;
  std::string describe(const Program& program) const override;
  std::unique_ptr<GpuOp> launch(const Binding& binding) const override;
};

// dst[i] = src[src_offset + sum_d i_d * src_strides[d]] over `dims`, written
// at dst_offset + sum_d i_d * dst_strides[d] (elements, relative to the
// values' first elements). Slice, Split, Transpose, Reshape, concat copies
// (op_copy.cpp).
class CopyOp final : public Operation {
 public:
  int src = -1, dst = -1;
  int src_constant = -1;  // >= 0: copies this program constant instead of the value `src`
  std::vector<int64_t> dims, src_strides, dst_strides;
  int64_t src_offset = 0, dst_offset = 0;

  void uses(Uses& uses) const override;
  std::string describe(const Program& program) const override;
  std::unique_ptr<GpuOp> launch(const Binding& binding) const override;
};

// Pad and a convolution's explicit padding (op_pad.cpp).
class PadOp final : public Operation {
 public:
  enum class Mode { kConstant, kReflect, kEdge };
  Mode mode = Mode::kConstant;
  int x = -1, y = -1;
  std::vector<int64_t> begin;  // per dimension
  float value = 0.0f;

  void uses(Uses& uses) const override;
  std::string describe(const Program& program) const override;
  std::unique_ptr<GpuOp> launch(const Binding& binding) const override;
};

// y[b] = alpha * A[b] * B[b] + beta * C, with element strides per operand
// (transposes and broadcast batches are strides). cuBLASLt (TF32 or strict
// FP32 by the engine's precision), or the own kernel where cuBLASLt cannot
// serve the layout (gemm.h; op_gemm.cpp: Gemm, MatMul and merged matrix
// products).
class GemmOp final : public Operation {
 public:
  Ref a, b, c;
  int y = -1;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  float alpha = 1.0f, beta = 0.0f;
  bool trans_a = false, trans_b = false;
  // Batch handling for MatMul: per operand whether its batch index advances.
  bool a_batched = false, b_batched = false;
  std::string label;  // for messages: the node's output tensor or the merged launch
  // The path prepare() chose on the device.
  std::shared_ptr<const GemmChoice> choice;

  void uses(Uses& uses) const override;
  std::string describe(const Program& program) const override;
  void prepare(Preparation& prep) override;
  std::unique_ptr<GpuOp> launch(const Binding& binding) const override;
};

}  // namespace ios::cuda
