// The operator cases of the suite (op_suite.h). Expected values are computed
// here in float64, from the ONNX definitions, never by a backend.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <utility>

#include "exec/plan.h"
#include "ir/element_types.h"
#include "ir/shape_inference.h"
#include "op_suite.h"
#include "sched/schedule.h"

namespace ios::optest {
namespace {

using ir::OpKind;
using Values = std::vector<double>;

// `count` values evenly spaced over [lo, hi].
std::vector<float> ramp(int64_t count, float lo, float hi) {
  std::vector<float> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    v[static_cast<size_t>(i)] = lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(std::max<int64_t>(count - 1, 1));
  }
  return v;
}

Values as_double(const std::vector<float>& v) { return Values(v.begin(), v.end()); }

class CaseBuilder {
 public:
  CaseBuilder(std::string name, OpKind op) {
    case_.name = std::move(name);
    case_.op = op;
  }

  ir::TensorId input(const std::string& name, ir::Shape shape, std::vector<float> values) {
    ir::Tensor t;
    t.name = name;
    t.shape = shape;
    const ir::TensorId id = case_.graph.add_tensor(std::move(t));
    case_.graph.inputs().push_back(id);
    case_.inputs[name] = exec::HostTensor(std::move(shape), std::move(values));
    return id;
  }

  ir::TensorId constant(const std::string& name, ir::Shape shape, std::vector<float> values) {
    ir::Tensor t;
    t.name = name;
    t.shape = std::move(shape);
    t.data = std::make_shared<const std::vector<float>>(std::move(values));
    return case_.graph.add_tensor(std::move(t));
  }

  // Adds a node of `op` (outputs y, y1, ...), its shapes from shape inference.
  std::vector<ir::TensorId> node(OpKind op, std::vector<ir::TensorId> inputs, ir::Attrs attrs = {},
                                 int outputs = 1, const std::string& prefix = "y") {
    ir::Node n;
    n.name = prefix + "_node";
    n.op = op;
    n.inputs = std::move(inputs);
    n.attrs = std::move(attrs);
    for (int o = 0; o < outputs; ++o) {
      ir::Tensor t;
      t.name = o == 0 ? prefix : prefix + std::to_string(o);
      n.outputs.push_back(case_.graph.add_tensor(std::move(t)));
    }
    std::vector<ir::Shape> in;
    for (ir::TensorId t : n.inputs) in.push_back(case_.graph.tensor(t).shape);
    const std::vector<ir::Shape> shapes = ir::infer_node_shapes(n, in);
    for (size_t o = 0; o < n.outputs.size(); ++o) case_.graph.tensor(n.outputs[o]).shape = shapes.at(o);
    std::vector<ir::TensorId> outs = n.outputs;
    case_.graph.add_node(std::move(n));
    return outs;
  }

  void output(ir::TensorId t, Values expected) {
    case_.graph.outputs().push_back(t);
    case_.expected[case_.graph.tensor(t).name] = std::move(expected);
  }

  void expect_units(int units) { case_.units = units; }

  OpCase take() { return std::move(case_); }

 private:
  OpCase case_;
};

// v rounded to a binary format with `mantissa_bits` stored mantissa bits and
// smallest normal exponent `min_exponent`, to nearest with ties to even
// (nearbyint in the default rounding mode): the float16 and bfloat16 truth,
// computed in double, apart from ir/element_type.h's bit arithmetic.
double round_to_format(double v, int mantissa_bits, int min_exponent) {
  if (v == 0.0 || !std::isfinite(v)) return v;
  const int e = std::max(std::ilogb(v), min_exponent);
  const double ulp = std::ldexp(1.0, e - mantissa_bits);
  return std::nearbyint(v / ulp) * ulp;
}
double round_to_half(double v) { return round_to_format(v, 10, -14); }
double round_to_bfloat16(double v) { return round_to_format(v, 7, -126); }

// Cast between the float types: to float16 and bfloat16 over normal and
// subnormal ranges (exact: tolerance 0), and from a float16 input back to
// float32. A Cast that changes the type is never an epilogue (it cannot run
// in place), so it is a unit of its own even after a convolution.
void cast_cases(std::vector<OpCase>& cases) {
  const ir::Shape shape{2, 3, 2, 2};
  struct Range {
    const char* what;
    float lo, hi;
  };
  for (const auto& [type, name, truth, ranges] :
       {std::tuple{ir::ElementType::kFloat16, "float16", &round_to_half,
                   std::vector<Range>{{"normal", -60000.0f, 50000.0f},
                                      {"small", -3.3f, 2.9f},
                                      {"subnormal", -3e-5f, 2e-5f}}},
        std::tuple{ir::ElementType::kBFloat16, "bfloat16", &round_to_bfloat16,
                   std::vector<Range>{{"normal", -1e30f, 3e29f},
                                      {"small", -3.3f, 2.9f},
                                      {"subnormal", -3e-39f, 2e-39f}}}}) {
    for (const Range& range : ranges) {
      const std::vector<float> x = ramp(ir::num_elements(shape), range.lo, range.hi);
      Values e;
      for (float v : x) e.push_back(truth(v));
      CaseBuilder b(fmt::format("Cast to {} ({} values)", name, range.what), OpKind::kCast);
      b.output(b.node(OpKind::kCast, {b.input("x", shape, x)}, ir::CastAttrs{type}).at(0), e);
      OpCase c = b.take();
      c.tolerance = 0.0;
      ir::assign_element_types(c.graph, {}, c.name);
      cases.push_back(std::move(c));
    }
  }
  {
    // x is a float16 input: the run stores it rounded; the Cast reads it back.
    const std::vector<float> x = ramp(ir::num_elements(shape), -3.3f, 2.9f);
    Values e;
    for (float v : x) e.push_back(round_to_half(v));
    CaseBuilder b("Cast of a float16 input to float32", OpKind::kCast);
    b.output(
        b.node(OpKind::kCast, {b.input("x", shape, x)}, ir::CastAttrs{ir::ElementType::kFloat32})
            .at(0),
        e);
    OpCase c = b.take();
    c.tolerance = 0.0;
    ir::assign_element_types(c.graph, {{"x", ir::ElementType::kFloat16}}, c.name);
    cases.push_back(std::move(c));
  }
  {
    CaseBuilder b("Cast to float16 after a convolution", OpKind::kCast);
    const std::vector<float> x = ramp(ir::num_elements(shape), -3.3f, 2.9f);
    std::vector<float> identity(9, 0.0f);
    for (int ch = 0; ch < 3; ++ch) identity[static_cast<size_t>(ch * 3 + ch)] = 1.0f;
    const auto conv =
        b.node(OpKind::kConv, {b.input("x", shape, x), b.constant("w", {3, 3, 1, 1}, identity)},
               ir::ConvAttrs{}, 1, "c");
    Values e;
    for (float v : x) e.push_back(round_to_half(v));
    b.output(b.node(OpKind::kCast, {conv.at(0)}, ir::CastAttrs{ir::ElementType::kFloat16}).at(0),
             e);
    b.expect_units(2);
    OpCase c = b.take();
    c.tolerance = 0.0;
    ir::assign_element_types(c.graph, {}, c.name);
    cases.push_back(std::move(c));
  }
}

// A unary element-wise case on x [2, 3, 2, 2] spanning [lo, hi], alone and as
// the epilogue of an identity 1x1 convolution (exact, so the expected values
// are the same).
void unary_case(std::vector<OpCase>& cases, const std::string& name, OpKind op, ir::Attrs attrs,
                const std::function<double(double)>& truth, float lo = -4.0f, float hi = 4.0f) {
  const ir::Shape shape{2, 3, 2, 2};
  const std::vector<float> x = ramp(ir::num_elements(shape), lo, hi);
  Values expected;
  for (float v : x) expected.push_back(truth(v));
  {
    CaseBuilder b(name, op);
    b.output(b.node(op, {b.input("x", shape, x)}, attrs).at(0), expected);
    cases.push_back(b.take());
  }
  CaseBuilder b(name + " fused after a convolution", op);
  std::vector<float> identity(9, 0.0f);
  for (int c = 0; c < 3; ++c) identity[static_cast<size_t>(c * 3 + c)] = 1.0f;
  ir::ConvAttrs conv;
  const auto c = b.node(OpKind::kConv, {b.input("x", shape, x), b.constant("w", {3, 3, 1, 1}, identity)}, conv, 1, "c");
  b.output(b.node(op, {c.at(0)}, attrs).at(0), expected);
  b.expect_units(1);  // the operator is the convolution's epilogue
  cases.push_back(b.take());
}

// The weights of a 1x1 convolution that copies its `channels` channels.
std::vector<float> identity_1x1(int channels) {
  std::vector<float> w(static_cast<size_t>(channels * channels), 0.0f);
  for (int c = 0; c < channels; ++c) w[static_cast<size_t>(c * channels + c)] = 1.0f;
  return w;
}

// A binary element-wise operator whose operands do not commute (Sub, Div):
// every order of activation, broadcast activation and constant, since the
// backends apply a fused constant or a broadcast operand as a step on the
// other operand and must keep the node's order. a is x [2, 3, 2, 2] (a ramp
// without zero), b per channel.
void binary_cases(std::vector<OpCase>& cases, const std::string& name, OpKind op,
                  const std::function<double(double, double)>& truth) {
  const ir::Shape shape{2, 3, 2, 2};
  const int64_t count = ir::num_elements(shape);
  const std::vector<float> x = ramp(count, -3.0f, 2.5f), c{0.5f, -1.25f, 2.0f};
  Values x_then_c, c_then_x;
  for (int64_t i = 0; i < count; ++i) {
    const double xv = x[static_cast<size_t>(i)], cv = c[static_cast<size_t>((i / 4) % 3)];
    x_then_c.push_back(truth(xv, cv));
    c_then_x.push_back(truth(cv, xv));
  }
  for (bool x_first : {true, false}) {
    const Values& e = x_first ? x_then_c : c_then_x;
    const std::string order = x_first ? "" : " on the left";
    {
      CaseBuilder b(name + " of two activations, the broadcast one" + (x_first ? " on the right" : order), op);
      const auto xi = b.input("x", shape, x), ci = b.input("c", {3, 1, 1}, c);
      b.output(b.node(op, x_first ? std::vector{xi, ci} : std::vector{ci, xi}).at(0), e);
      cases.push_back(b.take());
    }
    {
      CaseBuilder b(name + " with a constant" + (x_first ? " on the right" : order), op);
      const auto xi = b.input("x", shape, x), ci = b.constant("c", {1, 3, 1, 1}, c);
      b.output(b.node(op, x_first ? std::vector{xi, ci} : std::vector{ci, xi}).at(0), e);
      cases.push_back(b.take());
    }
    {
      CaseBuilder b(name + " with a constant" + (x_first ? " on the right" : order) + " fused after a convolution", op);
      const auto conv = b.node(OpKind::kConv, {b.input("x", shape, x), b.constant("w", {3, 3, 1, 1}, identity_1x1(3))},
                               ir::ConvAttrs{}, 1, "conv");
      const auto ci = b.constant("c", {3, 1, 1}, c);
      b.output(b.node(op, x_first ? std::vector{conv.at(0), ci} : std::vector{ci, conv.at(0)}).at(0), e);
      b.expect_units(1);  // the operator is the convolution's epilogue
      cases.push_back(b.take());
    }
  }
}

// --- Resize: the ONNX definition evaluated in float64. ----------------------

// x_original of output index x on one axis (ONNX Resize, coordinate_transformation_mode).
double resize_source(ir::resize::Coordinates c, int64_t x, double scale, int64_t in, int64_t out) {
  using C = ir::resize::Coordinates;
  const auto xd = static_cast<double>(x);
  switch (c) {
    case C::kHalfPixel: return (xd + 0.5) / scale - 0.5;
    case C::kPytorchHalfPixel: return out > 1 ? (xd + 0.5) / scale - 0.5 : 0.0;
    case C::kAlignCorners: return out == 1 ? 0.0 : xd * double(in - 1) / double(out - 1);
    case C::kAsymmetric: return xd / scale;
  }
  return 0.0;
}

int64_t resize_nearest_truth(const ir::ResizeAttrs& a, int64_t x, double scale, int64_t in, int64_t out) {
  using N = ir::resize::Nearest;
  const double s = resize_source(a.coordinates, x, scale, in, out);
  double r = 0.0;
  switch (a.nearest) {
    case N::kRoundPreferFloor: r = s - std::floor(s) == 0.5 ? std::floor(s) : std::round(s); break;
    case N::kRoundPreferCeil: r = s - std::floor(s) == 0.5 ? std::ceil(s) : std::round(s); break;
    case N::kFloor: r = std::floor(s); break;
    case N::kCeil: r = std::ceil(s); break;
    case N::kSimple: r = scale < 1.0 ? std::ceil(s) : std::floor(s); break;
  }
  return std::clamp<int64_t>(static_cast<int64_t>(r), 0, in - 1);
}

// Linear interpolation of one axis: the input position clamped to the
// edges, then the two neighbours weighted by distance.
struct Taps {
  int64_t i0, i1;
  double r;  // weight of i1
};
Taps resize_linear_truth(const ir::ResizeAttrs& a, int64_t x, double scale, int64_t in, int64_t out) {
  const double s = std::clamp(resize_source(a.coordinates, x, scale, in, out), 0.0, double(in - 1));
  const auto i0 = static_cast<int64_t>(std::floor(s));
  return {i0, std::min(i0 + 1, in - 1), s - double(i0)};
}

// A Resize case on x [1, 2, h, w] with `attrs` (mode, coordinates, rounding,
// output size); `scale` is the H/W scale ONNX defines (given, or out / in).
void resize_case(std::vector<OpCase>& cases, const std::string& name, ir::ResizeAttrs a, int64_t h, int64_t w,
                 std::array<double, 2> scale) {
  a.scale = {static_cast<float>(scale[0]), static_cast<float>(scale[1])};
  const ir::Shape shape{1, 2, h, w};
  const std::vector<float> x = ramp(ir::num_elements(shape), -3.0f, 5.0f);
  const int64_t oh = a.size[0], ow = a.size[1];
  Values e;
  for (int64_t c = 0; c < 2; ++c) {
    const float* xc = x.data() + c * h * w;
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j) {
        if (a.mode == ir::resize::Mode::kNearest) {
          e.push_back(xc[resize_nearest_truth(a, i, scale[0], h, oh) * w + resize_nearest_truth(a, j, scale[1], w, ow)]);
          continue;
        }
        const Taps ty = resize_linear_truth(a, i, scale[0], h, oh), tx = resize_linear_truth(a, j, scale[1], w, ow);
        auto row = [&](int64_t r) { return (1.0 - tx.r) * xc[r * w + tx.i0] + tx.r * xc[r * w + tx.i1]; };
        e.push_back((1.0 - ty.r) * row(ty.i0) + ty.r * row(ty.i1));
      }
    }
  }
  CaseBuilder b(name, OpKind::kResize);
  b.output(b.node(OpKind::kResize, {b.input("x", shape, x)}, a).at(0), e);
  cases.push_back(b.take());
}

ir::ResizeAttrs resize_attrs(ir::resize::Mode mode, ir::resize::Coordinates c, ir::resize::Nearest n, int64_t oh,
                             int64_t ow) {
  ir::ResizeAttrs a;
  a.mode = mode;
  a.coordinates = c;
  a.nearest = n;
  a.size = {oh, ow};
  return a;
}

void resize_cases(std::vector<OpCase>& cases) {
  using M = ir::resize::Mode;
  using C = ir::resize::Coordinates;
  using N = ir::resize::Nearest;
  // Bilinear x2 as torchvision's segmentation heads upsample (half_pixel and pytorch_half_pixel).
  resize_case(cases, "Resize linear half_pixel x2", resize_attrs(M::kLinear, C::kHalfPixel, N::kFloor, 6, 8), 3, 4,
              {2.0, 2.0});
  resize_case(cases, "Resize linear pytorch_half_pixel 4x6 -> 3x1",
              resize_attrs(M::kLinear, C::kPytorchHalfPixel, N::kFloor, 3, 1), 4, 6, {0.75, 1.0 / 6.0});
  resize_case(cases, "Resize linear align_corners 3x4 -> 5x7",
              resize_attrs(M::kLinear, C::kAlignCorners, N::kFloor, 5, 7), 3, 4, {5.0 / 3.0, 7.0 / 4.0});
  resize_case(cases, "Resize linear asymmetric x1.5", resize_attrs(M::kLinear, C::kAsymmetric, N::kFloor, 4, 6), 3, 4,
              {1.5, 1.5});
  // Nearest: every rounding rule, on scales whose coordinates are exact in
  // float32 (ties at .5 included), so the rounding is decided alike.
  resize_case(cases, "Resize nearest asymmetric floor x2",
              resize_attrs(M::kNearest, C::kAsymmetric, N::kFloor, 6, 8), 3, 4, {2.0, 2.0});
  resize_case(cases, "Resize nearest asymmetric round_prefer_floor x2",
              resize_attrs(M::kNearest, C::kAsymmetric, N::kRoundPreferFloor, 6, 8), 3, 4, {2.0, 2.0});
  resize_case(cases, "Resize nearest asymmetric round_prefer_ceil x2",
              resize_attrs(M::kNearest, C::kAsymmetric, N::kRoundPreferCeil, 6, 8), 3, 4, {2.0, 2.0});
  resize_case(cases, "Resize nearest half_pixel ceil 4x8 -> 2x2",
              resize_attrs(M::kNearest, C::kHalfPixel, N::kCeil, 2, 2), 4, 8, {0.5, 0.25});
  resize_case(cases, "Resize nearest align_corners round_prefer_floor 3x4 -> 5x7",
              resize_attrs(M::kNearest, C::kAlignCorners, N::kRoundPreferFloor, 5, 7), 3, 4, {5.0 / 3.0, 1.75});
  resize_case(cases, "Resize nearest simple (Upsample) x2 and x0.5",
              resize_attrs(M::kNearest, C::kAsymmetric, N::kSimple, 6, 2), 3, 4, {2.0, 0.5});
}

// --- Windows over one and three spatial axes --------------------------------
//
// The float64 truths below walk N-D indices directly from the ONNX
// definitions (no mapping onto 3-D as the backends do), so a backend that
// mixes up axes or pads disagrees with them.

// The multi-index of flat position `flat` in `shape`, row-major.
std::vector<int64_t> unravel(int64_t flat, const ir::Shape& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

int64_t ravel(const std::vector<int64_t>& index, const ir::Shape& shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + index[d];
  return flat;
}

// The output lengths of a window (floor, or ceil with ceil_mode).
ir::Shape window_output(const ir::Shape& xs, int64_t channels, const ir::Dims& k, const ir::Dims& s,
                        const ir::Dims& d, const ir::Dims& pads, bool ceil_mode = false) {
  const size_t rank = k.size();
  ir::Shape ys{xs[0], channels};
  for (size_t a = 0; a < rank; ++a) {
    const int64_t span = xs[2 + a] + pads[a] + pads[a + rank] - d[a] * (k[a] - 1) - 1;
    ys.push_back((ceil_mode ? (span + s[a] - 1) / s[a] : span / s[a]) + 1);
  }
  return ys;
}

// Conv over any number of spatial axes: y[n, m, o...] = b[m] +
// sum_{c, k...} x[n, g*Cg + c, o*s - p + k*d] w[m, c, k...].
Values conv_nd_truth(const std::vector<float>& x, const ir::Shape& xs, const std::vector<float>& w,
                     const ir::Shape& ws, const std::vector<float>& bias, const ir::ConvAttrs& a) {
  const size_t rank = a.kernel.size();
  const ir::Shape ys = window_output(xs, ws[0], a.kernel, a.stride, a.dilation, a.pads);
  const ir::Shape kernel_box(ws.begin() + 1, ws.end());  // [Cg, k...]
  const int64_t mg = ws[0] / a.group;
  Values out;
  for (int64_t flat = 0; flat < ir::num_elements(ys); ++flat) {
    const auto o = unravel(flat, ys);
    const int64_t group = o[1] / mg;
    double acc = bias.empty() ? 0.0 : bias[static_cast<size_t>(o[1])];
    for (int64_t kf = 0; kf < ir::num_elements(kernel_box); ++kf) {
      const auto k = unravel(kf, kernel_box);
      std::vector<int64_t> in{o[0], group * ws[1] + k[0]};
      bool inside = true;
      for (size_t ax = 0; ax < rank; ++ax) {
        const int64_t i = o[2 + ax] * a.stride[ax] - a.pads[ax] + k[1 + ax] * a.dilation[ax];
        inside = inside && i >= 0 && i < xs[2 + ax];
        in.push_back(i);
      }
      if (!inside) continue;
      acc += double(x[static_cast<size_t>(ravel(in, xs))]) *
             w[static_cast<size_t>(o[1] * ir::num_elements(kernel_box) + kf)];
    }
    out.push_back(acc);
  }
  return out;
}

// MaxPool (with dilations) and AveragePool over any number of spatial axes;
// the average divides by the taps inside the input, or with
// count_include_pad by those inside the padded extent.
Values pool_nd_truth(const std::vector<float>& x, const ir::Shape& xs, const ir::PoolAttrs& a,
                     bool max) {
  const size_t rank = a.kernel.size();
  const ir::Shape ys =
      window_output(xs, xs[1], a.kernel, a.stride, a.dilation, a.pads, a.ceil_mode);
  const ir::Shape box(a.kernel.begin(), a.kernel.end());
  Values out;
  for (int64_t flat = 0; flat < ir::num_elements(ys); ++flat) {
    const auto o = unravel(flat, ys);
    double best = -INFINITY, sum = 0.0;
    int64_t inside_input = 0, inside_padded = 0;
    for (int64_t kf = 0; kf < ir::num_elements(box); ++kf) {
      const auto k = unravel(kf, box);
      std::vector<int64_t> in{o[0], o[1]};
      bool in_input = true, in_padded = true;
      for (size_t ax = 0; ax < rank; ++ax) {
        const int64_t i = o[2 + ax] * a.stride[ax] - a.pads[ax] + k[ax] * a.dilation[ax];
        in_input = in_input && i >= 0 && i < xs[2 + ax];
        in_padded = in_padded && i < xs[2 + ax] + a.pads[ax + rank];
        in.push_back(i);
      }
      inside_padded += in_padded ? 1 : 0;
      if (!in_input) continue;
      const double e = x[static_cast<size_t>(ravel(in, xs))];
      best = std::max(best, e);
      sum += e;
      ++inside_input;
    }
    out.push_back(max ? best : sum / double(a.count_include_pad ? inside_padded : inside_input));
  }
  return out;
}

// ConvTranspose over any number of spatial axes: every input element
// scattered through its weights [C_in, C_out / group, k...].
Values conv_transpose_nd_truth(const std::vector<float>& x, const ir::Shape& xs,
                               const std::vector<float>& w, const ir::Shape& ws,
                               const std::vector<float>& bias, const ir::ConvTransposeAttrs& a) {
  const size_t rank = a.kernel.size();
  ir::Shape ys{xs[0], ws[1] * a.group};
  for (size_t ax = 0; ax < rank; ++ax) {
    ys.push_back(a.stride[ax] * (xs[2 + ax] - 1) + a.output_padding[ax] +
                 (a.kernel[ax] - 1) * a.dilation[ax] + 1 - a.pads[ax] - a.pads[ax + rank]);
  }
  Values y(static_cast<size_t>(ir::num_elements(ys)), 0.0);
  for (int64_t flat = 0; flat < ir::num_elements(ys); ++flat) {
    y[static_cast<size_t>(flat)] =
        bias.empty() ? 0.0 : bias[static_cast<size_t>(unravel(flat, ys)[1])];
  }
  const ir::Shape box(ws.begin() + 1, ws.end());  // [Cout/g, k...]
  const int64_t cin_g = xs[1] / a.group;
  for (int64_t xf = 0; xf < ir::num_elements(xs); ++xf) {
    const auto i = unravel(xf, xs);
    for (int64_t kf = 0; kf < ir::num_elements(box); ++kf) {
      const auto k = unravel(kf, box);
      std::vector<int64_t> out{i[0], (i[1] / cin_g) * ws[1] + k[0]};
      bool inside = true;
      for (size_t ax = 0; ax < rank; ++ax) {
        const int64_t o = i[2 + ax] * a.stride[ax] - a.pads[ax] + k[1 + ax] * a.dilation[ax];
        inside = inside && o >= 0 && o < ys[2 + ax];
        out.push_back(o);
      }
      if (!inside) continue;
      y[static_cast<size_t>(ravel(out, ys))] +=
          double(x[static_cast<size_t>(xf)]) *
          w[static_cast<size_t>(i[1] * ir::num_elements(box) + kf)];
    }
  }
  return y;
}

// Resize over any number of spatial axes: nearest per axis, or linear as
// the product of one-axis interpolations (ONNX's n-linear definition).
Values resize_nd_truth(const std::vector<float>& x, const ir::Shape& xs, const ir::ResizeAttrs& a) {
  const size_t rank = a.size.size();
  ir::Shape ys{xs[0], xs[1]};
  ys.insert(ys.end(), a.size.begin(), a.size.end());
  Values out;
  for (int64_t flat = 0; flat < ir::num_elements(ys); ++flat) {
    const auto o = unravel(flat, ys);
    if (a.mode == ir::resize::Mode::kNearest) {
      std::vector<int64_t> in{o[0], o[1]};
      for (size_t ax = 0; ax < rank; ++ax) {
        in.push_back(resize_nearest_truth(a, o[2 + ax], a.scale[ax], xs[2 + ax], ys[2 + ax]));
      }
      out.push_back(x[static_cast<size_t>(ravel(in, xs))]);
      continue;
    }
    std::vector<Taps> taps;
    for (size_t ax = 0; ax < rank; ++ax)
      taps.push_back(resize_linear_truth(a, o[2 + ax], a.scale[ax], xs[2 + ax], ys[2 + ax]));
    double value = 0.0;
    for (int64_t corner = 0; corner < (int64_t{1} << rank); ++corner) {
      std::vector<int64_t> in{o[0], o[1]};
      double weight = 1.0;
      for (size_t ax = 0; ax < rank; ++ax) {
        const bool upper = (corner >> (rank - 1 - ax)) & 1;
        in.push_back(upper ? taps[ax].i1 : taps[ax].i0);
        weight *= upper ? taps[ax].r : 1.0 - taps[ax].r;
      }
      value += weight * x[static_cast<size_t>(ravel(in, xs))];
    }
    out.push_back(value);
  }
  return out;
}

ir::ConvAttrs conv_nd_attrs(ir::Dims k, ir::Dims s, ir::Dims d, ir::Dims pads, int64_t group = 1) {
  ir::ConvAttrs a;
  a.kernel = std::move(k);
  a.stride = std::move(s);
  a.dilation = std::move(d);
  a.pads = std::move(pads);
  a.group = group;
  return a;
}

ir::PoolAttrs pool_nd_attrs(ir::Dims k, ir::Dims s, ir::Dims d, ir::Dims pads,
                            bool include_pad = false, bool ceil_mode = false) {
  ir::PoolAttrs a;
  a.kernel = std::move(k);
  a.stride = std::move(s);
  a.dilation = std::move(d);
  a.pads = std::move(pads);
  a.count_include_pad = include_pad;
  a.ceil_mode = ceil_mode;
  return a;
}

// 1-D (audio: N,C,L) and 3-D (video: N,C,T,H,W) windows, and MaxPool with
// dilations: the shapes of the networks of docs/operators.md's families
// (a strided, dilated 1-D stem; R(2+1)D's temporal and spatial factors; a
// 3-D max pool that keeps the frames).
void window_nd_cases(std::vector<OpCase>& cases) {
  auto conv_case = [&](const std::string& name, const ir::Shape& xs, const ir::Shape& ws,
                       const ir::ConvAttrs& a, bool bias, bool relu) {
    const auto x = ramp(ir::num_elements(xs), -1.0f, 1.2f);
    const auto w = ramp(ir::num_elements(ws), -0.5f, 0.6f);
    const std::vector<float> b = bias ? ramp(ws[0], -0.3f, 0.2f) : std::vector<float>{};
    Values e = conv_nd_truth(x, xs, w, ws, b, a);
    CaseBuilder c(name, OpKind::kConv);
    std::vector<ir::TensorId> in{c.input("x", xs, x), c.constant("w", ws, w)};
    if (bias) in.push_back(c.constant("b", {ws[0]}, b));
    auto y = c.node(OpKind::kConv, in, a, 1, relu ? "conv" : "y").at(0);
    if (relu) {
      for (double& v : e) v = std::max(0.0, v);
      y = c.node(OpKind::kRelu, {y}).at(0);
      c.expect_units(1);
    }
    c.output(y, e);
    cases.push_back(c.take());
  };
  conv_case("Conv 1-D, strided and dilated, asymmetric pads, bias", {1, 3, 11}, {4, 3, 3},
            conv_nd_attrs({3}, {2}, {2}, {2, 1}), true, false);
  conv_case("Conv 1-D grouped, Relu fused", {2, 4, 9}, {6, 2, 5},
            conv_nd_attrs({5}, {1}, {1}, {2, 2}, 2), true, true);
  conv_case("Conv 3-D, stride 1x2x2, pads 1", {1, 2, 3, 5, 5}, {3, 2, 3, 3, 3},
            conv_nd_attrs({3, 3, 3}, {1, 2, 2}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}), true, false);
  conv_case("Conv 3-D temporal 3x1x1 (R(2+1)D's factor), Relu fused", {1, 3, 4, 3, 3},
            {2, 3, 3, 1, 1}, conv_nd_attrs({3, 1, 1}, {2, 1, 1}, {1, 1, 1}, {1, 0, 0, 1, 0, 0}),
            false, true);
  conv_case("Conv 3-D depthwise, dilated", {1, 2, 5, 4, 4}, {2, 1, 2, 2, 2},
            conv_nd_attrs({2, 2, 2}, {1, 1, 1}, {2, 1, 1}, {0, 1, 0, 0, 0, 1}, 2), false, false);

  auto pool_case = [&](const std::string& name, OpKind op, const ir::Shape& xs,
                       const ir::PoolAttrs& a) {
    const auto x = ramp(ir::num_elements(xs), -2.0f, 3.0f);
    CaseBuilder c(name, op);
    c.output(c.node(op, {c.input("x", xs, x)}, a).at(0),
             pool_nd_truth(x, xs, a, op == OpKind::kMaxPool));
    cases.push_back(c.take());
  };
  pool_case("MaxPool 1-D, kernel 3 stride 2 pads 1", OpKind::kMaxPool, {1, 2, 9},
            pool_nd_attrs({3}, {2}, {1}, {1, 1}));
  pool_case("MaxPool 1-D dilated", OpKind::kMaxPool, {1, 2, 12},
            pool_nd_attrs({3}, {2}, {3}, {2, 2}));
  pool_case("MaxPool 2-D dilated", OpKind::kMaxPool, {1, 2, 7, 6},
            pool_nd_attrs({3, 2}, {1, 2}, {2, 3}, {1, 1, 1, 2}));
  pool_case("MaxPool 3-D 1x3x3 stride 1x2x2 (frames kept)", OpKind::kMaxPool, {1, 2, 3, 5, 5},
            pool_nd_attrs({1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1, 0, 1, 1}));
  pool_case("MaxPool 3-D ceil_mode", OpKind::kMaxPool, {1, 2, 3, 4, 5},
            pool_nd_attrs({2, 2, 2}, {2, 2, 2}, {1, 1, 1}, {0, 0, 0, 0, 0, 0}, false, true));
  pool_case("AveragePool 1-D", OpKind::kAveragePool, {2, 3, 8},
            pool_nd_attrs({3}, {2}, {1}, {1, 1}));
  pool_case("AveragePool 3-D count_include_pad", OpKind::kAveragePool, {1, 2, 4, 4, 4},
            pool_nd_attrs({2, 3, 3}, {2, 1, 1}, {1, 1, 1}, {0, 1, 1, 1, 1, 1}, true));
  for (const ir::Shape& xs : {ir::Shape{2, 3, 7}, ir::Shape{1, 2, 3, 2, 4}}) {
    const auto x = ramp(ir::num_elements(xs), -2.0f, 3.0f);
    const int64_t volume = ir::num_elements(xs) / (xs[0] * xs[1]);
    Values means;
    for (int64_t nc = 0; nc < xs[0] * xs[1]; ++nc) {
      double sum = 0.0;
      for (int64_t i = 0; i < volume; ++i) sum += x[static_cast<size_t>(nc * volume + i)];
      means.push_back(sum / double(volume));
    }
    CaseBuilder c(fmt::format("GlobalAveragePool {}-D", xs.size() - 2), OpKind::kGlobalAveragePool);
    c.output(c.node(OpKind::kGlobalAveragePool, {c.input("x", xs, x)}).at(0), means);
    cases.push_back(c.take());
  }

  auto transpose_case = [&](const std::string& name, const ir::Shape& xs, const ir::Shape& ws,
                            const ir::ConvTransposeAttrs& a) {
    const auto x = ramp(ir::num_elements(xs), -1.0f, 1.2f);
    const auto w = ramp(ir::num_elements(ws), -0.6f, 0.5f);
    const std::vector<float> b = ramp(ws[1] * a.group, -0.2f, 0.3f);
    CaseBuilder c(name, OpKind::kConvTranspose);
    c.output(
        c.node(OpKind::kConvTranspose,
               {c.input("x", xs, x), c.constant("w", ws, w), c.constant("b", {ws[1] * a.group}, b)},
               a)
            .at(0),
        conv_transpose_nd_truth(x, xs, w, ws, b, a));
    cases.push_back(c.take());
  };
  {
    ir::ConvTransposeAttrs a;
    a.kernel = {3};
    a.stride = {2};
    a.dilation = {1};
    a.pads = {1, 1};
    a.output_padding = {1};
    transpose_case("ConvTranspose 1-D, stride 2, output_padding 1", {1, 2, 5}, {2, 3, 3}, a);
    a.kernel = {2, 3, 3};
    a.stride = {1, 2, 2};
    a.dilation = {1, 1, 2};
    a.pads = {0, 1, 1, 0, 1, 0};
    a.output_padding = {0, 1, 0};
    a.group = 2;
    transpose_case("ConvTranspose 3-D grouped, stride 1x2x2", {1, 4, 2, 3, 3}, {4, 1, 2, 3, 3}, a);
  }

  for (const ir::Shape& xs : {ir::Shape{2, 3, 4}, ir::Shape{1, 3, 2, 2, 3}}) {
    const auto x = ramp(ir::num_elements(xs), -3.0f, 2.5f);
    const std::vector<float> scale{1.5f, -0.5f, 2.0f}, bias{0.1f, 0.2f, -0.3f},
        mean{0.25f, -1.0f, 0.5f}, var{1.0f, 0.5f, 2.0f};
    ir::BatchNormAttrs a;
    a.epsilon = 1e-3f;
    const int64_t volume = ir::num_elements(xs) / (xs[0] * xs[1]);
    Values e;
    for (int64_t i = 0; i < ir::num_elements(xs); ++i) {
      const auto c = static_cast<size_t>((i / volume) % 3);
      e.push_back(double(scale[c]) * (double(x[static_cast<size_t>(i)]) - mean[c]) /
                      std::sqrt(double(var[c]) + double(1e-3f)) +
                  bias[c]);
    }
    CaseBuilder b(fmt::format("BatchNormalization {}-D", xs.size() - 2), OpKind::kBatchNorm);
    b.output(
        b.node(OpKind::kBatchNorm,
               {b.input("x", xs, x), b.constant("scale", {3}, scale), b.constant("bias", {3}, bias),
                b.constant("mean", {3}, mean), b.constant("var", {3}, var)},
               a)
            .at(0),
        e);
    cases.push_back(b.take());
  }

  auto resize_nd_case = [&](const std::string& name, const ir::Shape& xs, ir::resize::Mode mode,
                            ir::resize::Coordinates c, ir::Dims size, std::vector<float> scale) {
    ir::ResizeAttrs a;
    a.mode = mode;
    a.coordinates = c;
    a.nearest = ir::resize::Nearest::kFloor;
    a.size = std::move(size);
    a.scale = std::move(scale);
    const auto x = ramp(ir::num_elements(xs), -3.0f, 5.0f);
    CaseBuilder b(name, OpKind::kResize);
    b.output(b.node(OpKind::kResize, {b.input("x", xs, x)}, a).at(0), resize_nd_truth(x, xs, a));
    cases.push_back(b.take());
  };
  using M = ir::resize::Mode;
  using C = ir::resize::Coordinates;
  resize_nd_case("Resize 1-D linear half_pixel x2", {1, 2, 5}, M::kLinear, C::kHalfPixel, {10},
                 {2.0f});
  resize_nd_case("Resize 1-D nearest asymmetric x0.5", {2, 2, 8}, M::kNearest, C::kAsymmetric, {4},
                 {0.5f});
  resize_nd_case("Resize 3-D trilinear align_corners 2x3x3 -> 3x5x4", {1, 2, 2, 3, 3}, M::kLinear,
                 C::kAlignCorners, {3, 5, 4}, {1.5f, 5.0f / 3.0f, 4.0f / 3.0f});
  resize_nd_case("Resize 3-D nearest x1x2x2", {1, 2, 2, 3, 3}, M::kNearest, C::kAsymmetric,
                 {2, 6, 6}, {1.0f, 2.0f, 2.0f});
}

ir::ClipAttrs clip_attrs(float lo, float hi) {
  ir::ClipAttrs a;
  a.min = lo;
  a.max = hi;
  return a;
}

ir::HardSigmoidAttrs hard_sigmoid_attrs(float alpha, float beta) {
  ir::HardSigmoidAttrs a;
  a.alpha = alpha;
  a.beta = beta;
  return a;
}

ir::PoolAttrs pool_attrs(int64_t k, int64_t s, ios::ir::Dims pads, bool include_pad = false) {
  ir::PoolAttrs a;
  a.kernel = {k, k};
  a.stride = {s, s};
  a.pads = pads;
  a.count_include_pad = include_pad;
  return a;
}

// NCHW index helpers for the float64 truths below.
size_t at4(const ir::Shape& s, int64_t n, int64_t c, int64_t h, int64_t w) {
  return static_cast<size_t>(((n * s[1] + c) * s[2] + h) * s[3] + w);
}

// A window over x [N, C, H, W]: max or mean (excluding the padding) per output.
Values pool_truth(const std::vector<float>& x, const ir::Shape& s, const ir::PoolAttrs& a, bool max) {
  const int64_t oh = (s[2] + a.pads[0] + a.pads[2] - a.kernel[0]) / a.stride[0] + 1;
  const int64_t ow = (s[3] + a.pads[1] + a.pads[3] - a.kernel[1]) / a.stride[1] + 1;
  Values out;
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t c = 0; c < s[1]; ++c)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double best = -INFINITY, sum = 0.0;
          int count = 0;
          for (int64_t u = 0; u < a.kernel[0]; ++u)
            for (int64_t v = 0; v < a.kernel[1]; ++v) {
              const int64_t h = i * a.stride[0] - a.pads[0] + u, w = j * a.stride[1] - a.pads[1] + v;
              if (h < 0 || h >= s[2] || w < 0 || w >= s[3]) continue;
              const double e = x[at4(s, n, c, h, w)];
              best = std::max(best, e);
              sum += e;
              ++count;
            }
          out.push_back(max ? best : sum / count);
        }
  return out;
}

// Row-major strides of a shape.
std::vector<int64_t> strides_of(const ir::Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

// A transformer's attention arithmetic: batched MatMul of two activations
// (rank 4, [N, heads, S, D] x [N, heads, D, S]), an activation times a shared
// constant weight (rank 3, [N, S, D] x [D, E]: a Linear on tokens), with a
// broadcast batch ([1, S, D] x [2, D, E]), the heads' Transpose and a
// Softmax over the last axis of a 4-D tensor.
void add_attention_cases(std::vector<OpCase>& cases) {
  // y[..., i, j] = sum_k a[..., i, k] b[..., k, j] with numpy batch broadcasting.
  auto matmul_truth = [](const std::vector<float>& a, const ir::Shape& as,
                         const std::vector<float>& b, const ir::Shape& bs) {
    const size_t rank = std::max(as.size(), bs.size());
    ir::Shape pa(rank - as.size(), 1), pb(rank - bs.size(), 1);
    pa.insert(pa.end(), as.begin(), as.end());
    pb.insert(pb.end(), bs.begin(), bs.end());
    const int64_t m = pa[rank - 2], k = pa[rank - 1], n = pb[rank - 1];
    ir::Shape batch(rank - 2);
    for (size_t d = 0; d + 2 < rank; ++d) batch[d] = std::max(pa[d], pb[d]);
    const auto sa = strides_of(pa), sb = strides_of(pb);
    Values y;
    std::vector<int64_t> idx(batch.size(), 0);
    for (int64_t bi = 0; bi < ir::num_elements(batch); ++bi) {
      int64_t rem = bi, oa = 0, ob = 0;
      for (size_t d = batch.size(); d-- > 0;) {
        idx[d] = rem % batch[d];
        rem /= batch[d];
        oa += (pa[d] == 1 ? 0 : idx[d]) * sa[d];
        ob += (pb[d] == 1 ? 0 : idx[d]) * sb[d];
      }
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double acc = 0.0;
          for (int64_t t = 0; t < k; ++t)
            acc += double(a[static_cast<size_t>(oa + i * k + t)]) *
                   b[static_cast<size_t>(ob + t * n + j)];
          y.push_back(acc);
        }
    }
    return y;
  };
  {
    const ir::Shape qs{2, 3, 4, 5}, ks{2, 3, 5, 4};
    const auto q = ramp(ir::num_elements(qs), -1.0f, 1.2f),
               k = ramp(ir::num_elements(ks), 0.9f, -1.1f);
    CaseBuilder b("MatMul of two rank-4 activations", OpKind::kMatMul);
    b.output(b.node(OpKind::kMatMul, {b.input("q", qs, q), b.input("k", ks, k)}).at(0),
             matmul_truth(q, qs, k, ks));
    cases.push_back(b.take());
  }
  {
    const ir::Shape xs{2, 6, 4}, ws{4, 5};
    const auto x = ramp(ir::num_elements(xs), -2.0f, 1.5f),
               w = ramp(ir::num_elements(ws), 0.5f, -0.75f);
    CaseBuilder b("MatMul of rank-3 tokens by a constant weight", OpKind::kMatMul);
    b.output(b.node(OpKind::kMatMul, {b.input("x", xs, x), b.constant("w", ws, w)}).at(0),
             matmul_truth(x, xs, w, ws));
    cases.push_back(b.take());
  }
  {
    const ir::Shape xs{1, 3, 4}, ws{2, 4, 2};  // one activation matrix against each of two weights
    const auto x = ramp(ir::num_elements(xs), -1.5f, 1.0f),
               w = ramp(ir::num_elements(ws), -0.5f, 0.8f);
    CaseBuilder b("MatMul with a broadcast batch", OpKind::kMatMul);
    b.output(b.node(OpKind::kMatMul, {b.input("x", xs, x), b.constant("w", ws, w)}).at(0),
             matmul_truth(x, xs, w, ws));
    cases.push_back(b.take());
  }
  {
    // [N, S, heads, D] -> [N, heads, S, D]
    const ir::Shape xs{2, 3, 2, 4};
    const auto x = ramp(ir::num_elements(xs), -3.0f, 3.0f);
    ir::TransposeAttrs a;
    a.perm = {0, 2, 1, 3};
    Values e;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t s = 0; s < 3; ++s)
          for (int64_t d = 0; d < 4; ++d)
            e.push_back(x[static_cast<size_t>(((n * 3 + s) * 2 + h) * 4 + d)]);
    CaseBuilder b("Transpose of attention heads", OpKind::kTranspose);
    b.output(b.node(OpKind::kTranspose, {b.input("x", xs, x)}, a).at(0), e);
    cases.push_back(b.take());
  }
  {
    const ir::Shape xs{2, 2, 3, 5};
    const auto x = ramp(ir::num_elements(xs), -4.0f, 4.5f);
    ir::AxisAttrs a;
    a.axis = 3;  // the importer writes ONNX's -1 as 3
    Values e;
    for (int64_t r = 0; r < 12; ++r) {
      double sum = 0.0;
      for (int64_t j = 0; j < 5; ++j) sum += std::exp(double(x[static_cast<size_t>(r * 5 + j)]));
      for (int64_t j = 0; j < 5; ++j)
        e.push_back(std::exp(double(x[static_cast<size_t>(r * 5 + j)])) / sum);
    }
    CaseBuilder b("Softmax over the last axis of a 4-D tensor", OpKind::kSoftmax);
    b.output(b.node(OpKind::kSoftmax, {b.input("x", xs, x)}, a).at(0), e);
    cases.push_back(b.take());
  }
}

// LayerNormalization in float64 over the dims of `shape` from `axis` on:
// scale and bias hold one value per normalized element (bias may be empty).
Values layer_norm_truth(const std::vector<float>& x, const ir::Shape& shape, int64_t axis,
                        const Values& scale, const Values& bias, double eps) {
  int64_t cols = 1;
  for (size_t d = static_cast<size_t>(axis); d < shape.size(); ++d) cols *= shape[d];
  Values y;
  for (int64_t r = 0; r < ir::num_elements(shape) / cols; ++r) {
    const float* row = x.data() + r * cols;
    double mean = 0.0, var = 0.0;
    for (int64_t j = 0; j < cols; ++j) mean += row[j];
    mean /= double(cols);
    for (int64_t j = 0; j < cols; ++j) var += (row[j] - mean) * (row[j] - mean);
    var /= double(cols);
    for (int64_t j = 0; j < cols; ++j) {
      const auto k = static_cast<size_t>(j);
      y.push_back((row[j] - mean) / std::sqrt(var + eps) * scale[k] +
                  (bias.empty() ? 0.0 : bias[k]));
    }
  }
  return y;
}

ir::LayerNormAttrs layer_norm_attrs(int64_t axis, float eps) {
  ir::LayerNormAttrs a;
  a.axis = axis;
  a.epsilon = eps;
  return a;
}

// LayerNormalization: the last axis with bias (ViT), the last two axes with a
// broadcast scale and no bias, NCHW from the channel axis with an epilogue
// (a Mul by a layer scale), and a strided output (a concatenation's slice).
void layer_norm_cases(std::vector<OpCase>& cases) {
  const ir::Shape s3{2, 3, 4};
  const std::vector<float> x3 = ramp(ir::num_elements(s3), -2.0f, 3.5f);
  const std::vector<float> gamma{1.5f, -0.5f, 2.0f, 0.75f}, beta{0.1f, -0.2f, 0.3f, 0.0f};
  const Values g4 = as_double(gamma), b4 = as_double(beta);
  {
    CaseBuilder b("LayerNormalization over the last axis with bias", OpKind::kLayerNorm);
    b.output(b.node(OpKind::kLayerNorm,
                    {b.input("x", s3, x3), b.constant("scale", {4}, gamma),
                     b.constant("bias", {4}, beta)},
                    layer_norm_attrs(2, 1e-5f))
                 .at(0),
             layer_norm_truth(x3, s3, 2, g4, b4, double(1e-5f)));
    cases.push_back(b.take());
  }
  {
    // Scale [1, 4] broadcast over the normalized dims [3, 4]; a large epsilon.
    Values g12;
    for (int i = 0; i < 3; ++i) g12.insert(g12.end(), g4.begin(), g4.end());
    CaseBuilder b("LayerNormalization over the last two axes, scale broadcast, no bias",
                  OpKind::kLayerNorm);
    b.output(b.node(OpKind::kLayerNorm, {b.input("x", s3, x3), b.constant("scale", {1, 4}, gamma)},
                    layer_norm_attrs(1, 0.25f))
                 .at(0),
             layer_norm_truth(x3, s3, 1, g12, {}, 0.25));
    cases.push_back(b.take());
  }
  {
    // x [2, 3, 2, 2] from axis 1 (12 values per row); scale and bias per
    // channel [3, 1, 1]; then a Mul by a constant joins the unit as an epilogue.
    const ir::Shape s4{2, 3, 2, 2};
    const std::vector<float> x = ramp(ir::num_elements(s4), -3.0f, 2.0f);
    const std::vector<float> sc{2.0f, -1.0f, 0.5f}, bi{0.25f, 0.0f, -0.5f};
    Values scale, bias;
    for (size_t i = 0; i < 12; ++i) {
      scale.push_back(sc[i / 4]);
      bias.push_back(bi[i / 4]);
    }
    Values e = layer_norm_truth(x, s4, 1, scale, bias, double(1e-6f));
    for (double& v : e) v *= double(0.125f);
    CaseBuilder b("LayerNormalization from the channel axis with a layer-scale epilogue",
                  OpKind::kLayerNorm);
    const auto ln = b.node(OpKind::kLayerNorm,
                           {b.input("x", s4, x), b.constant("scale", {3, 1, 1}, sc),
                            b.constant("bias", {3, 1, 1}, bi)},
                           layer_norm_attrs(1, 1e-6f), 1, "ln");
    b.output(b.node(OpKind::kMul, {ln.at(0), b.constant("layer_scale", {}, {0.125f})}).at(0), e);
    b.expect_units(1);  // the Mul is the LayerNormalization's epilogue
    cases.push_back(b.take());
  }
  {
    // The LayerNormalization of b [2, 4, 4] writes its output into its slice
    // of a concatenation on axis 1 with a [2, 3, 4]: batch stride 28, not 16.
    // (An input is strided only as a merged convolution's member output,
    // which a one-node case cannot make; the storage plan places a concat
    // input in its slice only when the concat is its one reader.)
    const ir::Shape sb{2, 4, 4};
    const std::vector<float> bv = ramp(ir::num_elements(sb), -1.0f, 4.0f);
    CaseBuilder b("LayerNormalization written into a concatenation's slice (strided output)",
                  OpKind::kLayerNorm);
    const auto a = b.input("a", s3, x3), bi = b.input("b", sb, bv);
    ir::AxisAttrs cat;
    cat.axis = 1;
    const auto lb = b.node(OpKind::kLayerNorm, {bi, b.constant("scale", {4}, gamma)},
                           layer_norm_attrs(2, 1e-5f), 1, "ln_b");
    const Values eb = layer_norm_truth(bv, sb, 2, g4, {}, double(1e-5f));
    Values concat_b;
    for (int64_t n = 0; n < 2; ++n) {
      concat_b.insert(concat_b.end(), eb.begin() + n * 16, eb.begin() + (n + 1) * 16);
      concat_b.insert(concat_b.end(), x3.begin() + n * 12, x3.begin() + (n + 1) * 12);
    }
    b.output(b.node(OpKind::kConcat, {lb.at(0), a}, cat, 1, "cat_b").at(0), concat_b);
    cases.push_back(b.take());
  }
}

std::vector<OpCase> make_cases() {
  std::vector<OpCase> cases;
  const ir::Shape s4{2, 3, 2, 2};
  const int64_t n4 = ir::num_elements(s4);
  const std::vector<float> x4 = ramp(n4, -3.0f, 2.5f);

  // Conv: 3x3, pads 1, bias, on [1, 2, 4, 4] -> [1, 3, 4, 4].
  {
    CaseBuilder b("Conv", OpKind::kConv);
    const ir::Shape xs{1, 2, 4, 4};
    const auto x = ramp(32, -1.0f, 1.0f);
    const auto w = ramp(3 * 2 * 9, -0.5f, 0.6f);
    const std::vector<float> bias{0.1f, -0.2f, 0.3f};
    ir::ConvAttrs a;
    a.kernel = {3, 3};
    a.pads = {1, 1, 1, 1};
    Values e;
    for (int64_t m = 0; m < 3; ++m)
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 4; ++j) {
          double acc = bias[static_cast<size_t>(m)];
          for (int64_t c = 0; c < 2; ++c)
            for (int64_t u = 0; u < 3; ++u)
              for (int64_t v = 0; v < 3; ++v) {
                const int64_t h = i - 1 + u, ww = j - 1 + v;
                if (h < 0 || h >= 4 || ww < 0 || ww >= 4) continue;
                acc += static_cast<double>(x[at4(xs, 0, c, h, ww)]) * w[static_cast<size_t>(((m * 2 + c) * 3 + u) * 3 + v)];
              }
          e.push_back(acc);
        }
    b.output(b.node(OpKind::kConv, {b.input("x", xs, x), b.constant("w", {3, 2, 3, 3}, w), b.constant("b", {3}, bias)}, a).at(0), e);
    cases.push_back(b.take());
  }

  unary_case(cases, "Relu", OpKind::kRelu, {}, [](double v) { return std::max(0.0, v); });
  unary_case(cases, "Clip", OpKind::kClip, clip_attrs(-1.0f, 2.5f),
             [](double v) { return std::min(2.5, std::max(-1.0, v)); });
  unary_case(cases, "Sigmoid", OpKind::kSigmoid, {}, [](double v) { return 1.0 / (1.0 + std::exp(-v)); });
  unary_case(cases, "HardSigmoid", OpKind::kHardSigmoid, hard_sigmoid_attrs(0.3f, 0.4f),
             [](double v) { return std::min(1.0, std::max(0.0, double(0.3f) * v + double(0.4f))); });
  unary_case(cases, "HardSwish", OpKind::kHardSwish, {},
             [](double v) { return v * std::min(1.0, std::max(0.0, v / 6.0 + 0.5)); }, -5.0f, 5.0f);
  unary_case(cases, "Tanh", OpKind::kTanh, {}, [](double v) { return std::tanh(v); });
  unary_case(cases, "Sqrt", OpKind::kSqrt, {}, [](double v) { return std::sqrt(v); }, 0.0f, 4.0f);
  unary_case(cases, "Reciprocal", OpKind::kReciprocal, {}, [](double v) { return 1.0 / v; });  // no zero on the ramp
  unary_case(cases, "Erf", OpKind::kErf, {}, [](double v) { return std::erf(v); });
  unary_case(cases, "Exp", OpKind::kExp, {}, [](double v) { return std::exp(v); });
  unary_case(cases, "Gelu", OpKind::kGelu, ir::GeluAttrs{false},
             [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }, -5.0f, 5.0f);
  unary_case(cases, "Gelu tanh approximation", OpKind::kGelu, ir::GeluAttrs{true}, [](double v) {
    return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / std::acos(-1.0)) * (v + 0.044715 * v * v * v)));
  }, -5.0f, 5.0f);

  // Add of two activations, one broadcast [3, 1, 1]; Mul by a constant [1, 3, 1, 1].
  {
    CaseBuilder b("Add", OpKind::kAdd);
    const std::vector<float> c{0.5f, -1.25f, 2.0f};
    Values e;
    for (int64_t i = 0; i < n4; ++i) e.push_back(double(x4[static_cast<size_t>(i)]) + c[static_cast<size_t>((i / 4) % 3)]);
    b.output(b.node(OpKind::kAdd, {b.input("a", s4, x4), b.input("b", {3, 1, 1}, c)}).at(0), e);
    cases.push_back(b.take());
  }
  {
    CaseBuilder b("Mul", OpKind::kMul);
    const std::vector<float> c{0.5f, -1.25f, 2.0f};
    Values e;
    for (int64_t i = 0; i < n4; ++i) e.push_back(double(x4[static_cast<size_t>(i)]) * c[static_cast<size_t>((i / 4) % 3)]);
    b.output(b.node(OpKind::kMul, {b.input("a", s4, x4), b.constant("s", {1, 3, 1, 1}, c)}).at(0), e);
    cases.push_back(b.take());
  }

  // The activations of networks outside torchvision, with ONNX's definitions
  // in float64 (softplus as log1p(exp(x)): no overflow on the ramp).
  const auto act = [](float alpha, float beta = 0.0f) { return ir::ActivationAttrs{alpha, beta}; };
  const auto softplus = [](double v) { return std::log1p(std::exp(v)); };
  unary_case(cases, "LeakyRelu", OpKind::kLeakyRelu, act(0.1f), [](double v) { return v < 0 ? double(0.1f) * v : v; });
  unary_case(cases, "Elu", OpKind::kElu, act(0.7f), [](double v) { return v < 0 ? double(0.7f) * std::expm1(v) : v; });
  unary_case(cases, "Selu", OpKind::kSelu, act(1.6732632f, 1.050701f), [](double v) {
    return double(1.050701f) * (v <= 0 ? double(1.6732632f) * std::expm1(v) : v);
  });
  unary_case(cases, "Celu", OpKind::kCelu, act(2.0f), [](double v) { return v < 0 ? 2.0 * std::expm1(v / 2.0) : v; });
  unary_case(cases, "ThresholdedRelu", OpKind::kThresholdedRelu, act(0.5f), [](double v) { return v > 0.5 ? v : 0.0; });
  unary_case(cases, "Softplus", OpKind::kSoftplus, {}, softplus, -25.0f, 25.0f);
  unary_case(cases, "Softsign", OpKind::kSoftsign, {}, [](double v) { return v / (1.0 + std::abs(v)); });
  unary_case(cases, "Mish", OpKind::kMish, {}, [&](double v) { return v * std::tanh(softplus(v)); }, -25.0f, 25.0f);
  unary_case(cases, "Neg", OpKind::kNeg, {}, [](double v) { return -v; });
  unary_case(cases, "Abs", OpKind::kAbs, {}, [](double v) { return std::abs(v); });
  // PRelu's slope per channel ([3, 1, 1] and [1, 3, 1, 1]), on either side and
  // fused; Max and Min likewise.
  binary_cases(cases, "PRelu", OpKind::kPRelu, [](double a, double b) { return a < 0 ? a * b : a; });
  binary_cases(cases, "Max", OpKind::kMax, [](double a, double b) { return std::max(a, b); });
  binary_cases(cases, "Min", OpKind::kMin, [](double a, double b) { return std::min(a, b); });
  {
    CaseBuilder b("PRelu with one slope for every element", OpKind::kPRelu);
    Values e;
    for (float v : x4) e.push_back(v < 0 ? double(v) * double(0.25f) : double(v));
    b.output(b.node(OpKind::kPRelu, {b.input("x", s4, x4), b.constant("slope", {1}, {0.25f})}).at(0), e);
    cases.push_back(b.take());
  }

  binary_cases(cases, "Sub", OpKind::kSub, [](double a, double b) { return a - b; });
  binary_cases(cases, "Div", OpKind::kDiv, [](double a, double b) { return a / b; });
  // Pow: a scalar exponent 2 (LayerNorm's variance), also fused; exponents
  // broadcast per channel on a positive base.
  {
    CaseBuilder b("Pow", OpKind::kPow);
    Values e;
    for (float v : x4) e.push_back(double(v) * double(v));
    b.output(b.node(OpKind::kPow, {b.input("x", s4, x4), b.constant("e", {}, {2.0f})}).at(0), e);
    cases.push_back(b.take());
  }
  {
    CaseBuilder b("Pow by a broadcast exponent fused after a convolution", OpKind::kPow);
    const std::vector<float> base = ramp(n4, 0.25f, 3.0f), ex{0.5f, -1.5f, 3.0f};
    Values e;
    for (int64_t i = 0; i < n4; ++i)
      e.push_back(std::pow(double(base[static_cast<size_t>(i)]), double(ex[static_cast<size_t>((i / 4) % 3)])));
    const auto c = b.node(OpKind::kConv, {b.input("x", s4, base), b.constant("w", {3, 3, 1, 1}, identity_1x1(3))},
                          ir::ConvAttrs{}, 1, "c");
    b.output(b.node(OpKind::kPow, {c.at(0), b.constant("e", {3, 1, 1}, ex)}).at(0), e);
    b.expect_units(1);
    cases.push_back(b.take());
  }

  // Concat on channels of [1, 2, 2, 2] and [1, 3, 2, 2].
  {
    CaseBuilder b("Concat", OpKind::kConcat);
    const auto p = ramp(8, 0.0f, 7.0f), q = ramp(12, 10.0f, 21.0f);
    Values e = as_double(p);
    for (float v : q) e.push_back(v);
    ir::AxisAttrs a;
    a.axis = 1;
    b.output(b.node(OpKind::kConcat, {b.input("p", {1, 2, 2, 2}, p), b.input("q", {1, 3, 2, 2}, q)}, a).at(0), e);
    cases.push_back(b.take());
  }
  // Split [1, 3, 2, 2] on channels into 1 + 2.
  {
    CaseBuilder b("Split", OpKind::kSplit);
    const auto x = ramp(12, 0.0f, 11.0f);
    ir::SplitAttrs a;
    a.axis = 1;
    a.sizes = {1, 2};
    const auto outs = b.node(OpKind::kSplit, {b.input("x", {1, 3, 2, 2}, x)}, a, 2);
    b.output(outs[0], Values(x.begin(), x.begin() + 4));
    b.output(outs[1], Values(x.begin() + 4, x.end()));
    cases.push_back(b.take());
  }
  // Slice the last axis of [1, 2, 2, 5]: 1, 3 (start 1, end 4, step 2).
  {
    CaseBuilder b("Slice", OpKind::kSlice);
    const auto x = ramp(20, 0.0f, 19.0f);
    ir::SliceAttrs a;
    a.axes = {3};
    a.starts = {1};
    a.ends = {4};
    a.steps = {2};
    Values e;
    for (int64_t r = 0; r < 4; ++r) {
      e.push_back(x[static_cast<size_t>(r * 5 + 1)]);
      e.push_back(x[static_cast<size_t>(r * 5 + 3)]);
    }
    b.output(b.node(OpKind::kSlice, {b.input("x", {1, 2, 2, 5}, x)}, a).at(0), e);
    cases.push_back(b.take());
  }
  // Pools on [1, 2, 4, 4].
  {
    const ir::Shape xs{1, 2, 4, 4};
    const auto x = ramp(32, -2.0f, 3.0f);
    const ir::PoolAttrs max = pool_attrs(2, 2, {0, 0, 0, 0});
    CaseBuilder b("MaxPool", OpKind::kMaxPool);
    b.output(b.node(OpKind::kMaxPool, {b.input("x", xs, x)}, max).at(0), pool_truth(x, xs, max, true));
    cases.push_back(b.take());
    const ir::PoolAttrs avg = pool_attrs(3, 1, {1, 1, 1, 1});
    CaseBuilder c("AveragePool", OpKind::kAveragePool);
    c.output(c.node(OpKind::kAveragePool, {c.input("x", xs, x)}, avg).at(0), pool_truth(x, xs, avg, false));
    cases.push_back(c.take());
    Values means;
    for (int64_t ch = 0; ch < 2; ++ch) {
      double sum = 0.0;
      for (int64_t i = 0; i < 16; ++i) sum += x[static_cast<size_t>(ch * 16 + i)];
      means.push_back(sum / 16.0);
    }
    CaseBuilder d("GlobalAveragePool", OpKind::kGlobalAveragePool);
    d.output(d.node(OpKind::kGlobalAveragePool, {d.input("x", xs, x)}).at(0), means);
    cases.push_back(d.take());
    ir::ReduceAttrs r;
    r.axes = {2, 3};
    r.keepdims = false;
    CaseBuilder f("ReduceMean", OpKind::kReduceMean);
    f.output(f.node(OpKind::kReduceMean, {f.input("x", xs, x)}, r).at(0), means);
    cases.push_back(f.take());
  }
  // Flatten and Reshape keep the elements in order.
  {
    ir::AxisAttrs a;
    a.axis = 1;
    CaseBuilder b("Flatten", OpKind::kFlatten);
    b.output(b.node(OpKind::kFlatten, {b.input("x", s4, x4)}, a).at(0), as_double(x4));
    cases.push_back(b.take());
    ir::ReshapeAttrs r;
    r.shape = {2, 6, 2};
    CaseBuilder c("Reshape", OpKind::kReshape);
    c.output(c.node(OpKind::kReshape, {c.input("x", s4, x4)}, r).at(0), as_double(x4));
    cases.push_back(c.take());
  }
  // Transpose NCHW -> NHWC.
  {
    ir::TransposeAttrs a;
    a.perm = {0, 2, 3, 1};
    Values e;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t w = 0; w < 2; ++w)
          for (int64_t c = 0; c < 3; ++c) e.push_back(x4[at4(s4, n, c, h, w)]);
    CaseBuilder b("Transpose", OpKind::kTranspose);
    b.output(b.node(OpKind::kTranspose, {b.input("x", s4, x4)}, a).at(0), e);
    cases.push_back(b.take());
  }
  // Gemm: Y = 0.5 * A B' + 2 C, A [2, 3], B [4, 3], C [4].
  {
    const auto a = ramp(6, -1.0f, 1.5f), w = ramp(12, -0.75f, 0.5f);
    const std::vector<float> c{0.25f, -0.5f, 1.0f, 0.0f};
    ir::GemmAttrs g;
    g.alpha = 0.5f;
    g.beta = 2.0f;
    g.trans_b = true;
    Values e;
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        double acc = 0.0;
        for (int64_t k = 0; k < 3; ++k) acc += double(a[static_cast<size_t>(i * 3 + k)]) * w[static_cast<size_t>(j * 3 + k)];
        e.push_back(0.5 * acc + 2.0 * c[static_cast<size_t>(j)]);
      }
    CaseBuilder b("Gemm", OpKind::kGemm);
    b.output(b.node(OpKind::kGemm, {b.input("a", {2, 3}, a), b.constant("w", {4, 3}, w), b.constant("c", {4}, c)}, g).at(0), e);
    cases.push_back(b.take());
    // MatMul: [2, 3] x [3, 4] (the same B, not transposed).
    Values m;
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        double acc = 0.0;
        for (int64_t k = 0; k < 3; ++k) acc += double(a[static_cast<size_t>(i * 3 + k)]) * w[static_cast<size_t>(k * 4 + j)];
        m.push_back(acc);
      }
    CaseBuilder d("MatMul", OpKind::kMatMul);
    d.output(d.node(OpKind::kMatMul, {d.input("a", {2, 3}, a), d.constant("w", {3, 4}, w)}).at(0), m);
    cases.push_back(d.take());
  }
  // Softmax over channels.
  {
    ir::AxisAttrs a;
    a.axis = 1;
    Values e(static_cast<size_t>(n4));
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t r = 0; r < 4; ++r) {
        double sum = 0.0;
        for (int64_t c = 0; c < 3; ++c) sum += std::exp(double(x4[static_cast<size_t>(n * 12 + c * 4 + r)]));
        for (int64_t c = 0; c < 3; ++c) {
          const auto i = static_cast<size_t>(n * 12 + c * 4 + r);
          e[i] = std::exp(double(x4[i])) / sum;
        }
      }
    CaseBuilder b("Softmax", OpKind::kSoftmax);
    b.output(b.node(OpKind::kSoftmax, {b.input("x", s4, x4)}, a).at(0), e);
    cases.push_back(b.take());
  }
  // LogSoftmax over channels, and over the last axis with values whose
  // probabilities underflow float32 (differences of 120).
  for (bool wide : {false, true}) {
    ir::AxisAttrs a;
    a.axis = wide ? 3 : 1;
    const std::vector<float> x = wide ? ramp(n4, -60.0f, 60.0f) : x4;
    Values e(static_cast<size_t>(n4));
    const int64_t len = wide ? 2 : 3, inner = wide ? 1 : 4, outer = n4 / (len * inner);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        double mx = -1e300, sum = 0.0;
        for (int64_t j = 0; j < len; ++j) mx = std::max(mx, double(x[static_cast<size_t>((o * len + j) * inner + i)]));
        for (int64_t j = 0; j < len; ++j) sum += std::exp(double(x[static_cast<size_t>((o * len + j) * inner + i)]) - mx);
        for (int64_t j = 0; j < len; ++j) {
          const auto k = static_cast<size_t>((o * len + j) * inner + i);
          e[k] = double(x[k]) - mx - std::log(sum);
        }
      }
    CaseBuilder b(wide ? "LogSoftmax over the last axis, probabilities below float32's range" : "LogSoftmax",
                  OpKind::kLogSoftmax);
    b.output(b.node(OpKind::kLogSoftmax, {b.input("x", s4, x)}, a).at(0), e);
    cases.push_back(b.take());
  }
  // Reductions over any axes of x [2, 3, 2, 2], in float64: channels with
  // keepdims, batch and width without, and every axis; the norms and
  // ReduceLogSumExp also over height and width with keepdims (ConvNeXt-V2's
  // GRN over the spatial axes of an NHWC tensor), and ReduceLogSumExp over
  // values whose exp is beyond float32's range (e^100 > 3.4e38), which only
  // subtracting the maximum first keeps finite.
  {
    const std::vector<std::pair<OpKind, std::string>> kinds = {{OpKind::kReduceSum, "ReduceSum"},
                                                                {OpKind::kReduceMax, "ReduceMax"},
                                                                {OpKind::kReduceMin, "ReduceMin"},
                                                                {OpKind::kReduceProd, "ReduceProd"},
                                                                {OpKind::kReduceMean, "ReduceMean"},
                                                                {OpKind::kReduceL1, "ReduceL1"},
                                                                {OpKind::kReduceL2, "ReduceL2"},
                                                                {OpKind::kReduceSumSquare, "ReduceSumSquare"},
                                                                {OpKind::kReduceLogSumExp, "ReduceLogSumExp"},
                                                                {OpKind::kReduceLogSumExp, "ReduceLogSumExp (large)"}};
    for (const auto& [kind, name] : kinds) {
      const bool large = name.find("large") != std::string::npos;
      const bool norm = kind == OpKind::kReduceL1 || kind == OpKind::kReduceL2 || kind == OpKind::kReduceSumSquare ||
                        kind == OpKind::kReduceLogSumExp;
      const std::vector<float> x = large ? ramp(n4, 60.0f, 100.0f) : ramp(n4, -1.5f, 1.25f);  // products stay small
      std::vector<std::vector<int64_t>> axes_sets = {{1}, {0, 3}, {}};
      if (norm) axes_sets.push_back({1, 2});
      if (large) axes_sets = {{1}, {}};
      for (const std::vector<int64_t>& axes : axes_sets) {
        ir::ReduceAttrs r;
        r.axes = axes;
        r.keepdims = axes.size() == 1 || axes == std::vector<int64_t>{1, 2};
        std::vector<bool> reduced(4, axes.empty());
        for (int64_t d : axes) reduced[static_cast<size_t>(d)] = true;
        std::map<std::vector<int64_t>, std::vector<double>> groups;  // kept coordinates -> values
        for (int64_t i = 0; i < n4; ++i) {
          const std::vector<int64_t> c{i / 12, (i / 4) % 3, (i / 2) % 2, i % 2};
          std::vector<int64_t> key;
          for (size_t d = 0; d < 4; ++d) key.push_back(reduced[d] ? 0 : c[d]);
          groups[key].push_back(x[static_cast<size_t>(i)]);
        }
        Values e;
        for (const auto& [key, values] : groups) {
          double acc = kind == OpKind::kReduceProd ? 1.0 : kind == OpKind::kReduceMax ? -1e300 : kind == OpKind::kReduceMin ? 1e300 : 0.0;
          const double mx = *std::max_element(values.begin(), values.end());
          for (double v : values) {
            if (kind == OpKind::kReduceProd) acc *= v;
            else if (kind == OpKind::kReduceMax) acc = std::max(acc, v);
            else if (kind == OpKind::kReduceMin) acc = std::min(acc, v);
            else if (kind == OpKind::kReduceL1) acc += std::fabs(v);
            else if (kind == OpKind::kReduceL2 || kind == OpKind::kReduceSumSquare) acc += v * v;
            else if (kind == OpKind::kReduceLogSumExp) acc += std::exp(v - mx);
            else acc += v;
          }
          e.push_back(kind == OpKind::kReduceMean        ? acc / double(values.size())
                      : kind == OpKind::kReduceL2        ? std::sqrt(acc)
                      : kind == OpKind::kReduceLogSumExp ? mx + std::log(acc)
                                                         : acc);
        }
        const std::string over = axes.empty()        ? " over every axis"
                                 : axes.size() == 1  ? " over channels"
                                 : axes[0] == 1      ? " over height and width"
                                                     : " over batch and width";
        if (kind == OpKind::kReduceMean && axes.size() != 1) continue;  // the other ReduceMean cases are above
        CaseBuilder b(large ? "ReduceLogSumExp" + over + ", e^x beyond float32's range" : name + over, kind);
        b.output(b.node(kind, {b.input("x", s4, x)}, r).at(0), e);
        cases.push_back(b.take());
      }
    }
  }
  // ConvTranspose: the scatter of each input element through its weights
  // [C_in, C_out / group, kh, kw] in float64. U-Net's up-sampling (stride 2,
  // pads 1, output_padding 1, bias), and grouped and dilated with a Relu
  // epilogue in its unit.
  for (bool grouped : {false, true}) {
    ir::ConvTransposeAttrs a;
    a.kernel = {3, 3};
    a.stride = grouped ? ios::ir::Dims{1, 1} : ios::ir::Dims{2, 2};
    a.dilation = grouped ? ios::ir::Dims{2, 2} : ios::ir::Dims{1, 1};
    a.pads = grouped ? ios::ir::Dims{2, 2, 2, 2} : ios::ir::Dims{1, 1, 1, 1};
    a.output_padding = grouped ? ios::ir::Dims{0, 0} : ios::ir::Dims{1, 1};
    a.group = grouped ? 2 : 1;
    const int64_t cin = grouped ? 4 : 2, h = grouped ? 4 : 3, cout_g = grouped ? 1 : 3, cout = cout_g * a.group;
    const int64_t oh = a.stride[0] * (h - 1) + a.output_padding[0] + (a.kernel[0] - 1) * a.dilation[0] + 1 -
                       a.pads[0] - a.pads[2];
    const ir::Shape xs{1, cin, h, h};
    const auto x = ramp(cin * h * h, -1.0f, 1.2f);
    const auto w = ramp(cin * cout_g * 9, -0.6f, 0.5f);
    const std::vector<float> bias{0.1f, -0.2f, 0.3f};
    std::vector<double> y(static_cast<size_t>(cout * oh * oh), 0.0);
    for (int64_t m = 0; m < cout && !grouped; ++m)
      for (int64_t k = 0; k < oh * oh; ++k) y[static_cast<size_t>(m * oh * oh + k)] = bias[static_cast<size_t>(m)];
    for (int64_t ci = 0; ci < cin; ++ci)
      for (int64_t co = 0; co < cout_g; ++co)
        for (int64_t i = 0; i < h; ++i)
          for (int64_t j = 0; j < h; ++j)
            for (int64_t u = 0; u < 3; ++u)
              for (int64_t v = 0; v < 3; ++v) {
                const int64_t r = i * a.stride[0] - a.pads[0] + u * a.dilation[0];
                const int64_t c = j * a.stride[1] - a.pads[1] + v * a.dilation[1];
                if (r < 0 || r >= oh || c < 0 || c >= oh) continue;
                const int64_t m = (ci / (cin / a.group)) * cout_g + co;
                y[static_cast<size_t>((m * oh + r) * oh + c)] +=
                    double(x[static_cast<size_t>((ci * h + i) * h + j)]) * w[static_cast<size_t>(((ci * cout_g + co) * 3 + u) * 3 + v)];
              }
    Values e(y.begin(), y.end());
    if (grouped) {
      for (double& v : e) v = std::max(0.0, v);
      CaseBuilder b("ConvTranspose grouped and dilated, Relu fused", OpKind::kConvTranspose);
      const auto t = b.node(OpKind::kConvTranspose, {b.input("x", xs, x), b.constant("w", {cin, cout_g, 3, 3}, w)}, a,
                            1, "ct");
      b.output(b.node(OpKind::kRelu, {t.at(0)}).at(0), e);
      b.expect_units(1);
      cases.push_back(b.take());
    } else {
      CaseBuilder b("ConvTranspose", OpKind::kConvTranspose);
      b.output(b.node(OpKind::kConvTranspose,
                      {b.input("x", xs, x), b.constant("w", {cin, cout_g, 3, 3}, w), b.constant("b", {cout}, bias)}, a)
                   .at(0),
               e);
      cases.push_back(b.take());
    }
  }
  // Tile [2, 3, 2, 2] by [1, 2, 1, 3], and [3, 4] by [2, 1, ...] on rank 6
  // with every axis repeated (the CUDA lowering peels repeats into copies).
  {
    const ir::Shape xs = s4;
    const std::vector<int64_t> repeats{1, 2, 1, 3};
    ir::Shape ys = xs;
    for (size_t d = 0; d < 4; ++d) ys[d] *= repeats[d];
    Values e;
    for (int64_t n = 0; n < ys[0]; ++n)
      for (int64_t c = 0; c < ys[1]; ++c)
        for (int64_t h = 0; h < ys[2]; ++h)
          for (int64_t w = 0; w < ys[3]; ++w) e.push_back(x4[at4(xs, n % 2, c % 3, h % 2, w % 2)]);
    CaseBuilder b("Tile", OpKind::kTile);
    b.output(b.node(OpKind::kTile, {b.input("x", xs, x4)}, ir::TileAttrs{repeats}).at(0), e);
    cases.push_back(b.take());
  }
  {
    const ir::Shape xs{1, 2, 1, 2, 1, 2};
    const std::vector<float> x = ramp(8, -1.0f, 1.0f);
    const std::vector<int64_t> repeats{2, 2, 2, 2, 2, 2};
    Values e;
    for (int64_t i = 0; i < 64 * 8; ++i) {
      // Output coordinates over [2, 4, 2, 4, 2, 4], each taken modulo the input's.
      int64_t rest = i, src = 0, scale = 1;
      const int64_t out_dims[6] = {2, 4, 2, 4, 2, 4};
      for (int d = 5; d >= 0; --d) {
        const int64_t coord = rest % out_dims[d];
        rest /= out_dims[d];
        src += (coord % xs[static_cast<size_t>(d)]) * scale;
        scale *= xs[static_cast<size_t>(d)];
      }
      e.push_back(x[static_cast<size_t>(src)]);
    }
    CaseBuilder b("Tile of rank 6, every axis repeated", OpKind::kTile);
    b.output(b.node(OpKind::kTile, {b.input("x", xs, x)}, ir::TileAttrs{repeats}).at(0), e);
    cases.push_back(b.take());
  }
  add_attention_cases(cases);
  // Pad [1, 1, 2, 2]: one row on top, two columns left, one column right; value 0.5.
  {
    const auto x = ramp(4, 1.0f, 4.0f);
    ir::PadAttrs a;
    a.pads = {0, 0, 1, 2, 0, 0, 0, 1};
    a.value = 0.5f;
    Values e;
    for (int64_t h = 0; h < 3; ++h)
      for (int64_t w = 0; w < 5; ++w) {
        const int64_t ih = h - 1, iw = w - 2;
        e.push_back(ih >= 0 && ih < 2 && iw >= 0 && iw < 2 ? double(x[static_cast<size_t>(ih * 2 + iw)]) : 0.5);
      }
    CaseBuilder b("Pad", OpKind::kPad);
    b.output(b.node(OpKind::kPad, {b.input("x", {1, 1, 2, 2}, x)}, a).at(0), e);
    cases.push_back(b.take());
  }
  // BatchNormalization (standalone: nothing to fold it into).
  {
    const std::vector<float> scale{1.5f, -0.5f, 2.0f}, bias{0.1f, 0.2f, -0.3f}, mean{0.25f, -1.0f, 0.5f},
        var{1.0f, 0.5f, 2.0f};
    ir::BatchNormAttrs a;
    a.epsilon = 1e-3f;
    Values e;
    for (int64_t i = 0; i < n4; ++i) {
      const auto c = static_cast<size_t>((i / 4) % 3);
      e.push_back(double(scale[c]) * (double(x4[static_cast<size_t>(i)]) - mean[c]) / std::sqrt(double(var[c]) + double(1e-3f)) +
                  bias[c]);
    }
    CaseBuilder b("BatchNormalization", OpKind::kBatchNorm);
    b.output(b.node(OpKind::kBatchNorm, {b.input("x", s4, x4), b.constant("scale", {3}, scale), b.constant("bias", {3}, bias),
                                         b.constant("mean", {3}, mean), b.constant("var", {3}, var)}, a).at(0), e);
    cases.push_back(b.take());
  }

  resize_cases(cases);
  window_nd_cases(cases);
  layer_norm_cases(cases);
  cast_cases(cases);

  std::stable_sort(cases.begin(), cases.end(), [](const OpCase& a, const OpCase& b) { return a.op < b.op; });
  return cases;
}

}  // namespace

sched::Schedule sequential_schedule(const sched::UnitGraph& units) {
  sched::StagedSchedule staged;
  for (sched::UnitId u = 0; u < units.size(); ++u) {
    sched::Stage stage;
    stage.groups = {{u}};
    staged.stages.push_back(stage);
  }
  sched::Schedule schedule;
  schedule.body = staged;
  return schedule;
}

std::vector<OpCase> all_op_cases() { return make_cases(); }

void check_case(const OpCase& op_case, const std::string& backend_name, const Backend& backend) {
  INFO(op_case.name << " on " << backend_name);
  const sched::UnitGraph units = sched::UnitGraph::form(op_case.graph);
  if (op_case.units > 0) REQUIRE(units.size() == op_case.units);
  const exec::ExecPlan plan = exec::lower(units, sequential_schedule(units));
  const HostMap outputs = backend(units, plan, op_case.inputs);
  REQUIRE(outputs.size() == op_case.expected.size());
  for (const auto& [name, expected] : op_case.expected) {
    INFO("output " << name);
    const auto it = outputs.find(name);
    REQUIRE(it != outputs.end());
    REQUIRE(it->second.data.size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      INFO("element " << i);
      CHECK(std::abs(double(it->second.data[i]) - expected[i]) <= op_case.tolerance * (1.0 + std::abs(expected[i])));
    }
  }
}

}  // namespace ios::optest
