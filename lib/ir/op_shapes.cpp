// Shape functions of the operator table (ir/op_shapes.h).
#include "ir/op_shapes.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "ir/layer_norm.h"
#include "ir/op_info.h"
#include "ir/shape_inference.h"

namespace ios::ir::shapes {
namespace {


std::string describe(const Node& node, const std::vector<Shape>& in) {
  std::string shapes;
  for (size_t i = 0; i < in.size(); ++i) {
    if (i) shapes += ", ";
    shapes += to_string(in[i]);
  }
  return fmt::format("node '{}' ({}) with input shapes [{}]", node.name, op_name(node.op), shapes);
}

// Throws the UserError every check in this file uses.
template <typename... Args>
[[noreturn]] void fail(const Node& node, const std::vector<Shape>& in,
                       fmt::format_string<Args...> what, Args&&... args) {
  user_error("{}: {}", describe(node, in), fmt::format(what, std::forward<Args>(args)...));
}

void need_inputs(const Node& node, const std::vector<Shape>& in, size_t lo, size_t hi) {
  if (in.size() < lo || in.size() > hi) {
    fail(node, in, "expects {} to {} inputs, has {}", lo, hi, in.size());
  }
}

void need_rank(const Node& node, const std::vector<Shape>& in, size_t index, size_t rank) {
  if (in[index].size() != rank) {
    fail(node, in, "input {} must have rank {}, has rank {}", index, rank, in[index].size());
  }
}

Shape window_op(const Node& node, const std::vector<Shape>& in, int64_t channels,
                const std::array<int64_t, 2>& kernel, const std::array<int64_t, 2>& stride,
                const std::array<int64_t, 2>& dilation, const std::array<int64_t, 4>& pads,
                bool ceil_mode) {
  const Shape& x = in[0];
  Shape out{x[0], channels, 0, 0};
  for (size_t a = 0; a < 2; ++a) {
    if (kernel[a] < 1 || stride[a] < 1 || dilation[a] < 1 || pads[a] < 0 || pads[a + 2] < 0) {
      fail(node, in, "kernel, stride and dilation must be >= 1 and pads >= 0");
    }
    const int64_t size =
        window_output_size(x[2 + a], kernel[a], stride[a], dilation[a], pads[a], pads[a + 2], ceil_mode);
    if (size <= 0) {
      fail(node, in, "the {}x{} window (dilation {}) does not fit the padded input", kernel[0],
           kernel[1], dilation[a]);
    }
    // With ceil_mode, ONNX's formula can place the last window entirely in
    // the end padding, where PyTorch drops it; refuse the ambiguous case.
    if (ceil_mode && (size - 1) * stride[a] >= x[2 + a] + pads[a]) {
      fail(node, in, "with ceil_mode the last window starts in the padding (ONNX and PyTorch "
                     "disagree on the output size); re-export without ceil_mode");
    }
    out[2 + a] = size;
  }
  return out;
}

Shape conv_one(const Node& node, const std::vector<Shape>& in) {
  need_inputs(node, in, 2, 3);
  need_rank(node, in, 0, 4);
  need_rank(node, in, 1, 4);
  const auto& a = node.attr<ConvAttrs>();
  const Shape& x = in[0];
  const Shape& w = in[1];
  if (a.group < 1 || x[1] != w[1] * a.group || w[0] % a.group != 0) {
    fail(node, in, "{} input channels do not fit weights {} with group {}", x[1], to_string(w),
         a.group);
  }
  if (w[2] != a.kernel[0] || w[3] != a.kernel[1]) {
    fail(node, in, "kernel {}x{} differs from the weight shape", a.kernel[0], a.kernel[1]);
  }
  if (in.size() == 3 && in[2] != Shape{w[0]}) {
    fail(node, in, "the bias must have shape {}", w[0]);
  }
  return window_op(node, in, w[0], a.kernel, a.stride, a.dilation, a.pads, false);
}

Shape pool_one(const Node& node, const std::vector<Shape>& in) {
  need_inputs(node, in, 1, 1);
  need_rank(node, in, 0, 4);
  const auto& a = node.attr<PoolAttrs>();
  return window_op(node, in, in[0][1], a.kernel, a.stride, {1, 1}, a.pads, a.ceil_mode);
}

int64_t checked_axis(const Node& node, const std::vector<Shape>& in, int64_t axis, size_t rank,
                     bool allow_rank = false) {
  const auto limit = static_cast<int64_t>(rank) + (allow_rank ? 1 : 0);
  if (axis < 0 || axis >= limit) fail(node, in, "axis {} out of range for rank {}", axis, rank);
  return axis;
}

Shape concat_one(const Node& node, const std::vector<Shape>& in) {
  if (in.empty()) fail(node, in, "has no inputs");
  const auto axis = static_cast<size_t>(checked_axis(node, in, node.attr<AxisAttrs>().axis, in[0].size()));
  Shape out = in[0];
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i].size() != out.size()) fail(node, in, "inputs have different ranks");
    for (size_t d = 0; d < out.size(); ++d) {
      if (d == axis) continue;
      if (in[i][d] != out[d]) fail(node, in, "inputs differ on axis {} (not the concat axis)", d);
    }
    out[axis] += in[i][axis];
  }
  return out;
}

std::vector<Shape> split_all(const Node& node, const std::vector<Shape>& in) {
  need_inputs(node, in, 1, 1);
  const auto& a = node.attr<SplitAttrs>();
  const auto axis = static_cast<size_t>(checked_axis(node, in, a.axis, in[0].size()));
  if (a.sizes.size() != node.outputs.size()) {
    fail(node, in, "has {} split sizes for {} outputs", a.sizes.size(), node.outputs.size());
  }
  const int64_t total = std::accumulate(a.sizes.begin(), a.sizes.end(), int64_t{0});
  if (total != in[0][axis] || std::any_of(a.sizes.begin(), a.sizes.end(), [](int64_t s) { return s < 0; })) {
    fail(node, in, "split sizes sum to {}, axis {} has {}", total, axis, in[0][axis]);
  }
  std::vector<Shape> out;
  for (int64_t s : a.sizes) {
    Shape piece = in[0];
    piece[axis] = s;
    out.push_back(piece);
  }
  return out;
}

Shape slice_one(const Node& node, const std::vector<Shape>& in) {
  need_inputs(node, in, 1, 1);
  const auto& a = node.attr<SliceAttrs>();
  const size_t n = a.axes.size();
  if (a.starts.size() != n || a.ends.size() != n || a.steps.size() != n) {
    fail(node, in, "axes, starts, ends and steps have different lengths");
  }
  Shape out = in[0];
  for (size_t i = 0; i < n; ++i) {
    const auto axis = static_cast<size_t>(checked_axis(node, in, a.axes[i], out.size()));
    const int64_t dim = in[0][axis];
    const int64_t start = a.starts[i], end = a.ends[i], step = a.steps[i];
    int64_t len = 0;
    if (step > 0) {
      if (start < 0 || start > dim || end < 0 || end > dim) fail(node, in, "slice not normalized");
      len = end > start ? (end - start + step - 1) / step : 0;
    } else if (step < 0) {
      if (start < 0 || start > dim - 1 || end < -1 || end > dim - 1) fail(node, in, "slice not normalized");
      len = start > end ? (start - end - step - 1) / -step : 0;
    } else {
      fail(node, in, "slice step 0");
    }
    out[axis] = len;
  }
  return out;
}

Shape reduce_one(const Node& node, const std::vector<Shape>& in) {
  need_inputs(node, in, 1, 1);
  const auto& a = node.attr<ReduceAttrs>();
  std::vector<bool> reduced(in[0].size(), false);
  for (int64_t axis : a.axes) reduced[static_cast<size_t>(checked_axis(node, in, axis, in[0].size()))] = true;
  Shape out;
  for (size_t d = 0; d < in[0].size(); ++d) {
    if (!reduced[d]) {
      out.push_back(in[0][d]);
    } else if (a.keepdims) {
      out.push_back(1);
    }
  }
  return out;
}

Shape gemm_one(const Node& node, const std::vector<Shape>& in) {
  need_inputs(node, in, 2, 3);
  need_rank(node, in, 0, 2);
  need_rank(node, in, 1, 2);
  const auto& a = node.attr<GemmAttrs>();
  const int64_t m = a.trans_a ? in[0][1] : in[0][0];
  const int64_t k = a.trans_a ? in[0][0] : in[0][1];
  const int64_t kb = a.trans_b ? in[1][1] : in[1][0];
  const int64_t n = a.trans_b ? in[1][0] : in[1][1];
  if (k != kb) fail(node, in, "inner dimensions differ ({} vs {})", k, kb);
  Shape out{m, n};
  if (in.size() == 3) {
    auto b = broadcast_shapes(out, in[2]);
    if (!b || *b != out) fail(node, in, "C does not broadcast to {}", to_string(out));
  }
  return out;
}

Shape matmul_one(const Node& node, const std::vector<Shape>& in) {
  need_inputs(node, in, 2, 2);
  Shape a = in[0], b = in[1];
  if (a.empty() || b.empty()) fail(node, in, "MatMul of a scalar");
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  if (a.back() != b[b.size() - 2]) fail(node, in, "inner dimensions differ");
  const Shape a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
  auto batch = broadcast_shapes(a_batch, b_batch);
  if (!batch) fail(node, in, "batch dimensions do not broadcast");
  Shape out = *batch;
  if (!a_vec) out.push_back(a[a.size() - 2]);
  if (!b_vec) out.push_back(b.back());
  return out;
}

}  // namespace

Shapes same_as_input(const Node& node, const Shapes& in) {
  need_inputs(node, in, 1, 1);
  return {in[0]};
}

Shapes broadcast(const Node& node, const Shapes& in) {
  need_inputs(node, in, 2, 2);
  auto out = broadcast_shapes(in[0], in[1]);
  if (!out) fail(node, in, "shapes do not broadcast");
  return {*out};
}

Shapes conv(const Node& node, const Shapes& in) { return {conv_one(node, in)}; }
Shapes pool(const Node& node, const Shapes& in) { return {pool_one(node, in)}; }

Shapes global_pool(const Node& node, const Shapes& in) {
  need_inputs(node, in, 1, 1);
  need_rank(node, in, 0, 4);
  return {Shape{in[0][0], in[0][1], 1, 1}};
}

Shapes concat(const Node& node, const Shapes& in) { return {concat_one(node, in)}; }
Shapes split(const Node& node, const Shapes& in) { return split_all(node, in); }
Shapes slice(const Node& node, const Shapes& in) { return {slice_one(node, in)}; }
Shapes reduce(const Node& node, const Shapes& in) { return {reduce_one(node, in)}; }

Shapes flatten(const Node& node, const Shapes& in) {
  need_inputs(node, in, 1, 1);
  const auto axis = checked_axis(node, in, node.attr<AxisAttrs>().axis, in[0].size(), true);
  const Shape head(in[0].begin(), in[0].begin() + axis), tail(in[0].begin() + axis, in[0].end());
  return {Shape{num_elements(head), num_elements(tail)}};
}

Shapes reshape(const Node& node, const Shapes& in) {
  need_inputs(node, in, 1, 1);
  const Shape& target = node.attr<ReshapeAttrs>().shape;
  if (std::any_of(target.begin(), target.end(), [](int64_t d) { return d < 0; }) ||
      num_elements(target) != num_elements(in[0])) {
    fail(node, in, "cannot reshape to {}", to_string(target));
  }
  return {target};
}

Shapes transpose(const Node& node, const Shapes& in) {
  need_inputs(node, in, 1, 1);
  const auto& perm = node.attr<TransposeAttrs>().perm;
  if (perm.size() != in[0].size()) fail(node, in, "perm has {} entries", perm.size());
  std::vector<bool> seen(perm.size(), false);
  Shape out;
  for (int64_t p : perm) {
    const auto axis = static_cast<size_t>(checked_axis(node, in, p, perm.size()));
    if (seen[axis]) fail(node, in, "perm repeats axis {}", axis);
    seen[axis] = true;
    out.push_back(in[0][axis]);
  }
  return {out};
}

Shapes gemm(const Node& node, const Shapes& in) { return {gemm_one(node, in)}; }
Shapes matmul(const Node& node, const Shapes& in) { return {matmul_one(node, in)}; }

Shapes softmax(const Node& node, const Shapes& in) {
  need_inputs(node, in, 1, 1);
  checked_axis(node, in, node.attr<AxisAttrs>().axis, in[0].size());
  return {in[0]};
}

Shapes pad(const Node& node, const Shapes& in) {
  need_inputs(node, in, 1, 1);
  const auto& pads = node.attr<PadAttrs>().pads;
  const size_t rank = in[0].size();
  if (pads.size() != 2 * rank) fail(node, in, "has {} pads for rank {}", pads.size(), rank);
  Shape out = in[0];
  for (size_t d = 0; d < rank; ++d) {
    out[d] += pads[d] + pads[d + rank];
    if (out[d] < 0) fail(node, in, "pads crop axis {} below zero", d);
  }
  return {out};
}

Shapes batch_norm(const Node& node, const Shapes& in) {
  need_inputs(node, in, 5, 5);
  if (in[0].size() < 2) fail(node, in, "input must have rank >= 2");
  for (size_t i = 1; i < 5; ++i) {
    if (in[i] != Shape{in[0][1]}) fail(node, in, "parameter {} must have shape {}", i, in[0][1]);
  }
  return {in[0]};
}

Shapes resize(const Node& node, const Shapes& in) {
  need_inputs(node, in, 1, 1);
  need_rank(node, in, 0, 4);
  const auto& a = node.attr<ResizeAttrs>();
  if (a.size[0] < 1 || a.size[1] < 1) fail(node, in, "output size {}x{} is empty", a.size[0], a.size[1]);
  return {{in[0][0], in[0][1], a.size[0], a.size[1]}};
}

Shapes layer_norm(const Node& node, const Shapes& in) {
  need_inputs(node, in, 2, 3);
  const auto axis = checked_axis(node, in, node.attr<LayerNormAttrs>().axis, in[0].size());
  const Shape dims = layer_norm::normalized_dims(in[0], axis);
  for (size_t i = 1; i < in.size(); ++i) {
    if (!layer_norm::broadcasts_to(in[i], dims)) {
      fail(node, in, "input {} does not broadcast to the normalized dims {}", i, to_string(dims));
    }
  }
  return {in[0]};
}

}  // namespace ios::ir::shapes
