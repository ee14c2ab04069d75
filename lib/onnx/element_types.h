// 16-bit floating models at the importer's door. The importer, ONNX's
// checker and shape inference see a float32 model: every float16 and
// bfloat16 weight, Constant, graph input and output, value_info and Cast
// target is rewritten to float32 here, its 16-bit type recorded by tensor
// name, and ir::assign_element_types gives the IR tensors those types back
// after the graph is built. The reason: ONNX 1.12's schemas list bfloat16
// for few operators before opset 22 (Conv, MaxPool, Gemm have none), so
// shape inference with type checks would reject every bfloat16 CNN that a
// converter writes, and constant folding evaluates in double anyway.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <string_view>
#include <unordered_map>

#include "ir/element_type.h"

namespace ios::ir {
class Graph;
}

namespace ios::onnx {

// The 16-bit type the file declared, by tensor name: weights and Constant
// outputs, graph inputs and outputs, and the outputs of Cast nodes to a
// 16-bit type (Casts to float32 are recorded too, as kFloat32, and so are
// float32 weights and graph outputs, for check_declared_types).
using DeclaredTypes = std::unordered_map<std::string, ir::ElementType>;

// Rewrites `model` as described above. Weights decode exactly (every float16
// and bfloat16 value is a float32). Throws UserError naming the tensor for
// 16-bit data that does not decode.
DeclaredTypes store_16bit_as_float(::onnx::ModelProto& model, const std::string& path);

// ONNX's type rules, which its checker cannot apply to the widened model:
// an operator whose inputs share one element type (Conv, Gemm, MatMul, the
// binary element-wise operators, Concat) reading a weight the file declared
// in another type than its activation input (a float16 Conv with a float32
// weight), and a graph output declared in another type than the graph
// computes it in. Throws UserError naming the node or the output. Call it on
// the imported graph after ir::assign_element_types.
void check_declared_types(const ir::Graph& graph, const DeclaredTypes& declared, const std::string& path);

// A tensor of a type narrower than float32 (float16, bfloat16: the element
// type table's) rewritten as float32 values: raw_data holds the bit patterns
// little-endian, int32_data one pattern per entry.
// Throws UserError naming `path`, `where` and the tensor when the data does
// not match the dimensions.
void widen_to_float(::onnx::TensorProto& t, const std::string& path, std::string_view where);

}  // namespace ios::onnx
