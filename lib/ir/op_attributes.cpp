// Attribute parsers of the operator table (ir/op_attributes.h).
#include "ir/op_attributes.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "ir/layer_norm.h"

namespace ios::ir::attrs {
namespace {

int64_t normalize_axis(const AttributeReader& r, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) r.fail("axis {} out of range for rank {}", axis, rank);
  return axis < 0 ? axis + rank : axis;
}

std::array<int64_t, 4> window_pads(const AttributeReader& r, const Shape& x, const std::array<int64_t, 2>& kernel,
                                   const std::array<int64_t, 2>& stride, const std::array<int64_t, 2>& dilation) {
  const std::string auto_pad = r.get_string("auto_pad", "NOTSET");
  std::array<int64_t, 4> pads{0, 0, 0, 0};
  if (auto_pad == "NOTSET") {
    const auto p = r.get_ints("pads").value_or(std::vector<int64_t>(4, 0));
    if (p.size() != 4) r.fail("pads has {} entries, expected 4", p.size());
    std::copy(p.begin(), p.end(), pads.begin());  // ONNX {H_begin, W_begin, H_end, W_end}
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t a = 0; a < 2; ++a) {
      const int64_t in = x[2 + a];
      const int64_t out = (in + stride[a] - 1) / stride[a];
      const int64_t total = std::max<int64_t>(0, (out - 1) * stride[a] + dilation[a] * (kernel[a] - 1) + 1 - in);
      const int64_t small = total / 2, large = total - small;
      pads[a] = auto_pad == "SAME_UPPER" ? small : large;
      pads[a + 2] = auto_pad == "SAME_UPPER" ? large : small;
    }
  } else if (auto_pad != "VALID") {
    r.fail("unknown auto_pad '{}'", auto_pad);
  }
  return pads;
}

std::array<int64_t, 2> pair_attr(const AttributeReader& r, const char* name, std::array<int64_t, 2> fallback) {
  const auto v = r.get_ints(name);
  if (!v) return fallback;
  if (v->size() != 2) r.fail("{} has {} entries; only 2-D (NCHW) windows are supported", name, v->size());
  return {(*v)[0], (*v)[1]};
}

void need_rank(const AttributeReader& r, const Shape& x, size_t rank, const char* what) {
  if (x.size() != rank) r.fail("input has shape {}; {}", to_string(x), what);
}

Attrs pool(const AttributeReader& r, const Shape& x, bool average) {
  need_rank(r, x, 4, "only 2-D pooling (4-D NCHW input) is supported");
  PoolAttrs a;
  if (!r.has("kernel_shape")) r.fail("kernel_shape is missing");
  a.kernel = pair_attr(r, "kernel_shape", {1, 1});
  a.stride = pair_attr(r, "strides", {1, 1});
  const auto dilation = pair_attr(r, "dilations", {1, 1});
  if (dilation != std::array<int64_t, 2>{1, 1}) r.fail("dilated pooling is not supported");
  a.ceil_mode = r.get_int("ceil_mode", 0) != 0;
  a.count_include_pad = average && r.get_int("count_include_pad", 0) != 0;
  a.pads = window_pads(r, x, a.kernel, a.stride, {1, 1});
  if (!average) {
    if (r.get_int("storage_order", 0) != 0) r.fail("storage_order 1 is not supported");
    only_first_output(r);
  }
  return a;
}

}  // namespace

void only_first_output(const AttributeReader& r) {
  for (int o = 1; o < r.num_outputs(); ++o) {
    if (r.output_used(o)) {
      r.fail("output {} ('{}') is used, but ios computes only the first output of {}", o, r.output_name(o),
             r.op_type());
    }
  }
}

Attrs conv(const AttributeReader& r, const Shapes& in) {
  const Shape& x = in.at(0);
  const Shape& w = in.at(1);
  need_rank(r, x, 4, "only 2-D convolutions (4-D NCHW input) are supported");
  need_rank(r, w, 4, "only 2-D convolutions (4-D weights) are supported");
  ConvAttrs a;
  a.kernel = pair_attr(r, "kernel_shape", {w[2], w[3]});
  a.stride = pair_attr(r, "strides", {1, 1});
  a.dilation = pair_attr(r, "dilations", {1, 1});
  a.group = r.get_int("group", 1);
  a.pads = window_pads(r, x, a.kernel, a.stride, a.dilation);
  return a;
}

Attrs max_pool(const AttributeReader& r, const Shapes& in) { return pool(r, in.at(0), false); }
Attrs average_pool(const AttributeReader& r, const Shapes& in) { return pool(r, in.at(0), true); }

Attrs global_pool(const AttributeReader& r, const Shapes& in) {
  need_rank(r, in.at(0), 4, "only 4-D NCHW input is supported");
  return std::monostate{};
}

Attrs clip(const AttributeReader& r, const Shapes&) {
  ClipAttrs a;
  if (r.opset() < 11) {
    a.min = r.get_float("min", a.min);
    a.max = r.get_float("max", a.max);
    return a;
  }
  if (auto v = r.constant_values(1, "min bound")) {
    if (v->size() != 1) r.fail("the min bound must have exactly one element");
    a.min = static_cast<float>((*v)[0]);
  }
  if (auto v = r.constant_values(2, "max bound")) {
    if (v->size() != 1) r.fail("the max bound must have exactly one element");
    a.max = static_cast<float>((*v)[0]);
  }
  return a;
}

Attrs hard_sigmoid(const AttributeReader& r, const Shapes&) {
  return HardSigmoidAttrs{r.get_float("alpha", 0.2f), r.get_float("beta", 0.5f)};
}

Attrs concat(const AttributeReader& r, const Shapes& in) {
  return AxisAttrs{normalize_axis(r, r.get_int("axis", 0), static_cast<int64_t>(in.at(0).size()))};
}

Attrs softmax(const AttributeReader& r, const Shapes& in) {
  const Shape& x = in.at(0);
  const auto rank = static_cast<int64_t>(x.size());
  const int64_t opset = r.opset();
  const int64_t axis = normalize_axis(r, r.get_int("axis", opset < 13 ? 1 : -1), rank);
  // Before opset 13, Softmax flattens the axes from `axis` on into one.
  for (int64_t d = axis + 1; opset < 13 && d < rank; ++d) {
    if (x[static_cast<size_t>(d)] != 1) {
      r.fail("Softmax-{} normalizes over axes {}.. flattened; ios supports one axis (re-export with opset 13)",
             opset, axis);
    }
  }
  return AxisAttrs{axis};
}

Attrs flatten(const AttributeReader& r, const Shapes& in) {
  const auto rank = static_cast<int64_t>(in.at(0).size());
  int64_t axis = r.get_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) r.fail("axis out of range for rank {}", rank);
  return AxisAttrs{axis};
}

Attrs split(const AttributeReader& r, const Shapes& in) {
  const Shape& x = in.at(0);
  SplitAttrs a;
  const auto rank = static_cast<int64_t>(x.size());
  a.axis = normalize_axis(r, r.get_int("axis", 0), rank);
  std::optional<std::vector<int64_t>> sizes;
  if (r.opset() < 13) {
    sizes = r.get_ints("split");
  } else if (auto v = r.constant_ints(1, "split sizes")) {
    sizes = std::move(v);
  }
  const int64_t dim = x[static_cast<size_t>(a.axis)];
  const auto parts = static_cast<int64_t>(r.num_outputs());
  if (sizes) {
    a.sizes = *sizes;
  } else {
    if (dim % parts != 0) r.fail("cannot split {} evenly into {} outputs", dim, parts);
    a.sizes.assign(static_cast<size_t>(parts), dim / parts);
  }
  return a;
}

Attrs slice(const AttributeReader& r, const Shapes& in) {
  const Shape& x = in.at(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (r.opset() < 10) {
    starts = r.get_ints("starts").value_or(std::vector<int64_t>{});
    ends = r.get_ints("ends").value_or(std::vector<int64_t>{});
    axes = r.get_ints("axes").value_or(std::vector<int64_t>{});
  } else {
    starts = r.constant_ints(1, "slice starts").value();
    ends = r.constant_ints(2, "slice ends").value();
    if (auto v = r.constant_ints(3, "slice axes")) axes = *v;
    if (auto v = r.constant_ints(4, "slice steps")) steps = *v;
  }
  if (axes.empty()) {
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    r.fail("starts, ends, axes and steps have different lengths");
  }
  // Clamp as ONNX specifies: positive steps to [0, dim], negative steps
  // to [0, dim - 1] for starts and [-1, dim - 1] for ends.
  SliceAttrs a;
  const auto rank = static_cast<int64_t>(x.size());
  for (size_t k = 0; k < starts.size(); ++k) {
    const int64_t axis = normalize_axis(r, axes[k], rank);
    if (std::find(a.axes.begin(), a.axes.end(), axis) != a.axes.end()) r.fail("axis {} sliced twice", axis);
    const int64_t dim = x[static_cast<size_t>(axis)];
    const int64_t step = steps[k];
    if (step == 0) r.fail("slice step 0");
    int64_t s = starts[k], e = ends[k];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
    }
    a.axes.push_back(axis);
    a.starts.push_back(s);
    a.ends.push_back(e);
    a.steps.push_back(step);
  }
  return a;
}

Attrs reduce_mean(const AttributeReader& r, const Shapes& in) {
  const Shape& x = in.at(0);
  ReduceAttrs a;
  std::vector<int64_t> axes = r.get_ints("axes").value_or(std::vector<int64_t>{});
  if (r.opset() >= 18) {
    if (auto v = r.constant_ints(1, "reduction axes")) axes = *v;
  }
  for (int64_t& axis : axes) axis = normalize_axis(r, axis, static_cast<int64_t>(x.size()));
  std::sort(axes.begin(), axes.end());
  // Trailing axes are what a layer normalization written out in primitive
  // operators reduces (ir/passes.h fuses it; unfused it runs as it is).
  const bool trailing = !axes.empty() && axes.back() == static_cast<int64_t>(x.size()) - 1 &&
                        axes.back() - axes.front() + 1 == static_cast<int64_t>(axes.size());
  if (!trailing && (x.size() != 4 || axes != std::vector<int64_t>{2, 3})) {
    r.fail(
        "ReduceMean is supported over H and W (axes [2, 3]) of a 4-D tensor or over trailing "
        "axes only; this one reduces axes [{}] of shape {}",
        fmt::join(axes, ", "), to_string(x));
  }
  a.axes = axes;
  a.keepdims = r.get_int("keepdims", 1) != 0;
  return a;
}

Attrs reshape(const AttributeReader& r, const Shapes& in) {
  const Shape& x = in.at(0);
  const auto shape_input = r.constant_ints(1, "target shape");
  if (!shape_input) r.fail("has no target shape input (Reshape before opset 5 is not supported)");
  const std::vector<int64_t>& target = *shape_input;
  const bool allow_zero = r.get_int("allowzero", 0) != 0;
  ReshapeAttrs a;
  int64_t known = 1;
  std::optional<size_t> infer_at;
  for (size_t d = 0; d < target.size(); ++d) {
    int64_t v = target[d];
    if (v == 0 && !allow_zero) {
      if (d >= x.size()) r.fail("target copies dimension {} that the input lacks", d);
      v = x[d];
    }
    if (v == -1) {
      if (infer_at) r.fail("target has two -1 entries");
      infer_at = d;
      v = 1;
    } else if (v < 0) {
      r.fail("target has a negative entry {}", v);
    } else if (__builtin_mul_overflow(known, v, &known)) {
      // The target comes from the file: its product must not wrap.
      r.fail("target [{}] has more elements than int64 can count", fmt::join(target, ", "));
    }
    a.shape.push_back(v);
  }
  const int64_t total = num_elements(x);
  if (infer_at) {
    if (known == 0 || total % known != 0) r.fail("cannot reshape {} to [{}]", to_string(x), fmt::join(target, ", "));
    a.shape[*infer_at] = total / known;
  }
  return a;
}

Attrs transpose(const AttributeReader& r, const Shapes& in) {
  const auto rank = static_cast<int64_t>(in.at(0).size());
  TransposeAttrs a;
  a.perm = r.get_ints("perm").value_or(std::vector<int64_t>{});
  if (a.perm.empty()) {
    for (int64_t d = rank; d-- > 0;) a.perm.push_back(d);
  }
  if (static_cast<int64_t>(a.perm.size()) != rank) {
    r.fail("attribute 'perm' has {} entries for an input of rank {}", a.perm.size(), rank);
  }
  for (int64_t& p : a.perm) p = normalize_axis(r, p, rank);
  return a;
}

Attrs gemm(const AttributeReader& r, const Shapes&) {
  return GemmAttrs{r.get_float("alpha", 1.0f), r.get_float("beta", 1.0f), r.get_int("transA", 0) != 0,
                   r.get_int("transB", 0) != 0};
}

Attrs pad(const AttributeReader& r, const Shapes& in) {
  const Shape& x = in.at(0);
  PadAttrs a;
  const std::string mode = r.get_string("mode", "constant");
  if (mode == "constant") a.mode = PadAttrs::Mode::kConstant;
  else if (mode == "reflect") a.mode = PadAttrs::Mode::kReflect;
  else if (mode == "edge") a.mode = PadAttrs::Mode::kEdge;
  else r.fail("pad mode '{}' is not supported", mode);
  if (r.opset() < 11) {
    a.pads = r.get_ints("pads").value_or(std::vector<int64_t>{});
    a.value = r.get_float("value", 0.0f);
  } else {
    a.pads = r.constant_ints(1, "pads").value();
    if (auto v = r.constant_values(2, "constant value"); v && !v->empty()) {
      a.value = static_cast<float>((*v)[0]);
    }
    if (r.has_input(3)) r.fail("the axes input of Pad is not supported");
  }
  if (a.pads.size() != 2 * x.size()) r.fail("has {} pads for rank {}", a.pads.size(), x.size());
  if (std::any_of(a.pads.begin(), a.pads.end(), [](int64_t p) { return p < 0; })) {
    r.fail("negative pads (cropping) are not supported");
  }
  return a;
}

Attrs batch_norm(const AttributeReader& r, const Shapes&) {
  if (r.get_int("training_mode", 0) != 0) r.fail("training_mode BatchNormalization is not supported");
  only_first_output(r);
  return BatchNormAttrs{r.get_float("epsilon", 1e-5f)};
}

Attrs pow_exponent(const AttributeReader& r, const Shapes&) {
  // The backends fuse Pow as a step with a constant operand (x^c); a run-time
  // exponent would be a second activation the kernels do not raise to.
  if (!r.input_is_constant(1)) {
    r.fail("the exponent (input 1) is computed at run time; ios supports Pow with a constant exponent only");
  }
  return std::monostate{};
}

// --- Resize (opset 10+) and Upsample (opset 7-9). ---------------------------

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
  r.fail("coordinate_transformation_mode '{}' is not supported (supported: half_pixel, pytorch_half_pixel, "
         "align_corners, asymmetric)", c);
}

resize::Nearest resize_nearest(const AttributeReader& r) {
  const std::string n = r.get_string("nearest_mode", "round_prefer_floor");
  if (n == "round_prefer_floor") return resize::Nearest::kRoundPreferFloor;
  if (n == "round_prefer_ceil") return resize::Nearest::kRoundPreferCeil;
  if (n == "floor") return resize::Nearest::kFloor;
  if (n == "ceil") return resize::Nearest::kCeil;
  r.fail("nearest_mode '{}' is not supported (supported: round_prefer_floor, round_prefer_ceil, floor, ceil)", n);
}

}  // namespace

Attrs resize(const AttributeReader& r, const Shapes& in) {
  const Shape& x = in.at(0);
  need_rank(r, x, 4, "only 4-D NCHW input is resized (on H and W)");
  const bool upsample = r.op_type() == "Upsample";
  ResizeAttrs a;
  const std::string mode = r.get_string("mode", "nearest");
  if (mode == "nearest") {
    a.mode = resize::Mode::kNearest;
  } else if (mode == "linear" || (upsample && mode == "bilinear")) {
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
    if (r.has("axes")) r.fail("the axes attribute is not supported; give scales or sizes for every axis");
    const std::string policy = r.get_string("keep_aspect_ratio_policy", "stretch");
    if (policy != "stretch") r.fail("keep_aspect_ratio_policy '{}' is not supported (only stretch)", policy);
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
  if (scales && scales->empty()) scales.reset();  // Resize-11+: an empty scales input with sizes given
  std::optional<std::vector<int64_t>> sizes;
  if (inputs.sizes >= 0) sizes = r.constant_ints(inputs.sizes, "sizes");
  if (sizes && sizes->empty()) sizes.reset();
  if (scales.has_value() == sizes.has_value()) r.fail("exactly one of scales and sizes must be given");

  if (scales) {
    if (scales->size() != 4) r.fail("has {} scales for a 4-D input", scales->size());
    if ((*scales)[0] != 1.0 || (*scales)[1] != 1.0) {
      r.fail("resizes the batch or channel axis (scales [{}]); only H and W are resized", fmt::join(*scales, ", "));
    }
    for (size_t d = 0; d < 2; ++d) {
      const auto s = static_cast<float>((*scales)[2 + d]);
      if (!(s > 0.0f) || !std::isfinite(s)) r.fail("scale {} is not a positive finite number", (*scales)[2 + d]);
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
      if (a.coordinates == resize::Coordinates::kAlignCorners && static_cast<float>(x[2 + d]) * s != out) {
        r.fail("align_corners with scale {} on length {} gives the non-integer length {} (ONNX's reference "
               "and ONNX Runtime interpolate it differently); give sizes instead of scales",
               s, x[2 + d], static_cast<float>(x[2 + d]) * s);
      }
    }
  } else {
    if (sizes->size() != 4) r.fail("has {} sizes for a 4-D input", sizes->size());
    if ((*sizes)[0] != x[0] || (*sizes)[1] != x[1]) {
      r.fail("resizes the batch or channel axis (sizes [{}] for input {}); only H and W are resized",
             fmt::join(*sizes, ", "), to_string(x));
    }
    for (size_t d = 0; d < 2; ++d) {
      const int64_t out = (*sizes)[2 + d];
      if (out < 1 || out > (int64_t{1} << 31)) r.fail("size {} is out of range", out);
      a.size[d] = out;
      a.scale[d] = static_cast<float>(out) / static_cast<float>(x[2 + d]);
    }
  }
  return a;
}

Attrs layer_norm(const AttributeReader& r, const Shapes& in) {
  const Shape& x = in.at(0);
  const auto rank = static_cast<int64_t>(x.size());
  if (rank == 0) {
    r.fail("input X is a scalar; LayerNormalization normalizes a tensor of rank 1 or more");
  }
  LayerNormAttrs a;
  a.axis = normalize_axis(r, r.get_int("axis", -1), rank);
  a.epsilon = r.get_float("epsilon", 1e-5f);
  if (!std::isfinite(a.epsilon) || a.epsilon < 0.0f) {
    r.fail("epsilon {} is not a finite number >= 0", a.epsilon);
  }
  // stash_type 1 computes mean and variance in float32, as ios's kernels do
  // (or better); another type would ask for other rounding.
  const int64_t stash_type = r.get_int("stash_type", 1);
  if (stash_type != 1) {
    r.fail("stash_type {} is not supported (only 1, float32 statistics)", stash_type);
  }
  const Shape dims = layer_norm::normalized_dims(x, a.axis);
  const char* names[] = {"X", "Scale", "B"};
  for (int i = 1; i < 3 && static_cast<size_t>(i) < in.size(); ++i) {
    if (!r.input_is_constant(i)) {
      r.fail(
          "input {} ({}) is computed at run time; ios supports LayerNormalization with "
          "constant Scale and B only",
          i, names[i]);
    }
    if (!layer_norm::broadcasts_to(in[static_cast<size_t>(i)], dims)) {
      r.fail(
          "input {} ({}) has shape {}, which does not broadcast to the normalized dims {} "
          "(axis {} of {})",
          i, names[i], to_string(in[static_cast<size_t>(i)]), to_string(dims), a.axis,
          to_string(x));
    }
  }
  return a;
}

Attrs gelu(const AttributeReader& r, const Shapes&) {
  const std::string approximate = r.get_string("approximate", "none");
  if (approximate != "none" && approximate != "tanh") {
    r.fail("Gelu approximate '{}' is not supported; use 'none' or 'tanh'", approximate);
  }
  return GeluAttrs{approximate == "tanh"};
}

}  // namespace ios::ir::attrs
