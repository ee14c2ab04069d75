// Conversion of a float32 graph to half precision, the way the autocast
// tools deployers use do it (onnxconverter-common's float16 converter,
// TensorRT's strongly typed autocast): every operator computes and stores in
// the 16-bit type, except the numerically sensitive ones and the nodes the
// user keeps, which stay float32 with Casts around them; graph inputs and
// outputs stay float32 unless asked otherwise. Casts are real IR nodes
// (OpKind::kCast), so every backend, the cost models and the schedule see
// exactly where values are rounded.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace ios::ir {

struct ConversionOptions {
  ElementType type = ElementType::kFloat16;  // kFloat16 or kBFloat16
  bool half_io = false;                      // graph inputs and outputs in `type` too
  // Node names or operator types (ONNX names: "Softmax") kept in float32,
  // beside the sensitive operators (kept_in_float32).
  std::vector<std::string> keep_fp32;
  // Where keep_fp32 came from, for the message about an entry that names
  // nothing: "--keep-fp32", or a schedule file's "precision.keep_fp32".
  std::string keep_fp32_origin = "--keep-fp32";
};

// --keep-fp32's value: names separated by commas; a comma inside a name is
// written "\,", a backslash "\\". Throws UserError for an empty entry
// (",", "a,,b", a trailing comma) and a backslash before anything else.
std::vector<std::string> parse_keep_fp32(std::string_view text);

// The --keep-fp32 argument that names `name` alone, as a message advises
// it: commas and backslashes escaped as parse_keep_fp32 reads them, in
// single quotes where a shell would otherwise split or expand it. A name
// that holds a control character or is longer than 200 bytes cannot be
// typed back usefully: its operator type `op_type` is advised instead.
std::string keep_fp32_argument(std::string_view name, std::string_view op_type);

// The operators that always stay float32: normalizations, Softmax and
// LogSoftmax, the summing reductions, Exp and Pow. Their kernels accumulate
// in float32 anyway; what stays float32 is what they store, which the next
// operator reads (a variance, a probability, a sum of many terms).
bool kept_in_float32(OpKind op);

struct ConversionStats {
  int half_nodes = 0;
  int float32_nodes = 0;  // the sensitive and the kept
  int casts = 0;          // Cast nodes placed
};

// Converts `graph`, which must be float32 throughout. Inserted Casts are
// named "<tensor>/to_half" or "<tensor>/to_float32" (the same for fp16 and
// bf16, so that a schedule's units name both conversions); a graph output
// kept float32 keeps its name (the half producer's tensor takes
// "<name>/half"). Weights are
// rounded to their node's type. Throws UserError naming `source` for an
// entry of keep_fp32 that names no node or operator type of the graph, and
// for a weight beyond the 16-bit type's range (naming the node and the
// option that keeps it).
ConversionStats convert_to_half(Graph& graph, const ConversionOptions& options,
                                const std::string& source);

}  // namespace ios::ir
