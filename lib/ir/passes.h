// IR-to-IR simplifications the importer runs after building the IR.
//
// Each pass rewrites the graph in place, preserves every graph output tensor
// (name and value, up to float rounding) and ends with Graph::compact(), so
// NodeId order is a topological order again afterwards. Each returns how many
// rewrites it made. Passes need constant data (Tensor::data) for weights.
//
// Identity and Dropout have no OpKind: the importer drops them while
// translating ONNX (their output aliases their input), so no pass sees them.
#pragma once

#include "ir/graph.h"

namespace ios::ir {

// Folds a BatchNormalization into the Conv that produces its input:
//   W'[o,...] = W[o,...] * s[o],  b'[o] = (b[o] - mean[o]) * s[o] + beta[o],
//   s[o] = gamma[o] / sqrt(var[o] + epsilon)
// Rule: the BN's input is a Conv output read by nothing else (one consumer,
// not a graph output) and the conv weights/bias and all four BN parameters
// are constants. The conv then writes the BN's output tensor (so downstream
// names are unchanged) with new weight/bias tensors (the old ones may be
// shared). A BN anywhere else (after a Concat, a graph input...) is kept.
int fold_batchnorm(Graph& graph);

// Folds a constant-mode Pad of a 4-D NCHW tensor into the window of the one
// operator that reads it. Rule: pads are >= 0 and only on H and W, the Pad
// output has exactly one consumer (as its input 0) and is not a graph output,
// and the consumer is
//  - a Conv and the pad value is 0;
//  - an AveragePool without ceil_mode, pad value 0, and the pool either
//    counts padding already (count_include_pad) or has no pads of its own:
//    it then counts all padding, as the explicit zeros were counted;
//  - a MaxPool without ceil_mode whose combined pads stay below the kernel
//    size, with pad value -inf (or <= -FLT_MAX), or value 0 when the padded
//    tensor is known non-negative (made by Relu, Sigmoid, HardSigmoid, or a
//    Clip with min >= 0): padding then never wins a window max.
// A Pad whose pads are all zero is removed whatever reads it (unless it makes
// a graph output).
int fold_pad(Graph& graph);

// Flattens nested Concats: an input of a Concat made by another Concat on the
// same axis, read only by that outer Concat (once) and not a graph output, is
// replaced by the inner Concat's inputs, in place and in order.
int flatten_concat(Graph& graph);

// Fuses the layer normalization PyTorch exports before opset 17, written out
// in primitive operators, into one LayerNormalization node:
//   m = ReduceMean(x, axes, keepdims=1);  d = Sub(x, m)
//   v = ReduceMean(Pow(d, 2), axes, keepdims=1)
//   y = Div(d, Sqrt(Add(v, eps)))
//   [y = Mul(y, gamma)]  [y = Add(y, beta)]
// Rule: axes are the trailing axes of x from some axis on (the normalized
// dims); both reductions read the same x and reduce the same axes; the
// exponent is one constant exactly 2; eps is one constant value >= 0 (either
// side of its Add); every intermediate is read only inside the pattern (d by
// the Pow and the Div, the others once) and is not a graph output; nothing
// changes the shape of x. gamma and beta (either operand order) are
// constants broadcasting to the normalized dims; they become Scale and B
// (without a Mul, Scale is ones; without an Add, there is no B). The
// LayerNormalization writes the pattern's last output tensor, so downstream
// names are unchanged. Anything else is left as it is (it runs as plain
// operators).
int fuse_layer_norm(Graph& graph);

// Replaces each element-wise chain that computes GELU with one Gelu node, so
// that a MatMul or Conv unit takes the whole activation as one epilogue step
// (5 to 9 element-wise nodes and their intermediate tensors otherwise). The
// chains recognised are PyTorch's exports of nn.GELU() and
// nn.GELU(approximate='tanh') (opsets 13-17), the same products in other
// operand orders and groupings, and the importer's expansion of ONNX Gelu:
//   erf:  0.5 * x * (1 + erf(x / sqrt(2)))          (or x * (1/sqrt(2)))
//   tanh: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
//         with x^3 as Pow(x, 3), x * (x * x) or (x * x) * x.
// Rule: every constant is a one-element tensor within 1e-6 (relative) of the
// value above, every x is the same tensor, every intermediate value is read
// once by the next node of the chain and is no graph output, and the result
// has x's shape. Anything else stays as the element-wise nodes it was.
int fuse_gelu(Graph& graph);

// Replaces Mish as exporters write it before opset 18 (and as the importer
// expands ONNX Mish, which libonnx 1.12 does not know), x * tanh(softplus(x))
// with the product in either order, by one Mish node, so that the producer's
// unit takes it as one epilogue step. Rule: Softplus and Tanh outputs read
// once, by the next node of the chain, and no graph output; the Softplus
// reads the same x as the Mul; the result has x's shape.
int fuse_mish(Graph& graph);

// Removes nodes none of whose outputs is read or is a graph output (left
// behind by folding); repeats until nothing changes.
int remove_dead_nodes(Graph& graph);

struct PassStats {
  int batchnorm_folded = 0;
  int pads_folded = 0;
  int concats_flattened = 0;
  int layer_norms_fused = 0;
  int gelus_fused = 0;
  int mishes_fused = 0;
  int dead_removed = 0;
};

// The importer's pipeline, in this order: fold_batchnorm, fold_pad,
// flatten_concat, fuse_layer_norm, fuse_gelu, fuse_mish, remove_dead_nodes.
PassStats run_import_passes(Graph& graph);

}  // namespace ios::ir
