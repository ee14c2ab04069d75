// Translation of a checked, shape-inferred and constant-folded ONNX graph
// into ir::Graph, with attributes normalized to the IR's conventions
// (ir/graph.h): pads {top, left, bottom, right}, non-negative axes, Reshape
// targets resolved, Slice bounds clamped, Split sizes explicit, Clip bounds
// and Pad amounts taken from their (constant) inputs whatever the opset.
// Identity and Dropout are dropped here: their output aliases their input.
// A Gather of an activation at one constant index becomes a Slice of length 1
// on its axis (and a Reshape dropping the axis when the index is a scalar).
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

#include "ir/graph.h"
#include "onnx/constant_folding.h"
#include "onnx/element_types.h"

namespace ios::onnx {

// `shapes` must hold a static shape for every tensor a node reads or makes;
// the builder adds the shapes of the tensors it introduces itself (the
// Slice output of a Gather it imports as Slice and Reshape), so that `shapes`
// names every activation of the IR.
// `declared` gives Cast nodes their 16-bit targets (onnx/element_types.h);
// every IR tensor is float32 until ir::assign_element_types runs.
// Throws UserError naming `file` and the node for unsupported operators,
// non-constant attribute inputs, non-float32 weights and unsupported
// attribute values. Each float32 weight larger than 4 KiB leaves `model`
// (its data is released) once the IR holds it, so that the weights are in
// memory once while the graph is built.
ir::Graph build_ir(::onnx::ModelProto& model, ShapeMap& shapes, const DeclaredTypes& declared,
                   const std::string& file);

// ONNX op types that become IR nodes, plus Identity and Dropout.
bool is_supported_op(const std::string& op_type);

// "Conv, Relu, ..." for error messages.
std::string supported_ops_list();

}  // namespace ios::onnx
