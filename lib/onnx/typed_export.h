// The half-precision graph ios scheduled, written as ONNX for other runtimes
// (ios-optimize --write-onnx; docs/cli.md, *Precision*).
#pragma once

#include <string>

#include "ir/graph.h"

namespace ios::onnx {

// Writes the model file `source` (which ios imported into `graph` and
// converted, ir/half_conversion.h) to `out` with the element types ios runs:
//  - every tensor the IR keeps has its IR type; each node computes in the
//    type of the tensor the IR has for its output, with a Cast on every
//    input of another type (named as ios names its Casts:
//    "<tensor>/to_half", "<tensor>/to_float32");
//  - nodes that ios fuses or folds (LayerNorm and GELU chains, BatchNorm
//    after a convolution, shape arithmetic) stay float32 inside, as ios's
//    fused operators compute, and are cast where the IR stores a 16-bit value;
//  - weights read by 16-bit nodes are rounded to nearest even, the inputs
//    that stay float32 in ONNX (Resize's scales and roi) excepted;
//  - Identity and Dropout pass their input's type on.
// The opsets are the file's. producer_name is kOnnxProducer
// (core/output_files.h). The file is written atomically. ONNX's opset-17
// schemas have no bfloat16 for Conv, MaxPool and Gemm, so a bfloat16 file
// passes ONNX's checker but not its strict shape inference.
void write_typed_model(const std::string& source, const ir::Graph& graph, const std::string& out);

}  // namespace ios::onnx
