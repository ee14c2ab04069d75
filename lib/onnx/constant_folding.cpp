#include "onnx/constant_folding.h"

#include <algorithm>
#include <limits>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_set>

#include "core/error.h"
#include "ir/elementwise.h"
#include "ir/shape_inference.h"
#include "onnx/attributes.h"
#include "onnx/const_tensor.h"

namespace ios::onnx {
namespace {

using ::onnx::NodeProto;
using ::onnx::TensorProto;
using Values = std::vector<const ConstTensor*>;  // one per node input; null when absent

// Initializers larger than this are never decoded for folding: shape
// arithmetic is small, and weights reach the IR untouched.
constexpr int64_t kMaxFoldElements = int64_t{1} << 22;

// Exact integer arithmetic beyond int64 (Range's span); __extension__ keeps
// -Wpedantic quiet about the GCC/Clang type.
__extension__ typedef __int128 Int128;
// All values one folding round holds at once (decoded inputs and results):
// each is capped above, and so are they together, at 512 MiB of doubles.
constexpr int64_t kMaxFoldTotalElements = int64_t{1} << 26;
// Shape arithmetic has small ranks; a hostile Unsqueeze could grow them.
constexpr size_t kMaxFoldRank = 64;

struct Context {
  const NodeProto& node;
  int64_t opset;
  const std::string& file;

  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> what, Args&&... args) const {
    user_error("{}: node {}: {}", file, node_label(node), fmt::format(what, std::forward<Args>(args)...));
  }
};

std::vector<int64_t> strides_of(const ir::Shape& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) s[d - 1] = s[d] * dims[d];
  return s;
}

int64_t normalize_axis(const Context& ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) ctx.fail("axis {} out of range for rank {}", axis, rank);
  return axis < 0 ? axis + rank : axis;
}

// Linear index into `in_dims` (right-aligned, broadcast) of output index `out`.
size_t broadcast_index(size_t out, const ir::Shape& out_dims, const ir::Shape& in_dims) {
  size_t index = 0, in_stride = 1;
  const size_t offset = out_dims.size() - in_dims.size();
  for (size_t d = out_dims.size(); d-- > 0;) {
    const auto dim = static_cast<size_t>(out_dims[d]);
    const size_t coord = out % dim;
    out /= dim;
    if (d >= offset) {
      const auto in_dim = static_cast<size_t>(in_dims[d - offset]);
      if (in_dim != 1) index += coord * in_stride;
      in_stride *= in_dim;
    }
  }
  return index;
}

// A tensor of `like`'s type with the given dims, elements copied from
// `src` at the given linear indices.
ConstTensor gather_elements(const ConstTensor& src, ir::Shape dims, const std::vector<size_t>& idx) {
  ConstTensor out;
  out.dtype = src.dtype;
  out.dims = std::move(dims);
  if (src.is_float()) {
    out.f.reserve(idx.size());
    for (size_t k : idx) out.f.push_back(src.f[k]);
  } else {
    out.i.reserve(idx.size());
    for (size_t k : idx) out.i.push_back(src.i[k]);
  }
  return out;
}

ConstTensor reshaped(const ConstTensor& src, ir::Shape dims) {
  ConstTensor out = src;
  out.dims = std::move(dims);
  return out;
}

// The element count of a folded result whose dimensions come from the file:
// checked before anything is allocated, so hostile shapes fail with a
// message instead of exhausting memory. Zero dimensions do not exempt the
// others: every product of a result's dimensions stays far from overflow.
size_t folded_count(const Context& ctx, const ir::Shape& dims) {
  if (dims.size() > kMaxFoldRank) ctx.fail("the result has rank {}, more than {}", dims.size(), kMaxFoldRank);
  int64_t nonzero = 1;
  bool empty = false;
  for (int64_t d : dims) {
    if (d < 0) ctx.fail("the result has a negative dimension ({})", ir::to_string(dims));
    empty = empty || d == 0;
    if (d > 0 && (__builtin_mul_overflow(nonzero, d, &nonzero) || nonzero > kMaxFoldElements)) {
      ctx.fail("the result ({} elements) is too large to fold (at most {})", ir::to_string(dims),
               kMaxFoldElements);
    }
  }
  return empty ? 0 : static_cast<size_t>(nonzero);
}

int64_t checked_int(const Context& ctx, double v, std::string_view what) {
  constexpr double kLimit = 9223372036854775808.0;  // 2^63
  if (!(v > -kLimit && v < kLimit)) ctx.fail("{} gives {}, outside the int64 range", what, v);
  return static_cast<int64_t>(v);
}

ir::Shape broadcast(const Context& ctx, const ir::Shape& a, const ir::Shape& b) {
  auto out = ir::broadcast_shapes(a, b);
  if (!out) ctx.fail("shapes {} and {} do not broadcast", ir::to_string(a), ir::to_string(b));
  return *out;
}

enum class Binary { kAdd, kSub, kMul, kDiv, kMod, kPow, kMin, kMax, kEqual, kLess, kGreater };

ConstTensor binary(const Context& ctx, Binary op, const ConstTensor& a, const ConstTensor& b) {
  const ir::Shape dims = broadcast(ctx, a.dims, b.dims);
  const size_t n = folded_count(ctx, dims);
  const bool compare = op == Binary::kEqual || op == Binary::kLess || op == Binary::kGreater;
  const bool floating = a.is_float() || b.is_float();
  // Mod: fmod=0 takes the divisor's sign (Python's %, integers only in
  // ONNX), fmod=1 the dividend's (C's fmod).
  const bool c_fmod = op == Binary::kMod && attr_int(ctx.node, "fmod", 0) != 0;
  if (op == Binary::kMod && floating && !c_fmod) ctx.fail("Mod of floating values needs fmod=1");
  ConstTensor out;
  out.dims = dims;
  out.dtype = compare ? TensorProto::BOOL : a.dtype;
  for (size_t k = 0; k < n; ++k) {
    const size_t ia = broadcast_index(k, dims, a.dims), ib = broadcast_index(k, dims, b.dims);
    if (op == Binary::kPow) {  // the base's element type (ONNX Pow's T), an exponent of any type
      const double r = std::pow(a.as_double(ia), b.as_double(ib));
      if (a.is_float()) out.f.push_back(r);
      else out.i.push_back(checked_int(ctx, r, ctx.node.op_type()));
      continue;
    }
    if (floating) {
      const double x = a.as_double(ia), y = b.as_double(ib);
      double r = 0;
      switch (op) {
        case Binary::kAdd: r = ir::ew::Add{}(x, y); break;
        case Binary::kSub: r = ir::ew::Sub{}(x, y); break;
        case Binary::kMul: r = ir::ew::Mul{}(x, y); break;
        case Binary::kDiv: r = ir::ew::Div{}(x, y); break;
        case Binary::kMod: r = std::fmod(x, y); break;
        case Binary::kPow: break;  // above
        case Binary::kMin: r = std::min(x, y); break;
        case Binary::kMax: r = std::max(x, y); break;
        case Binary::kEqual: r = x == y; break;
        case Binary::kLess: r = x < y; break;
        case Binary::kGreater: r = x > y; break;
      }
      if (compare) out.i.push_back(static_cast<int64_t>(r));
      else out.f.push_back(r);
    } else {
      const int64_t x = a.i[ia], y = b.i[ib];
      int64_t r = 0;
      switch (op) {
        case Binary::kAdd:
          if (__builtin_add_overflow(x, y, &r)) ctx.fail("integer overflow in {} + {}", x, y);
          break;
        case Binary::kSub:
          if (__builtin_sub_overflow(x, y, &r)) ctx.fail("integer overflow in {} - {}", x, y);
          break;
        case Binary::kMul:
          if (__builtin_mul_overflow(x, y, &r)) ctx.fail("integer overflow in {} * {}", x, y);
          break;
        case Binary::kDiv:
          if (y == 0) ctx.fail("integer division by zero");
          if (y == -1 && x == std::numeric_limits<int64_t>::min()) ctx.fail("integer overflow in {} / -1", x);
          r = x / y;
          break;
        case Binary::kMod:
          if (y == 0) ctx.fail("integer modulo by zero");
          r = y == -1 ? 0 : x % y;
          if (!c_fmod && r != 0 && ((r < 0) != (y < 0))) r += y;
          break;
        case Binary::kPow: break;  // above
        case Binary::kMin: r = std::min(x, y); break;
        case Binary::kMax: r = std::max(x, y); break;
        case Binary::kEqual: r = x == y; break;
        case Binary::kLess: r = x < y; break;
        case Binary::kGreater: r = x > y; break;
      }
      out.i.push_back(r);
    }
  }
  return out;
}

ConstTensor unary(const Context& ctx, const ConstTensor& a, const std::function<double(double)>& fn) {
  ConstTensor out = a;
  if (a.is_float()) {
    for (double& v : out.f) v = fn(v);
  } else {
    // Through double and back, range-checked: -INT64_MIN has no int64.
    for (int64_t& v : out.i) v = checked_int(ctx, fn(static_cast<double>(v)), ctx.node.op_type());
  }
  return out;
}

ConstTensor cast(const ConstTensor& a, int32_t to) {
  ConstTensor out;
  out.dtype = to;
  out.dims = a.dims;
  const size_t n = a.size();
  if (is_float_type(to)) {
    for (size_t k = 0; k < n; ++k) out.f.push_back(a.as_double(k));
  } else if (to == TensorProto::BOOL) {
    for (size_t k = 0; k < n; ++k) out.i.push_back(a.as_double(k) != 0.0);
  } else {
    for (size_t k = 0; k < n; ++k) out.i.push_back(a.as_int(k));
  }
  return out;
}

ConstTensor concat(const Context& ctx, const Values& in, int64_t axis_attr) {
  const ConstTensor& first = *in.at(0);
  const auto rank = static_cast<int64_t>(first.dims.size());
  const auto axis = static_cast<size_t>(normalize_axis(ctx, axis_attr, rank));
  ir::Shape dims = first.dims;
  dims[axis] = 0;
  for (const ConstTensor* t : in) {
    if (t->dims.size() != first.dims.size()) ctx.fail("inputs have different ranks");
    for (size_t d = 0; d < dims.size(); ++d) {
      if (d != axis && t->dims[d] != first.dims[d]) {
        ctx.fail("inputs of shapes {} and {} differ outside axis {}", ir::to_string(first.dims),
                 ir::to_string(t->dims), axis);
      }
    }
    if (__builtin_add_overflow(dims[axis], t->dims[axis], &dims[axis])) ctx.fail("the result is too large");
  }
  folded_count(ctx, dims);
  // outer = product of dims before axis; each input contributes a block per outer index.
  int64_t outer = 1;
  for (size_t d = 0; d < axis; ++d) outer *= dims[d];
  ConstTensor out;
  out.dtype = first.dtype;
  out.dims = dims;
  for (int64_t o = 0; o < outer; ++o) {
    for (const ConstTensor* t : in) {
      const int64_t block = ir::num_elements(t->dims) / std::max<int64_t>(outer, 1);
      for (int64_t k = 0; k < block; ++k) {
        const auto src = static_cast<size_t>(o * block + k);
        if (out.is_float()) out.f.push_back(t->as_double(src));
        else out.i.push_back(t->as_int(src));
      }
    }
  }
  return out;
}

ConstTensor gather(const Context& ctx, const ConstTensor& data, const ConstTensor& indices, int64_t axis_attr) {
  const auto rank = static_cast<int64_t>(data.dims.size());
  if (rank == 0) ctx.fail("Gather on a scalar");
  const auto axis = static_cast<size_t>(normalize_axis(ctx, axis_attr, rank));
  ir::Shape dims(data.dims.begin(), data.dims.begin() + static_cast<int64_t>(axis));
  dims.insert(dims.end(), indices.dims.begin(), indices.dims.end());
  dims.insert(dims.end(), data.dims.begin() + static_cast<int64_t>(axis) + 1, data.dims.end());
  folded_count(ctx, dims);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= data.dims[d];
  for (size_t d = axis + 1; d < data.dims.size(); ++d) inner *= data.dims[d];
  const int64_t extent = data.dims[axis];
  std::vector<size_t> idx;
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t j = 0; j < indices.size(); ++j) {
      int64_t at = indices.as_int(j);
      if (at < 0) at += extent;
      if (at < 0 || at >= extent) ctx.fail("index {} out of range for axis size {}", indices.as_int(j), extent);
      for (int64_t k = 0; k < inner; ++k) idx.push_back(static_cast<size_t>((o * extent + at) * inner + k));
    }
  }
  return gather_elements(data, dims, idx);
}

ConstTensor transpose(const Context& ctx, const ConstTensor& data, std::vector<int64_t> perm) {
  const size_t rank = data.dims.size();
  if (perm.empty()) {
    for (size_t d = rank; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
  }
  if (perm.size() != rank) ctx.fail("perm has {} entries for rank {}", perm.size(), rank);
  std::vector<bool> used(rank, false);
  for (int64_t& p : perm) {
    p = normalize_axis(ctx, p, static_cast<int64_t>(rank));
    if (used[static_cast<size_t>(p)]) ctx.fail("perm names axis {} twice", p);
    used[static_cast<size_t>(p)] = true;
  }
  ir::Shape dims(rank);
  for (size_t d = 0; d < rank; ++d) dims[d] = data.dims[static_cast<size_t>(normalize_axis(ctx, perm[d], static_cast<int64_t>(rank)))];
  const auto in_strides = strides_of(data.dims);
  const auto n = static_cast<size_t>(ir::num_elements(dims));
  std::vector<size_t> idx(n);
  for (size_t k = 0; k < n; ++k) {
    size_t rest = k, src = 0;
    for (size_t d = rank; d-- > 0;) {
      const auto coord = rest % static_cast<size_t>(dims[d]);
      rest /= static_cast<size_t>(dims[d]);
      src += coord * static_cast<size_t>(in_strides[static_cast<size_t>(perm[d] < 0 ? perm[d] + static_cast<int64_t>(rank) : perm[d])]);
    }
    idx[k] = src;
  }
  return gather_elements(data, dims, idx);
}

// ONNX Slice semantics on any rank.
ConstTensor slice(const Context& ctx, const ConstTensor& data, const std::vector<int64_t>& starts,
                  const std::vector<int64_t>& ends, std::vector<int64_t> axes, std::vector<int64_t> steps) {
  const auto rank = static_cast<int64_t>(data.dims.size());
  if (axes.empty()) {
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    ctx.fail("starts, ends, axes and steps have different lengths");
  }
  std::vector<int64_t> begin(static_cast<size_t>(rank), 0), step(static_cast<size_t>(rank), 1);
  ir::Shape dims = data.dims;
  for (size_t k = 0; k < starts.size(); ++k) {
    const auto axis = static_cast<size_t>(normalize_axis(ctx, axes[k], rank));
    const int64_t dim = data.dims[axis];
    const int64_t st = steps[k];
    if (st == 0) ctx.fail("slice step 0");
    int64_t s = starts[k], e = ends[k];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    // Counts are computed as (span - 1) / |step| + 1: no intermediate can
    // overflow, whatever steps and bounds the file gives.
    if (dim == 0) {
      s = 0;
      dims[axis] = 0;
    } else if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      dims[axis] = e > s ? (e - s - 1) / st + 1 : 0;
    } else {
      const int64_t magnitude = st == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -st;
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      dims[axis] = s > e ? (s - e - 1) / magnitude + 1 : 0;
    }
    begin[axis] = s;
    step[axis] = st;
  }
  const auto in_strides = strides_of(data.dims);
  const auto n = static_cast<size_t>(ir::num_elements(dims));
  std::vector<size_t> idx(n);
  for (size_t k = 0; k < n; ++k) {
    size_t rest = k;
    int64_t src = 0;
    for (size_t d = dims.size(); d-- > 0;) {
      const auto coord = static_cast<int64_t>(rest % static_cast<size_t>(dims[d]));
      rest /= static_cast<size_t>(dims[d]);
      src += (begin[d] + coord * step[d]) * in_strides[d];
    }
    idx[k] = static_cast<size_t>(src);
  }
  return gather_elements(data, dims, idx);
}

ir::Shape reshape_target(const Context& ctx, const ir::Shape& in, const std::vector<int64_t>& shape, bool allow_zero) {
  ir::Shape out;
  int64_t known = 1;
  int infer_at = -1;
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t v = shape[d];
    if (v == 0 && !allow_zero) {
      if (d >= in.size()) ctx.fail("reshape target copies dimension {} that the input lacks", d);
      v = in[d];
    }
    if (v == -1) {
      if (infer_at >= 0) ctx.fail("reshape target has two -1 entries");
      infer_at = static_cast<int>(d);
      out.push_back(1);
      continue;
    }
    if (v < 0) ctx.fail("reshape target has a negative entry {}", v);
    if (__builtin_mul_overflow(known, v, &known)) ctx.fail("reshape target {} overflows", fmt::join(shape, "x"));
    out.push_back(v);
  }
  const int64_t total = ir::num_elements(in);
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0) ctx.fail("cannot reshape {} elements to {}", total, fmt::join(shape, "x"));
    out[static_cast<size_t>(infer_at)] = total / known;
  } else if (known != total) {
    ctx.fail("cannot reshape {} elements to {}", total, fmt::join(shape, "x"));
  }
  return out;
}

ConstTensor constant_node(const Context& ctx) {
  const NodeProto& node = ctx.node;
  if (node.attribute_size() != 1) ctx.fail("Constant must have exactly one attribute");
  const auto& a = node.attribute(0);
  if (a.name() == "value") return decode_tensor(a.t(), ctx.file);
  if (a.name() == "value_float") return ConstTensor::of_floats({a.f()}, {}, TensorProto::FLOAT);
  if (a.name() == "value_floats") {
    return ConstTensor::of_floats({a.floats().begin(), a.floats().end()}, {a.floats_size()}, TensorProto::FLOAT);
  }
  if (a.name() == "value_int") return ConstTensor::of_ints({a.i()}, {});
  if (a.name() == "value_ints") return ConstTensor::of_ints({a.ints().begin(), a.ints().end()}, {a.ints_size()});
  ctx.fail("Constant attribute '{}' is not supported", a.name());
}

const ConstTensor& need(const Context& ctx, const Values& in, size_t k) {
  if (k >= in.size() || !in[k]) ctx.fail("missing input {}", k);
  return *in[k];
}

std::vector<int64_t> axes_input_or_attr(const Context& ctx, const Values& in, int64_t since_opset) {
  if (ctx.opset >= since_opset) return in.size() > 1 && in[1] ? in[1]->ints() : std::vector<int64_t>{};
  return attr_ints(ctx.node, "axes").value_or(std::vector<int64_t>{});
}

using Folded = std::optional<std::vector<ConstTensor>>;
using Shape = std::optional<ir::Shape>;

Folded one(ConstTensor t) { return std::vector<ConstTensor>{std::move(t)}; }

Folded fold_constant(const Context& ctx, const Values&, const Shape&) { return one(constant_node(ctx)); }

Folded fold_shape(const Context& ctx, const Values&, const Shape& input_shape) {
  const auto rank = static_cast<int64_t>(input_shape->size());
  int64_t start = attr_int(ctx.node, "start", 0), end = attr_int(ctx.node, "end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  std::vector<int64_t> dims(input_shape->begin() + start, input_shape->begin() + end);
  const auto n = static_cast<int64_t>(dims.size());
  return one(ConstTensor::of_ints(std::move(dims), {n}));
}

Folded fold_size(const Context& ctx, const Values&, const Shape& input_shape) {
  int64_t n = 1;
  for (int64_t d : *input_shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) ctx.fail("the input's size overflows");
  }
  return one(ConstTensor::of_ints({n}, {}));
}

Folded fold_identity(const Context& ctx, const Values& in, const Shape&) { return one(need(ctx, in, 0)); }

Folded fold_dropout(const Context& ctx, const Values& in, const Shape&) {
  if (ctx.node.output_size() > 1 && !ctx.node.output(1).empty()) return std::nullopt;  // mask wanted
  return one(need(ctx, in, 0));
}

Folded fold_cast(const Context& ctx, const Values& in, const Shape&) {
  return one(cast(need(ctx, in, 0), static_cast<int32_t>(attr_int(ctx.node, "to", TensorProto::FLOAT))));
}

Folded fold_gather(const Context& ctx, const Values& in, const Shape&) {
  return one(gather(ctx, need(ctx, in, 0), need(ctx, in, 1), attr_int(ctx.node, "axis", 0)));
}

Folded fold_concat(const Context& ctx, const Values& in, const Shape&) {
  for (size_t k = 0; k < in.size(); ++k) need(ctx, in, k);
  return one(concat(ctx, in, attr_int(ctx.node, "axis", 0)));
}

Folded fold_unsqueeze(const Context& ctx, const Values& in, const Shape&) {
  const ConstTensor& data = need(ctx, in, 0);
  const std::vector<int64_t> axes = axes_input_or_attr(ctx, in, 13);
  const auto rank = static_cast<int64_t>(data.dims.size() + axes.size());
  std::vector<bool> inserted(static_cast<size_t>(rank), false);
  if (static_cast<size_t>(rank) > kMaxFoldRank) ctx.fail("the result has rank {}, more than {}", rank, kMaxFoldRank);
  for (int64_t a : axes) {
    const auto d = static_cast<size_t>(normalize_axis(ctx, a, rank));
    if (inserted[d]) ctx.fail("axis {} is given twice", a);
    inserted[d] = true;
  }
  ir::Shape dims;
  size_t next = 0;
  for (int64_t d = 0; d < rank; ++d) dims.push_back(inserted[static_cast<size_t>(d)] ? 1 : data.dims.at(next++));
  return one(reshaped(data, dims));
}

Folded fold_squeeze(const Context& ctx, const Values& in, const Shape&) {
  const ConstTensor& data = need(ctx, in, 0);
  const std::vector<int64_t> axes = axes_input_or_attr(ctx, in, 13);
  const auto rank = static_cast<int64_t>(data.dims.size());
  std::vector<bool> removed(static_cast<size_t>(rank), axes.empty());
  if (axes.empty()) {
    for (int64_t d = 0; d < rank; ++d) removed[static_cast<size_t>(d)] = data.dims[static_cast<size_t>(d)] == 1;
  }
  for (int64_t a : axes) {
    const auto d = static_cast<size_t>(normalize_axis(ctx, a, rank));
    if (data.dims[d] != 1) ctx.fail("cannot squeeze axis {} of size {}", d, data.dims[d]);
    removed[d] = true;
  }
  ir::Shape dims;
  for (size_t d = 0; d < data.dims.size(); ++d) {
    if (!removed[d]) dims.push_back(data.dims[d]);
  }
  return one(reshaped(data, dims));
}

Folded fold_reshape(const Context& ctx, const Values& in, const Shape&) {
  const ConstTensor& data = need(ctx, in, 0);
  return one(reshaped(
      data, reshape_target(ctx, data.dims, need(ctx, in, 1).ints(), attr_int(ctx.node, "allowzero", 0) != 0)));
}

Folded fold_flatten(const Context& ctx, const Values& in, const Shape&) {
  const ConstTensor& data = need(ctx, in, 0);
  const auto rank = static_cast<int64_t>(data.dims.size());
  int64_t axis = attr_int(ctx.node, "axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) ctx.fail("axis out of range");
  const ir::Shape head(data.dims.begin(), data.dims.begin() + axis), tail(data.dims.begin() + axis, data.dims.end());
  return one(reshaped(data, {ir::num_elements(head), ir::num_elements(tail)}));
}

Folded fold_transpose(const Context& ctx, const Values& in, const Shape&) {
  return one(transpose(ctx, need(ctx, in, 0), attr_ints(ctx.node, "perm").value_or(std::vector<int64_t>{})));
}

Folded fold_slice(const Context& ctx, const Values& in, const Shape&) {
  const ConstTensor& data = need(ctx, in, 0);
  if (ctx.opset < 10) {
    return one(slice(ctx, data, attr_ints(ctx.node, "starts").value_or(std::vector<int64_t>{}),
                     attr_ints(ctx.node, "ends").value_or(std::vector<int64_t>{}),
                     attr_ints(ctx.node, "axes").value_or(std::vector<int64_t>{}), {}));
  }
  auto opt = [&](size_t k) { return k < in.size() && in[k] ? in[k]->ints() : std::vector<int64_t>{}; };
  return one(slice(ctx, data, need(ctx, in, 1).ints(), need(ctx, in, 2).ints(), opt(3), opt(4)));
}

Folded fold_expand(const Context& ctx, const Values& in, const Shape&) {
  const ConstTensor& data = need(ctx, in, 0);
  const ir::Shape dims = broadcast(ctx, data.dims, need(ctx, in, 1).ints());
  std::vector<size_t> idx(folded_count(ctx, dims));
  for (size_t k = 0; k < idx.size(); ++k) idx[k] = broadcast_index(k, dims, data.dims);
  return one(gather_elements(data, dims, idx));
}

Folded fold_constant_of_shape(const Context& ctx, const Values& in, const Shape&) {
  const ir::Shape dims = need(ctx, in, 0).ints();
  ConstTensor fill = ConstTensor::of_floats({0.0}, {1}, TensorProto::FLOAT);
  if (const auto* a = find_attribute(ctx.node, "value")) fill = decode_tensor(a->t(), ctx.file);
  if (fill.size() != 1) ctx.fail("value must have one element");
  std::vector<size_t> idx(folded_count(ctx, dims), 0);
  return one(gather_elements(fill, dims, idx));
}

Folded fold_range(const Context& ctx, const Values& in, const Shape&) {
  const ConstTensor& start = need(ctx, in, 0);
  for (size_t k = 0; k < 3; ++k) {
    if (need(ctx, in, k).size() != 1) ctx.fail("Range input {} must have one element", k);
  }
  ConstTensor out;
  out.dtype = start.dtype;
  if (!out.is_float()) {
    // Integers are counted exactly: a double holds int64 values only up to
    // 2^53, and (limit - start) may not fit in int64 at all.
    const int64_t first = start.as_int(0), limit = need(ctx, in, 1).as_int(0), step = need(ctx, in, 2).as_int(0);
    if (step == 0) ctx.fail("Range with delta 0");
    const Int128 span = static_cast<Int128>(limit) - first;
    const Int128 count = step > 0 ? (span <= 0 ? 0 : (span + step - 1) / step)
                                    : (span >= 0 ? 0 : (-span - step - 1) / -static_cast<Int128>(step));
    if (count > kMaxFoldElements) {
      ctx.fail("Range of {} elements is too large to fold", static_cast<int64_t>(std::min<Int128>(count, std::numeric_limits<int64_t>::max())));
    }
    out.dims = {static_cast<int64_t>(count)};
    // Every element lies between start and limit, so none overflows.
    for (int64_t k = 0; k < static_cast<int64_t>(count); ++k) {
      out.i.push_back(static_cast<int64_t>(first + static_cast<Int128>(k) * step));
    }
    return one(out);
  }
  const double s = start.as_double(0), limit = need(ctx, in, 1).as_double(0), delta = need(ctx, in, 2).as_double(0);
  if (delta == 0) ctx.fail("Range with delta 0");
  const double count = std::max(0.0, std::ceil((limit - s) / delta));
  if (!(count <= static_cast<double>(kMaxFoldElements))) ctx.fail("Range of {} elements is too large to fold", count);
  const auto n = static_cast<int64_t>(count);
  out.dims = {n};
  for (int64_t k = 0; k < n; ++k) out.f.push_back(s + static_cast<double>(k) * delta);
  return one(out);
}

Folded fold_where(const Context& ctx, const Values& in, const Shape&) {
  const ConstTensor &c = need(ctx, in, 0), &x = need(ctx, in, 1), &y = need(ctx, in, 2);
  const ir::Shape dims = broadcast(ctx, broadcast(ctx, c.dims, x.dims), y.dims);
  const size_t n = folded_count(ctx, dims);
  ConstTensor out;
  out.dtype = x.dtype;
  out.dims = dims;
  for (size_t k = 0; k < n; ++k) {
    const ConstTensor& pick = c.as_int(broadcast_index(k, dims, c.dims)) ? x : y;
    const size_t at = broadcast_index(k, dims, pick.dims);
    if (out.is_float()) out.f.push_back(pick.as_double(at));
    else out.i.push_back(pick.as_int(at));
  }
  return one(out);
}

// ScatterND without reduction: a copy of data with the slices that indices
// name replaced by updates (Swin's attention mask is built this way).
Folded fold_scatter_nd(const Context& ctx, const Values& in, const Shape&) {
  const ConstTensor &data = need(ctx, in, 0), &indices = need(ctx, in, 1), &updates = need(ctx, in, 2);
  if (attr_string(ctx.node, "reduction", "none") != "none") ctx.fail("only reduction 'none' is folded");
  if (indices.is_float() || indices.dims.empty()) ctx.fail("indices must be an integer tensor of rank >= 1");
  const size_t r = data.dims.size();
  const auto k = static_cast<size_t>(indices.dims.back());
  if (k < 1 || k > r) ctx.fail("the last dimension of indices ({}) must be between 1 and the data rank {}", k, r);
  ir::Shape expect(indices.dims.begin(), indices.dims.end() - 1);
  expect.insert(expect.end(), data.dims.begin() + static_cast<std::ptrdiff_t>(k), data.dims.end());
  if (updates.dims != expect) {
    ctx.fail("updates have shape {}, expected {}", ir::to_string(updates.dims), ir::to_string(expect));
  }
  if (updates.is_float() != data.is_float()) ctx.fail("updates and data differ in element type");
  ConstTensor out = data;
  const std::vector<int64_t> strides = strides_of(data.dims);
  const auto slice = static_cast<size_t>(strides[k - 1]);  // elements one index names
  const size_t count = indices.size() / k;
  for (size_t n = 0; n < count; ++n) {
    size_t at = 0;
    for (size_t d = 0; d < k; ++d) {
      int64_t v = indices.i[n * k + d];
      if (v < -data.dims[d] || v >= data.dims[d]) ctx.fail("index {} out of range for dimension {} of size {}", v, d, data.dims[d]);
      if (v < 0) v += data.dims[d];
      at += static_cast<size_t>(v) * static_cast<size_t>(strides[d]);
    }
    for (size_t e = 0; e < slice; ++e) {
      if (out.is_float()) out.f[at + e] = updates.f[n * slice + e];
      else out.i[at + e] = updates.i[n * slice + e];
    }
  }
  return one(out);
}

// A unary operator, in double (integers through double, range-checked).
template <double (*F)(double)>
Folded fold_unary(const Context& ctx, const Values& in, const Shape&) {
  return one(unary(ctx, need(ctx, in, 0), F));
}

// The math the kernels run, in double (ir/elementwise.h).
template <typename Functor>
double kernel_math(double v) {
  return Functor{}(v, ir::ew::Params{});
}
double negate(double v) { return -v; }
double absolute(double v) { return std::abs(v); }
double round_down(double v) { return std::floor(v); }
double round_up(double v) { return std::ceil(v); }
double logical_not(double v) { return v == 0.0 ? 1.0 : 0.0; }

// A binary operator over its inputs, left to right (Min and Max take any
// number of inputs, one included).
template <Binary kind>
Folded fold_binary(const Context& ctx, const Values& in, const Shape&) {
  ConstTensor acc = need(ctx, in, 0);
  if (in.size() < 2 && kind != Binary::kMin && kind != Binary::kMax) ctx.fail("needs two inputs");
  for (size_t k = 1; k < in.size(); ++k) acc = binary(ctx, kind, acc, need(ctx, in, k));
  return one(acc);
}

using FoldFn = Folded (*)(const Context& ctx, const Values& in, const Shape& input_shape);

// Every operator ios folds when its inputs are constant, and how: the
// exporter's shape arithmetic, and element-wise arithmetic that also runs on
// activations (a ViT's 1 / sqrt(head dim), say), whose math is the kernels'.
const std::map<std::string, FoldFn>& fold_table() {
  static const std::map<std::string, FoldFn> table = {
      {"Constant", fold_constant},
      {"Shape", fold_shape},
      {"Size", fold_size},
      {"Identity", fold_identity},
      {"Dropout", fold_dropout},
      {"Cast", fold_cast},
      {"Gather", fold_gather},
      {"Concat", fold_concat},
      {"Unsqueeze", fold_unsqueeze},
      {"Squeeze", fold_squeeze},
      {"Reshape", fold_reshape},
      {"Flatten", fold_flatten},
      {"Transpose", fold_transpose},
      {"Slice", fold_slice},
      {"Expand", fold_expand},
      {"ConstantOfShape", fold_constant_of_shape},
      {"Range", fold_range},
      {"Where", fold_where},
      {"ScatterND", fold_scatter_nd},
      {"Neg", fold_unary<negate>},
      {"Abs", fold_unary<absolute>},
      {"Floor", fold_unary<round_down>},
      {"Ceil", fold_unary<round_up>},
      {"Not", fold_unary<logical_not>},
      {"Sqrt", fold_unary<kernel_math<ir::ew::Sqrt>>},
      {"Reciprocal", fold_unary<kernel_math<ir::ew::Reciprocal>>},
      {"Erf", fold_unary<kernel_math<ir::ew::Erf>>},
      {"Exp", fold_unary<kernel_math<ir::ew::Exp>>},
      {"Add", fold_binary<Binary::kAdd>},
      {"Sub", fold_binary<Binary::kSub>},
      {"Mul", fold_binary<Binary::kMul>},
      {"Div", fold_binary<Binary::kDiv>},
      {"Mod", fold_binary<Binary::kMod>},
      {"Pow", fold_binary<Binary::kPow>},
      {"Min", fold_binary<Binary::kMin>},
      {"Max", fold_binary<Binary::kMax>},
      {"Equal", fold_binary<Binary::kEqual>},
      {"Less", fold_binary<Binary::kLess>},
      {"Greater", fold_binary<Binary::kGreater>}};
  return table;
}

// Evaluates one node; std::nullopt when it cannot be folded.
Folded evaluate(const Context& ctx, const Values& in, const Shape& input_shape) {
  const auto it = fold_table().find(ctx.node.op_type());
  return it == fold_table().end() ? std::nullopt : it->second(ctx, in, input_shape);
}

}  // namespace

bool is_foldable_op(const std::string& op_type) {
  // Asked of every node in every folding round: a hash set of the names,
  // not the ordered table's string comparisons.
  static const std::unordered_set<std::string_view> names = [] {
    std::unordered_set<std::string_view> out;
    for (const auto& [name, fn] : fold_table()) out.insert(name);
    return out;
  }();
  return names.count(op_type) > 0;
}

int64_t default_opset(const ::onnx::ModelProto& model) {
  for (const auto& imp : model.opset_import()) {
    if (imp.domain().empty() || imp.domain() == "ai.onnx") return imp.version();
  }
  return 0;
}

ShapeMap static_shapes(const ::onnx::GraphProto& graph) {
  ShapeMap shapes;
  auto add = [&](const ::onnx::ValueInfoProto& info) {
    if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape()) return;
    ir::Shape dims;
    for (const auto& d : info.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value()) return;
      dims.push_back(d.dim_value());
    }
    shapes[info.name()] = std::move(dims);
  };
  for (const auto& v : graph.input()) add(v);
  for (const auto& v : graph.value_info()) add(v);
  for (const auto& v : graph.output()) add(v);
  for (const auto& t : graph.initializer()) shapes[t.name()] = ir::Shape(t.dims().begin(), t.dims().end());
  return shapes;
}

int fold_constants(::onnx::ModelProto& model, const ShapeMap& shapes, const std::string& file) {
  auto& graph = *model.mutable_graph();
  const int64_t opset = default_opset(model);
  std::unordered_map<std::string, const TensorProto*> initializers;
  for (const auto& t : graph.initializer()) initializers[t.name()] = &t;
  std::unordered_set<std::string> graph_outputs;
  for (const auto& o : graph.output()) graph_outputs.insert(o.name());

  std::unordered_map<std::string, ConstTensor> values;
  std::vector<bool> folded(static_cast<size_t>(graph.node_size()), false);
  int count = 0;
  int64_t held = 0;  // elements in `values`, bounded by kMaxFoldTotalElements
  for (int k = 0; k < graph.node_size(); ++k) {
    const NodeProto& node = graph.node(k);
    if (!(node.domain().empty() || node.domain() == "ai.onnx") || !is_foldable_op(node.op_type())) continue;
    if (std::any_of(node.output().begin(), node.output().end(),
                    [&](const std::string& o) { return graph_outputs.count(o) > 0; })) {
      continue;
    }
    const bool shape_only = node.op_type() == "Shape" || node.op_type() == "Size";
    const bool alias_only = node.op_type() == "Identity" || node.op_type() == "Dropout";
    Values in;
    std::optional<ir::Shape> input_shape;
    bool ready = true;
    for (int i = 0; i < node.input_size() && ready; ++i) {
      const std::string& name = node.input(i);
      if (name.empty()) {
        in.push_back(nullptr);
        continue;
      }
      if (shape_only) {
        auto it = shapes.find(name);
        if (it != shapes.end()) input_shape = it->second;
        else if (values.count(name)) input_shape = values.at(name).dims;
        ready = input_shape.has_value();
        in.push_back(nullptr);
        continue;
      }
      if (auto it = values.find(name); it != values.end()) {
        in.push_back(&it->second);
        continue;
      }
      auto init = initializers.find(name);
      // Identity/Dropout of a weight stay: the IR builder aliases them.
      if (alias_only || init == initializers.end() || static_cast<uint64_t>(proto_num_elements(*init->second)) > static_cast<uint64_t>(kMaxFoldElements)) {
        ready = false;
        continue;
      }
      auto slot = values.emplace(name, decode_tensor(*init->second, file)).first;
      held += static_cast<int64_t>(slot->second.size());
      in.push_back(&slot->second);
    }
    if (!ready) continue;
    const Context ctx{node, opset, file};
    auto result = evaluate(ctx, in, input_shape);
    if (!result) continue;
    // A Constant's value is already in the file (weights exported as
    // Constant nodes can be large); everything else was computed here.
    if (node.op_type() != "Constant") {
      for (const ConstTensor& t : *result) {
        const size_t n = folded_count(ctx, t.dims);
        IOS_ASSERT(t.size() == n, "{}: node {}: folded {} values for shape {}", file, node_label(node),
                   t.size(), ir::to_string(t.dims));
        held += static_cast<int64_t>(n);
      }
      if (held > kMaxFoldTotalElements) {
        ctx.fail("constant folding would hold more than {} values; the model's shape arithmetic is "
                 "not supported", kMaxFoldTotalElements);
      }
    }
    for (int o = 0; o < node.output_size() && o < static_cast<int>(result->size()); ++o) {
      if (!node.output(o).empty()) values.insert_or_assign(node.output(o), std::move((*result)[static_cast<size_t>(o)]));
    }
    folded[static_cast<size_t>(k)] = true;
    ++count;
  }
  if (!count) return 0;

  // Keep the unfolded nodes; folded outputs they read become initializers.
  // Only the (few) folded outputs are collected: a round of a long chain of
  // shape arithmetic costs lookups over the graph, not a set of all of it.
  std::unordered_set<std::string> folded_outputs, needed;
  for (int k = 0; k < graph.node_size(); ++k) {
    if (!folded[static_cast<size_t>(k)]) continue;
    for (const auto& name : graph.node(k).output()) {
      if (!name.empty()) folded_outputs.insert(name);
    }
  }
  int kept = 0;
  for (int k = 0; k < graph.node_size(); ++k) {
    if (folded[static_cast<size_t>(k)]) continue;
    for (const auto& name : graph.node(k).input()) {
      if (folded_outputs.count(name)) needed.insert(name);
    }
    if (kept != k) graph.mutable_node()->SwapElements(kept, k);
    ++kept;
  }
  graph.mutable_node()->DeleteSubrange(kept, graph.node_size() - kept);
  std::vector<std::string> made;
  for (const std::string& name : needed) {
    if (!initializers.count(name)) made.push_back(name);
  }
  std::sort(made.begin(), made.end());  // deterministic initializer order
  for (const std::string& name : made) {
    TensorProto* t = graph.add_initializer();
    t->set_name(name);
    encode_tensor(values.at(name), t);
  }
  // Drop stale value_info of folded outputs (their types may have changed).
  auto* infos = graph.mutable_value_info();
  // Compacted by swapping pointers (std::remove_if would move every later
  // message: a round's few removals from the front of a large graph's
  // value_info cost as much as the graph).
  int kept_infos = 0;
  for (int i = 0; i < infos->size(); ++i) {
    const ::onnx::ValueInfoProto& v = infos->Get(i);
    if (values.count(v.name()) > 0 && !initializers.count(v.name())) continue;
    if (kept_infos != i) infos->SwapElements(kept_infos, i);
    ++kept_infos;
  }
  infos->DeleteSubrange(kept_infos, infos->size() - kept_infos);
  return count;
}

}  // namespace ios::onnx
