// Import-time evaluation of the shape arithmetic exporters emit.
//
// PyTorch's exporter writes shape computations as small subgraphs (Shape ->
// Gather -> Unsqueeze -> Concat -> Reshape, Constant nodes, ConstantOfShape,
// Cast, Slice of constant lists, ...). Once every input shape is static these
// compute constants; evaluating them here leaves only the compute operators
// the IR supports and turns attribute-like inputs (Reshape targets, Slice
// bounds, Split sizes, Clip bounds, Pad amounts) into initializers.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <unordered_map>

#include "ir/graph.h"

namespace ios::onnx {

// Static shapes known for tensor names (graph inputs, value_info, outputs).
using ShapeMap = std::unordered_map<std::string, ir::Shape>;

// Shapes of every tensor of the graph whose shape ONNX's inference made fully
// static (initializers included).
ShapeMap static_shapes(const ::onnx::GraphProto& graph);

// The default-domain opset the model imports.
int64_t default_opset(const ::onnx::ModelProto& model);

// Evaluates every node of a foldable op type (the shape-arithmetic set:
// Constant, Shape, Size, Gather, Unsqueeze, Squeeze, Concat, Cast, Reshape,
// Flatten, Transpose, Slice, Expand, ConstantOfShape, Range, ScatterND,
// Identity, Dropout, Add, Sub, Mul, Div, Mod, Neg, Abs, Floor, Ceil, Sqrt, Min, Max, Equal, Less,
// Greater, Not, Where) whose inputs are all constants (Shape and Size: whose
// input shape is static), removes it, and records its outputs as
// initializers. Nodes making graph outputs are kept. Returns the number of
// nodes folded; shape inference should run again after a non-zero return.
int fold_constants(::onnx::ModelProto& model, const ShapeMap& shapes, const std::string& file);

// True for the op types fold_constants can evaluate.
bool is_foldable_op(const std::string& op_type);

}  // namespace ios::onnx
