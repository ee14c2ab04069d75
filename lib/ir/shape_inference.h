// ios's own static shape inference over the IR.
//
// Every node's output shapes are recomputed from its input shapes and its
// normalized attributes (graph inputs and weights keep theirs). The importer
// runs it after building the IR and again after the IR passes, and checks the
// result against ONNX's shape inference tensor by tensor: the two are written
// independently, so a disagreement exposes a bug in one of them (or in an
// attribute normalization) before any kernel runs.
#pragma once

#include "ir/graph.h"

namespace ios::ir {

// Recomputes Tensor::shape of every node output, in topological order.
// Throws UserError naming the node (name, op type and its input shapes) when
// the input shapes do not fit the operator (channel mismatch, shapes that do
// not broadcast, a window larger than the padded input, ...).
void infer_shapes(Graph& graph);

// Output shapes of one node given its input shapes (used by infer_shapes and
// by passes that need a shape before the node exists in a graph).
std::vector<Shape> infer_node_shapes(const Node& node, const std::vector<Shape>& input_shapes);

// Numpy-style broadcast of two shapes; std::nullopt when they do not broadcast.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);

// Output size of one spatial axis of a Conv / pooling window (ONNX formula;
// ceil_mode rounds the number of strides up). Returns <= 0 when the window
// does not fit.
int64_t window_output_size(int64_t input, int64_t kernel, int64_t stride, int64_t dilation,
                           int64_t pad_begin, int64_t pad_end, bool ceil_mode);

}  // namespace ios::ir
