// Resize (opset 10+) and Upsample (opset 7-9): resampling on the spatial axes
// of N,C,L, N,C,H,W and N,C,T,H,W tensors (linear is linear, bilinear or
// trilinear by rank), a window operator like a pool (it takes epilogues).
//
// Its entries in the operator table (ir/op_info.h), with their attribute
// parsers, shape functions and work (docs/architecture.md, "Adding an
// operator").

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <fmt/ranges.h>

#include "ir/op_definition.h"
#include "ir/resize_math.h"

namespace ios::ir::ops {
namespace {

// Input indices of the scales and sizes: Upsample-9 and Resize-10 take
// (X, scales); Resize-11+ takes (X, roi, scales, sizes). -1: no such input.
struct ResizeInputs {
  int scales = -1;
  int sizes = -1;
};

ResizeInputs resize_inputs(const AttributeReader& r, bool upsample) {
  if (upsample) return {r.opset() >= 9 ? 1 : -1, -1};
  if (r.opset() < 11) return {1, -1};
  return {2, 3};
}

resize::Coordinates resize_coordinates(const AttributeReader& r) {
  const std::string c = r.get_string("coordinate_transformation_mode", "half_pixel");
  if (c == "half_pixel") return resize::Coordinates::kHalfPixel;
  if (c == "pytorch_half_pixel") return resize::Coordinates::kPytorchHalfPixel;
  if (c == "align_corners") return resize::Coordinates::kAlignCorners;
  if (c == "asymmetric") return resize::Coordinates::kAsymmetric;
  r.fail(
      "coordinate_transformation_mode '{}' is not supported (supported: half_pixel, "
      "pytorch_half_pixel, "
      "align_corners, asymmetric)",
      c);
}

resize::Nearest resize_nearest(const AttributeReader& r) {
  const std::string n = r.get_string("nearest_mode", "round_prefer_floor");
  if (n == "round_prefer_floor") return resize::Nearest::kRoundPreferFloor;
  if (n == "round_prefer_ceil") return resize::Nearest::kRoundPreferCeil;
  if (n == "floor") return resize::Nearest::kFloor;
  if (n == "ceil") return resize::Nearest::kCeil;
  r.fail(
      "nearest_mode '{}' is not supported (supported: round_prefer_floor, round_prefer_ceil, "
      "floor, ceil)",
      n);
}

Attrs parse_resize(const AttributeReader& r, const Shapes& in) {
  const Shape& x = in.at(0);
  const size_t spatial = window_rank(r, x, r.op_type());
  const size_t rank = x.size();
  const bool upsample = r.op_type() == "Upsample";
  ResizeAttrs a;
  a.scale.assign(spatial, 1.0f);
  a.size.assign(spatial, 1);
  const std::string mode = r.get_string("mode", "nearest");
  if (mode == "nearest") {
    a.mode = resize::Mode::kNearest;
  } else if (mode == "linear" || (upsample && (mode == "bilinear" || mode == "trilinear"))) {
    a.mode = resize::Mode::kLinear;
  } else {
    r.fail("mode '{}' is not supported (supported: nearest, linear)", mode);
  }
  const bool legacy = upsample || r.opset() < 11;
  if (legacy) {
    // Upsample and Resize-10: asymmetric coordinates; nearest floors when
    // enlarging and rounds up when shrinking (ONNX Runtime's rule for them).
    a.coordinates = resize::Coordinates::kAsymmetric;
    a.nearest = resize::Nearest::kSimple;
  } else {
    a.coordinates = resize_coordinates(r);
    a.nearest = resize_nearest(r);
    if (r.get_int("exclude_outside", 0) != 0) r.fail("exclude_outside 1 is not supported (only 0)");
    if (r.get_int("antialias", 0) != 0) r.fail("antialias 1 is not supported (only 0)");
    if (r.has("axes"))
      r.fail("the axes attribute is not supported; give scales or sizes for every axis");
    const std::string policy = r.get_string("keep_aspect_ratio_policy", "stretch");
    if (policy != "stretch")
      r.fail("keep_aspect_ratio_policy '{}' is not supported (only stretch)", policy);
  }

  const ResizeInputs inputs = resize_inputs(r, upsample);
  std::optional<std::vector<double>> scales;
  if (inputs.scales < 0) {
    const auto v = r.get_floats("scales");
    if (!v) r.fail("the scales attribute is missing");
    scales = std::vector<double>(v->begin(), v->end());
  } else {
    scales = r.constant_values(inputs.scales, "scales");
  }
  if (scales && scales->empty())
    scales.reset();  // Resize-11+: an empty scales input with sizes given
  std::optional<std::vector<int64_t>> sizes;
  if (inputs.sizes >= 0) sizes = r.constant_ints(inputs.sizes, "sizes");
  if (sizes && sizes->empty()) sizes.reset();
  if (scales.has_value() == sizes.has_value())
    r.fail("exactly one of scales and sizes must be given");

  if (scales) {
    if (scales->size() != rank) r.fail("has {} scales for a {}-D input", scales->size(), rank);
    if ((*scales)[0] != 1.0 || (*scales)[1] != 1.0) {
      r.fail("resizes the batch or channel axis (scales [{}]); only the spatial axes are resized",
             fmt::join(*scales, ", "));
    }
    for (size_t d = 0; d < spatial; ++d) {
      const auto s = static_cast<float>((*scales)[2 + d]);
      if (!(s > 0.0f) || !std::isfinite(s))
        r.fail("scale {} is not a positive finite number", (*scales)[2 + d]);
      a.scale[d] = s;
      // ONNX: output = floor(input * scale), computed in float as ONNX Runtime does.
      const float out = std::floor(static_cast<float>(x[2 + d]) * s);
      if (!(out >= 1.0f) || out > static_cast<float>(int64_t{1} << 31)) {
        r.fail("scale {} gives {} rows or columns from {}", s, out, x[2 + d]);
      }
      a.size[d] = static_cast<int64_t>(out);
      // align_corners divides by the output length less one: ONNX's reference
      // takes input * scale unfloored, ONNX Runtime and PyTorch the output
      // length. Refuse the case where they differ.
      if (a.coordinates == resize::Coordinates::kAlignCorners &&
          static_cast<float>(x[2 + d]) * s != out) {
        r.fail(
            "align_corners with scale {} on length {} gives the non-integer length {} (ONNX's "
            "reference "
            "and ONNX Runtime interpolate it differently); give sizes instead of scales",
            s, x[2 + d], static_cast<float>(x[2 + d]) * s);
      }
    }
  } else {
    if (sizes->size() != rank) r.fail("has {} sizes for a {}-D input", sizes->size(), rank);
    if ((*sizes)[0] != x[0] || (*sizes)[1] != x[1]) {
      r.fail(
          "resizes the batch or channel axis (sizes [{}] for input {}); only the spatial axes are "
          "resized",
          fmt::join(*sizes, ", "), to_string(x));
    }
    for (size_t d = 0; d < spatial; ++d) {
      const int64_t out = (*sizes)[2 + d];
      if (out < 1 || out > (int64_t{1} << 31)) r.fail("size {} is out of range", out);
      a.size[d] = out;
      a.scale[d] = static_cast<float>(out) / static_cast<float>(x[2 + d]);
    }
  }
  return a;
}

Shapes resize_shapes(const Node& node, const Shapes& in) {
  need_inputs(node, in, 1, 1);
  const auto& a = node.attr<ResizeAttrs>();
  need_rank(node, in, 0, a.spatial_rank() + 2);
  if (a.scale.size() != a.size.size())
    fail(node, in, "{} scales for {} sizes", a.scale.size(), a.size.size());
  for (int64_t size : a.size) {
    if (size < 1) fail(node, in, "output size {} is empty", to_string(a.size));
  }
  Shape out{in[0][0], in[0][1]};
  out.insert(out.end(), a.size.begin(), a.size.end());
  return {out};
}

// Linear interpolation reads 2^axes taps: one multiply and one add per tap
// for the weighted sum, and the taps' weights, a product of one weight per
// axis (bilinear: four weight products, four multiplies, three adds: 11;
// ir/resize_math.h); nearest only copies.
double resize_taps(const Node& n) {
  return static_cast<double>(int64_t{1} << n.attr<ResizeAttrs>().spatial_rank());
}

double resize_flops(const Graph& g, const Node& n) {
  if (n.attr<ResizeAttrs>().mode != resize::Mode::kLinear) return 0.0;
  const double taps = resize_taps(n);
  const double axes = static_cast<double>(n.attr<ResizeAttrs>().spatial_rank());
  return (taps * (axes - 1.0) + 2.0 * taps - 1.0) * output_elements(g, n);
}

double resize_reduction(const Graph&, const Node& n) {
  return n.attr<ResizeAttrs>().mode == resize::Mode::kLinear ? resize_taps(n) : 1.0;
}

}  // namespace

OpInfo resize_op() {
  return work(
      legacy(op(OpKind::kResize, "Resize", 10, parse_resize, resize_shapes, anchor(OpClass::kPool)),
             "Upsample", 7, 9),
      0, resize_flops, resize_reduction);
}

}  // namespace ios::ir::ops
