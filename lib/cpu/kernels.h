// Reference kernels over NCHW float32, one per ir::OpKind, in a kernel
// table keyed by OpKind (kernel_for). Element-wise operators share their math
// with the CUDA backend (ir/elementwise.h): every unary or binary operator
// there has an entry here without a line of its own.
//
// Straightforward loops that follow the ONNX operator definitions; the only
// optimized ones are convolution (im2col or direct 1x1 feeding the blocked
// GEMM of gemm.h, multithreaded) and depthwise convolution (direct,
// multithreaded over channels). Inputs and outputs are views (view.h): every
// kernel accepts a batch stride on its operands, so an output can be a
// channel slice of a concatenation buffer and an input a slice of a merged
// convolution's output. Shapes come from the IR (the importer inferred them);
// kernels check what they rely on with IOS_ASSERT.
#pragma once

#include <span>

#include "cpu/view.h"
#include "ir/elementwise.h"
#include "ir/graph.h"

namespace ios::cpu {

struct KernelContext {
  int threads = 1;  // upper bound for the kernels that parallelize
};

// --- Individual kernels (also called directly by the tests). ---------------

// y = conv(x, w) + bias over 1 to 3 spatial axes. w is [M, C/group, k...];
// bias is [M] or null.
void conv(const KernelContext& ctx, const ConstView& x, const float* weight, const float* bias,
          const ir::ConvAttrs& attrs, const View& y);

// A unary element-wise operator of ir/elementwise.h (Relu, Clip, ...) with
// its scalar attributes; y may be the same memory as x (in-place epilogues).
void unary(ir::OpKind op, const ir::ew::Params& params, const ConstView& x, const View& y);

// A binary element-wise operator of ir/elementwise.h (Add, Mul). ONNX
// multidirectional broadcasting: shapes align at the right and size-1
// dimensions stretch. y may alias an input of y's own shape.
void binary(ir::OpKind op, const ConstView& a, const ConstView& b, const View& y);

// y = scale * (x - mean) / sqrt(var + eps) + bias, per channel (dim 1).
void batch_norm(const ConstView& x, const float* scale, const float* bias, const float* mean, const float* var,
                float epsilon, const View& y);

void concat(int64_t axis, std::span<const ConstView> inputs, const View& y);
void split(int64_t axis, const ConstView& x, std::span<const View> outputs);
void slice(const ir::SliceAttrs& attrs, const ConstView& x, const View& y);
void max_pool(const ir::PoolAttrs& attrs, const ConstView& x, const View& y);
void average_pool(const ir::PoolAttrs& attrs, const ConstView& x, const View& y);
void global_average_pool(const ConstView& x, const View& y);
void reduce_mean(const ir::ReduceAttrs& attrs, const ConstView& x, const View& y);
// ReduceMean, ReduceSum, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
// ReduceSumSquare or ReduceLogSumExp (`op`) over attrs.axes.
void reduce(ir::OpKind op, const ir::ReduceAttrs& attrs, const ConstView& x, const View& y);
void tile(const std::vector<int64_t>& repeats, const ConstView& x, const View& y);
void conv_transpose(const ir::ConvTransposeAttrs& attrs, const ConstView& x, const float* weight,
                    const float* bias, const View& y);
// Flatten and Reshape: the same elements in the same order.
void copy(const ConstView& x, const View& y);
void transpose(const std::vector<int64_t>& perm, const ConstView& x, const View& y);
// Resize of H and W (nearest or bilinear), the math of ir/resize_math.h.
void resize(const ir::ResizeAttrs& attrs, const ConstView& x, const View& y);
// Y = alpha * A' * B' + beta * C, with C (optional) broadcast to Y.
void gemm(const KernelContext& ctx, const ir::GemmAttrs& attrs, const ConstView& a, const ConstView& b,
          const ConstView* c, const View& y);
// numpy matmul: 2-D operands, or batched with broadcast leading dimensions.
void matmul(const KernelContext& ctx, const ConstView& a, const ConstView& b, const View& y);
// Softmax along one axis (ONNX opset 13 semantics).
void softmax(int64_t axis, const ConstView& x, const View& y);
void softmax(int64_t axis, bool log, const ConstView& x, const View& y);  // log: LogSoftmax
void pad(const ir::PadAttrs& attrs, const ConstView& x, const View& y);

// --- Dispatch ---------------------------------------------------------------

// Runs one IR node: `inputs` follow the node's inputs, `outputs` its outputs.
using Kernel = void (*)(const KernelContext& ctx, const ir::Node& node, std::span<const ConstView> inputs,
                        std::span<const View> outputs);

// The kernel table's entry for `op`; null when the CPU backend lacks one (a
// test checks that every operator of the operator table has one).
Kernel kernel_for(ir::OpKind op);

// Runs one IR node. `inputs` follow the node's inputs (weights included, as
// dense views of their data; absent optional inputs are not passed);
// `outputs` follow its outputs and have the IR's shapes.
void run_node(const KernelContext& ctx, const ir::Node& node, std::span<const ConstView> inputs,
              std::span<const View> outputs);

// Whether `node` may write its output over its (only) activation input:
// element-wise unary operators, whose kernels read each element before
// writing it (the operator table's in_place trait).
bool can_run_in_place(const ir::Node& node);

}  // namespace ios::cpu
