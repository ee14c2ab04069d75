// ConvTranspose: 1-D, 2-D and 3-D transposed convolution (U-Net's
// up-sampling), grouped and dilated, with output padding, explicit or
// automatic pads, or an output_shape; bias optional.
//
// Its entry in the operator table (ir/op_info.h), with its attribute parser,
// shape function and work (docs/architecture.md, "Adding an operator").

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/ranges.h>

#include "ir/op_definition.h"

namespace ios::ir::ops {
namespace {

// The largest output length ios makes along one axis: the attributes are
// file data, and a transposed convolution's output grows with them.
constexpr int64_t kMaxLength = int64_t{1} << 24;

// Output length before padding is removed: s * (in - 1) + op + (k - 1) * d + 1.
int64_t full_length(int64_t in, int64_t k, int64_t s, int64_t d, int64_t op) {
  return s * (in - 1) + op + (k - 1) * d + 1;
}

Attrs parse_conv_transpose(const AttributeReader& r, const Shapes& in) {
  const Shape& x = in.at(0);
  const Shape& w = in.at(1);
  const size_t rank = window_rank(r, x, "ConvTranspose");
  if (w.size() != x.size()) {
    r.fail("weights have shape {}; a {}-D transposed convolution takes weights of rank {}",
           to_string(w), rank, x.size());
  }
  ConvTransposeAttrs a;
  a.kernel = spatial_attr(r, "kernel_shape", rank, Dims(w.begin() + 2, w.end()));
  a.stride = spatial_attr(r, "strides", rank, filled(rank, 1));
  a.dilation = spatial_attr(r, "dilations", rank, filled(rank, 1));
  a.pads = filled(2 * rank, 0);
  a.output_padding = filled(rank, 0);
  a.group = r.get_int("group", 1);
  if (a.group < 1) r.fail("group {} must be at least 1", a.group);
  for (size_t k = 0; k < rank; ++k) {
    if (a.stride[k] < 1 || a.dilation[k] < 1) {
      r.fail("strides [{}] and dilations [{}] must be at least 1", fmt::join(a.stride, ", "),
             fmt::join(a.dilation, ", "));
    }
  }
  const auto output_padding = r.get_ints("output_padding").value_or(filled(rank, 0));
  if (output_padding.size() != rank) {
    r.fail("output_padding has {} values; a {}-D transposed convolution takes {}",
           output_padding.size(), rank, rank);
  }
  for (size_t k = 0; k < rank; ++k) {
    const int64_t op = output_padding[k];
    // ONNX: smaller than the stride or the dilation; beyond both it adds
    // rows that no input reaches.
    if (op < 0 || (op >= a.stride[k] && op >= a.dilation[k])) {
      r.fail("output_padding [{}] must be at least 0 and smaller than the stride ({}) or the dilation ({}); "
             "re-export with a smaller output_padding", fmt::join(output_padding, ", "), a.stride[k],
             a.dilation[k]);
    }
    a.output_padding[k] = op;
  }
  const std::string auto_pad = r.get_string("auto_pad", "NOTSET");
  const auto output_shape = r.get_ints("output_shape");
  if (output_shape || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    if (r.has("pads")) r.fail("has pads together with {}; ONNX computes the pads from it", output_shape ? "output_shape" : "auto_pad");
    Dims target(rank);
    if (output_shape) {
      // Either the spatial dims or the whole [N, C, spatial...].
      if (output_shape->size() != rank && output_shape->size() != rank + 2) {
        r.fail("output_shape [{}] must give the {} spatial lengths (or N, C and them)",
               fmt::join(*output_shape, ", "), rank);
      }
      target.assign(output_shape->end() - static_cast<std::ptrdiff_t>(rank), output_shape->end());
    } else {
      for (size_t k = 0; k < rank; ++k) {
        target[k] = x[2 + k] * a.stride[k];
        // The specification (and ONNX Runtime) make the output input times
        // stride; ONNX's shape inference instead pads by the effective
        // kernel less the stride, at least 0, which differs with an
        // output_padding or a stride past the kernel. Refuse rather than
        // pick one of the two lengths.
        const int64_t effective = (a.kernel[k] - 1) * a.dilation[k] + 1;
        const int64_t inferred =
            full_length(x[2 + k], a.kernel[k], a.stride[k], a.dilation[k], a.output_padding[k]) -
            std::max<int64_t>(0, effective - a.stride[k]);
        if (inferred != target[k]) {
          r.fail(
              "auto_pad {} with kernel {}, stride {}, dilation {} and output_padding {} on "
              "axis {}: ONNX's shape inference gives length {}, the ONNX specification {}; "
              "re-export with explicit pads",
              auto_pad, a.kernel[k], a.stride[k], a.dilation[k], a.output_padding[k], 2 + k,
              inferred, target[k]);
        }
      }
    }
    for (size_t k = 0; k < rank; ++k) {
      if (target[k] < 1) r.fail("output length {} along axis {} must be at least 1", target[k], 2 + k);
      const int64_t total = full_length(x[2 + k], a.kernel[k], a.stride[k], a.dilation[k], a.output_padding[k]) - target[k];
      if (total < 0) {
        // Longer than the full output: ONNX's negative end pad, rows that
        // no input reaches (the bias alone), which is more output padding.
        a.output_padding[k] += -total;
        continue;
      }
      // ONNX: SAME_UPPER puts the extra pad at the end; otherwise at the start.
      const int64_t half = total / 2;
      a.pads[k] = auto_pad == "SAME_UPPER" ? half : total - half;
      a.pads[k + rank] = total - a.pads[k];
    }
    return a;
  }
  if (auto_pad != "NOTSET" && auto_pad != "VALID") {
    r.fail("auto_pad '{}' is not supported; use NOTSET, VALID, SAME_UPPER or SAME_LOWER", auto_pad);
  }
  if (auto_pad == "NOTSET") {
    if (auto pads = r.get_ints("pads")) {
      if (pads->size() != 2 * rank) {
        r.fail("pads has {} values; a {}-D transposed convolution takes {}", pads->size(), rank,
               2 * rank);
      }
      for (int64_t p : *pads) {
        if (p < 0) r.fail("pads [{}] must be at least 0", fmt::join(*pads, ", "));
      }
      a.pads = *pads;
    }
  }
  return a;
}

Shape conv_transpose_one(const Node& node, const std::vector<Shape>& in) {
  need_inputs(node, in, 2, 3);
  const auto& a = node.attr<ConvTransposeAttrs>();
  const size_t rank = a.spatial_rank();
  need_rank(node, in, 0, rank + 2);
  need_rank(node, in, 1, rank + 2);
  if (rank < 1 || rank > 3 || a.stride.size() != rank || a.dilation.size() != rank ||
      a.pads.size() != 2 * rank || a.output_padding.size() != rank) {
    fail(node, in, "the attributes do not describe a {}-D transposed convolution", rank);
  }
  const Shape& x = in[0];
  const Shape& w = in[1];
  // Weights [C_in, C_out / group, k...].
  if (a.group < 1 || x[1] != w[0] || w[0] % a.group != 0) {
    fail(node, in, "{} input channels do not fit weights {} with group {}", x[1], to_string(w), a.group);
  }
  if (!std::equal(a.kernel.begin(), a.kernel.end(), w.begin() + 2)) {
    fail(node, in, "kernel {} differs from the weight shape", to_string(a.kernel));
  }
  const int64_t channels = w[1] * a.group;
  if (in.size() == 3 && in[2] != Shape{channels}) fail(node, in, "the bias must have shape {}", channels);
  Shape out{x[0], channels};
  for (size_t k = 0; k < rank; ++k) {
    if (a.kernel[k] < 1 || a.stride[k] < 1 || a.dilation[k] < 1 || a.pads[k] < 0 ||
        a.pads[k + rank] < 0) {
      fail(node, in, "kernel, stride and dilation must be >= 1 and pads >= 0");
    }
    // Each term is at most 2^20 (the importer's attribute bounds) times an
    // input length, so the sum cannot overflow before this check.
    const int64_t length =
        full_length(x[2 + k], a.kernel[k], a.stride[k], a.dilation[k], a.output_padding[k]) -
        a.pads[k] - a.pads[k + rank];
    if (length < 1) fail(node, in, "the pads leave no output along axis {}", 2 + k);
    if (length > kMaxLength) {
      fail(node, in, "the output would be {} long along axis {}, more than 2^24; check strides and dilations", length,
           2 + k);
    }
    out.push_back(length);
  }
  return out;
}

Shapes conv_transpose_shapes(const Node& node, const Shapes& in) { return {conv_transpose_one(node, in)}; }

// Each input element meets C_out/group times the kernel's volume of weights: the products per
// output element are that times the input's elements over the output's.
double conv_transpose_flops(const Graph& g, const Node& n) {
  const Shape& w = input_shape(g, n, 1);
  const double products = static_cast<double>(num_elements(input_shape(g, n, 0))) *
                          static_cast<double>(num_elements(w) / w[0]);
  const bool bias = n.inputs.size() > 2;
  return 2.0 * products + (bias ? output_elements(g, n) : 0.0);
}

double conv_transpose_reduction(const Graph& g, const Node& n) {
  const double out = output_elements(g, n);
  const Shape& w = input_shape(g, n, 1);
  const double products = static_cast<double>(num_elements(input_shape(g, n, 0))) *
                          static_cast<double>(num_elements(w) / w[0]);
  return out > 0 ? std::max(1.0, products / out) : 1.0;
}

}  // namespace

OpInfo conv_transpose_op() {
  return work(inputs(op(OpKind::kConvTranspose, "ConvTranspose", 1, parse_conv_transpose, conv_transpose_shapes,
                        anchor(OpClass::kConv)),
                     up_to_three),
              0, conv_transpose_flops, conv_transpose_reduction);
}

}  // namespace ios::ir::ops
