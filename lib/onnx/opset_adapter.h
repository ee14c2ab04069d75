// Models newer than the ONNX library ios links: IR versions 9-10 and opsets
// 18-21, what PyTorch 2.x's default exporter writes.
//
// Debian 12's libonnx (1.12) checks models up to IR 8 and knows schemas up to
// opset 17. Rather than a second checker, ios rewrites a newer model into the
// equivalent IR 8 / opset 17 model and lets libonnx check and infer that:
//   - IR 9-10 add float8 and int4 element types (refused here: ios runs float32
//     models) and function overloads; nothing else a CNN file uses changed;
//   - opsets 18-21 changed the operators ios reads in these ways, each rewritten
//     to its opset-17 form:
//       Reduce* (not ReduceSum) axes input (18) -> `axes` attribute
//       Split `num_outputs` attribute (18)      -> split sizes input
//       Pad `axes` input (18)                   -> pads for every axis
//       Pad mode "wrap" (19)                    -> refused
//       AveragePool `dilations` (19)            -> dropped when all 1, else refused
//       Cast `saturate` (19, float8 only)       -> dropped
//       Gelu (20)                               -> its erf or tanh chain, which
//                                                  ir::fuse_gelu makes one node again
//       Mish (18)                               -> x * tanh(softplus(x)), which
//                                                  ir::fuse_mish makes one node again
//     every other change in 18-21 to an operator ios reads only adds element
//     types (bfloat16, float8, int4), which the checks on stored tensors and
//     inputs refuse.
// What the rewrite cannot establish (an axes input computed at run time, an
// unknown rank) is a UserError naming the node.
//
// Models older than the operators' forms ios reads: opsets 1-6, what ONNX's
// own PyTorch test suites and early exporters (IR 3) wrote. Opset 7 changed
// the element-wise operators from the `broadcast` attribute to numpy
// broadcasting and dropped the `is_test` / `consumed_inputs` attributes of
// BatchNormalization, Dropout and the activations; ONNX's version converter
// (libonnx's onnx/version_converter, whose adapters cover exactly these
// changes) rewrites such a model to opset 9 after libonnx's checker accepted
// it at its own opset. Opset 9 rather than 7: PyTorch's opset-6 exports hold
// int64 Constants (a Reshape target, Tile's repeats), which the Constant
// schema accepts only from opset 9. One opset-6 form the converter leaves alone is
// rewritten before it: PRelu's 1-D slope of C values, per channel before
// opset 7, becomes a [C, 1, ...] constant. A model at IR <= 8 and opset 7-17 passes through
// untouched.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>

namespace ios::onnx {

// What libonnx's checker and shape inference read.
inline constexpr int64_t kCheckerMaxIrVersion = 8;
inline constexpr int64_t kCheckerMaxOpset = 17;
// What ios reads (through the rewrite).
inline constexpr int64_t kMaxIrVersion = 10;
inline constexpr int64_t kMaxOpset = 21;
// Older models are converted to kConvertedOpset first (ONNX's version converter).
inline constexpr int64_t kMinOpset = 7;
inline constexpr int64_t kConvertedOpset = 9;

struct AdaptedVersions {
  int64_t ir_version = 0;  // as the file declares them
  int64_t opset = 0;
  int nodes_rewritten = 0;
  bool converted = false;  // converted to kConvertedOpset by ONNX's version converter
};

// Rewrites `model` (already through check_tensors) into its IR 8 / opset
// 7-17 form. Throws UserError naming `file` for
// versions newer than ios reads and for forms without an opset-17 equivalent.
AdaptedVersions adapt_to_checker_versions(::onnx::ModelProto& model, const std::string& file);

}  // namespace ios::onnx
