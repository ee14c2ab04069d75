// Data movement: Transpose, Slice, Split, Concat (the inputs the storage
// plan did not place in their slices), Reshape and Flatten, and dense copies
// of strided values for operations that need them, all as one strided copy
// operation, issued as cudaMemcpyAsync, cudaMemcpy2DAsync or the backend's
// copy kernel. Elements move as their bits (any element type); a copy
// between two types (a constant's into a value's) converts in the kernel.
#include <fmt/format.h>

#include "core/error.h"
#include "cuda/launch.h"
#include "cuda/lowering.h"

namespace ios::cuda {
namespace {

using ir::NodeId;
using ir::TensorId;

class CopyKernelOp final : public GpuOp {
 public:
  // Coalesces dimensions, then picks cudaMemcpyAsync, cudaMemcpy2DAsync or
  // the strided copy kernel (always, when the types differ).
  CopyKernelOp(const void* src, ir::ElementType src_type, void* dst, ir::ElementType dst_type,
               std::vector<int64_t> dims, std::vector<int64_t> ss, std::vector<int64_t> ds)
      : element_bytes_(static_cast<size_t>(ir::bytes_of(dst_type))) {
    const bool same_type = src_type == dst_type;
    std::vector<int64_t> d2, s2, t2;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] == 1) continue;
      d2.push_back(dims[i]), s2.push_back(ss[i]), t2.push_back(ds[i]);
    }
    for (size_t i = d2.size(); i-- > 1;) {
      if (s2[i - 1] == s2[i] * d2[i] && t2[i - 1] == t2[i] * d2[i]) {
        d2[i - 1] *= d2[i];
        s2[i - 1] = s2[i];
        t2[i - 1] = t2[i];
        d2.erase(d2.begin() + static_cast<std::ptrdiff_t>(i));
        s2.erase(s2.begin() + static_cast<std::ptrdiff_t>(i));
        t2.erase(t2.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
    if (d2.empty()) d2 = {1}, s2 = {1}, t2 = {1};
    src_ = src;
    dst_ = dst;
    total_ = ir::num_elements(d2);
    if (same_type && d2.size() == 1 && s2[0] == 1 && t2[0] == 1) {
      kind_ = Kind::kLinear;
    } else if (same_type && d2.size() == 2 && s2[1] == 1 && t2[1] == 1 && s2[0] >= d2[1] && t2[0] >= d2[1]) {
      kind_ = Kind::kPitched;
      rows_ = d2[0], width_ = d2[1], src_pitch_ = s2[0], dst_pitch_ = t2[0];
    } else {
      kind_ = Kind::kKernel;
      p_.rank = static_cast<int>(d2.size());
      fill_dims(p_.dims, d2, "a copy");
      fill_dims(p_.src_strides, s2, "a copy");
      fill_dims(p_.dst_strides, t2, "a copy");
      p_.total = total_;
      p_.src = src;
      p_.dst = dst;
      p_.src_type = src_type;
      p_.dst_type = dst_type;
    }
  }
  void issue(const IssueContext& c) const override {
    switch (kind_) {
      case Kind::kLinear:
        IOS_CUDA_CALL(cudaMemcpyAsync(dst_, src_, static_cast<size_t>(total_) * element_bytes_,
                                      cudaMemcpyDeviceToDevice, c.stream));
        break;
      case Kind::kPitched:
        IOS_CUDA_CALL(cudaMemcpy2DAsync(dst_, static_cast<size_t>(dst_pitch_) * element_bytes_, src_,
                                        static_cast<size_t>(src_pitch_) * element_bytes_,
                                        static_cast<size_t>(width_) * element_bytes_,
                                        static_cast<size_t>(rows_), cudaMemcpyDeviceToDevice,
                                        c.stream));
        break;
      case Kind::kKernel:
        IOS_CUDA_CALL(kernels::copy(p_, c.stream));
        break;
    }
  }
  std::string describe() const override {
    const char* how = kind_ == Kind::kLinear    ? "memcpy"
                      : kind_ == Kind::kPitched ? "memcpy2D"
                                                : "copy kernel";
    return fmt::format("{} ({} elements)", how, total_);
  }

 private:
  enum class Kind { kLinear, kPitched, kKernel };
  Kind kind_ = Kind::kKernel;
  size_t element_bytes_ = sizeof(float);
  const void* src_ = nullptr;
  void* dst_ = nullptr;
  int64_t total_ = 0, rows_ = 0, width_ = 0, src_pitch_ = 0, dst_pitch_ = 0;
  kernels::CopyParams p_;
};

}  // namespace

std::unique_ptr<GpuOp> make_copy(const void* src, void* dst, std::vector<int64_t> dims,
                                 std::vector<int64_t> src_strides,
                                 std::vector<int64_t> dst_strides, ir::ElementType type) {
  return std::make_unique<CopyKernelOp>(src, type, dst, type, std::move(dims), std::move(src_strides),
                                        std::move(dst_strides));
}

void CopyOp::uses(Uses& u) const {
  if (src_constant < 0) u.read(src);
  u.write(dst);
}

std::string CopyOp::describe(const Program& p) const {
  const std::string from = src_constant >= 0 ? "constant " + p.constants.at(static_cast<size_t>(src_constant)).name
                                             : p.value_name(src);
  return "copy " + from + " -> " + p.value_name(dst);
}

std::unique_ptr<GpuOp> CopyOp::launch(const Binding& b) const {
  const void* from = src_constant >= 0 ? b.constant(src_constant) : b.in(src);
  const ir::ElementType from_type =
      src_constant >= 0 ? b.program().constants.at(static_cast<size_t>(src_constant)).type : b.type(src);
  const ir::ElementType to_type = b.type(dst);
  return std::make_unique<CopyKernelOp>(offset_ptr(from, src_offset, from_type), from_type,
                                        offset_ptr(b.out(dst), dst_offset, to_type), to_type, dims, src_strides,
                                        dst_strides);
}

// A copy of `dims` elements from `src` to `dst`, each with its own dense
// strides; callers adjust offsets and source strides for views.
CopyOp Lowerer::strided_copy(int src, int dst, const ir::Shape& dims) {
  CopyOp op;
  op.src = src;
  op.dst = dst;
  op.dims = dims;
  op.src_strides = val(src).strides();
  op.dst_strides = val(dst).strides();
  return op;
}

// A dense copy of value `v` (when it is a strided slice) for operations that need one.
int Lowerer::dense(Launch& launch, int v) {
  if (val(v).dense()) return v;
  const int t = scratch(launch, val(v).name + ":dense", val(v).shape, val(v).type);
  emit(launch, strided_copy(v, t, val(v).shape));
  return t;
}

void lower_transpose(Lowerer& lw, Launch& launch, NodeId n, int y) {
  const ir::Graph& g = lw.graph();
  const ir::Node& node = g.node(n);
  const int x = lw.value_for(node.inputs[0]);
  const auto& perm = node.attr<ir::TransposeAttrs>().perm;
  CopyOp op;
  op.src = x;
  op.dst = y;
  op.dims = lw.val(y).shape;
  const std::vector<int64_t> xs = lw.val(x).strides();
  for (size_t d = 0; d < perm.size(); ++d) {
    op.src_strides.push_back(xs.at(static_cast<size_t>(normalize_axis(perm[d], perm.size()))));
  }
  op.dst_strides = lw.val(y).strides();
  emit(launch, std::move(op));
}

void lower_slice(Lowerer& lw, Launch& launch, NodeId n, int y) {
  const ir::Graph& g = lw.graph();
  const ir::Node& node = g.node(n);
  const int x = lw.value_for(node.inputs[0]);
  const auto& a = node.attr<ir::SliceAttrs>();
  CopyOp op = lw.strided_copy(x, y, lw.val(y).shape);
  for (size_t i = 0; i < a.axes.size(); ++i) {
    const auto axis = static_cast<size_t>(normalize_axis(a.axes[i], op.dims.size()));
    const int64_t step = i < a.steps.size() ? a.steps[i] : 1;
    op.src_offset += a.starts.at(i) * op.src_strides[axis];
    op.src_strides[axis] *= step;
  }
  emit(launch, std::move(op));
}

namespace {

// Tile as strided copies that read the input with stride 0 along a repeat:
// a repeated axis of length d is the pair (repeat, d) of the output, the
// input's strides (0, s). Beyond the copy kernel's kMaxDims dimensions the
// first repeated axis is peeled into one copy per repeat.
void emit_tile(Launch& launch, int x, int y, const ir::Shape& xs, const std::vector<int64_t>& x_strides,
               const std::vector<int64_t>& y_strides, const std::vector<int64_t>& repeats, int64_t y_offset) {
  CopyOp op;
  op.src = x;
  op.dst = y;
  op.dst_offset = y_offset;
  size_t peel = repeats.size();
  for (size_t d = 0; d < xs.size(); ++d) {
    if (repeats[d] > 1) {
      if (peel == repeats.size()) peel = d;
      op.dims.push_back(repeats[d]);
      op.src_strides.push_back(0);
      op.dst_strides.push_back(xs[d] * y_strides[d]);
    }
    op.dims.push_back(xs[d]);
    op.src_strides.push_back(x_strides[d]);
    op.dst_strides.push_back(y_strides[d]);
  }
  if (op.dims.size() <= static_cast<size_t>(kernels::kMaxDims) || peel == repeats.size()) {
    emit(launch, std::move(op));
    return;
  }
  std::vector<int64_t> rest = repeats;
  rest[peel] = 1;
  for (int64_t k = 0; k < repeats[peel]; ++k) {
    emit_tile(launch, x, y, xs, x_strides, y_strides, rest, y_offset + k * xs[peel] * y_strides[peel]);
  }
}

}  // namespace

void lower_tile(Lowerer& lw, Launch& launch, NodeId n, int y) {
  const ir::Graph& g = lw.graph();
  const ir::Node& node = g.node(n);
  const int x = lw.value_for(node.inputs[0]);
  emit_tile(launch, x, y, lw.val(x).shape, lw.val(x).strides(), lw.val(y).strides(), node.attr<ir::TileAttrs>().repeats,
            0);
}

void lower_split(Lowerer& lw, Launch& launch, NodeId n, const std::vector<NodeId>& chain) {
  const ir::Graph& g = lw.graph();
  IOS_ASSERT(chain.empty(), "Split '{}' has an epilogue", g.node(n).name);
  const ir::Node& node = g.node(n);
  const int x = lw.value_for(node.inputs[0]);
  const auto& a = node.attr<ir::SplitAttrs>();
  const auto axis = static_cast<size_t>(normalize_axis(a.axis, lw.val(x).shape.size()));
  int64_t offset = 0;
  for (TensorId out : node.outputs) {
    const int y = lw.value_for(out);
    CopyOp op = lw.strided_copy(x, y, lw.val(y).shape);
    op.src_offset = offset * op.src_strides[axis];
    offset += op.dims[axis];
    emit(launch, std::move(op));
  }
}

void lower_concat(Lowerer& lw, Launch& launch, NodeId n, const std::vector<NodeId>& chain) {
  const ir::Graph& g = lw.graph();
  const ir::Node& node = g.node(n);
  const int y = lw.value_for(node.outputs[0]);
  const auto axis =
      static_cast<size_t>(normalize_axis(node.attr<ir::AxisAttrs>().axis, lw.val(y).shape.size()));
  const std::vector<int64_t> ys = lw.val(y).strides();
  int64_t offset = 0;
  for (TensorId in : node.inputs) {
    const int64_t size = g.tensor(in).shape.at(axis);
    if (!lw.storage().zero_copy_concat_input(in)) {
      CopyOp op;
      op.dims = g.tensor(in).shape;
      if (g.tensor(in).is_constant()) {
        // A constant input (a transformer's class token, folded at import
        // with the batch): copied from the program's constant, dense.
        op.src_constant = lw.constant(in);
        op.src_strides = strides_of(op.dims, item_of(op.dims));
      } else {
        op.src = lw.value_for(in);
        op.src_strides = lw.val(op.src).strides();
      }
      op.dst = y;
      op.dst_strides = ys;
      op.dst_offset = offset * ys[axis];
      emit(launch, std::move(op));
      ++lw.program().concat_inputs_copied;
    }
    offset += size;
  }
  lw.in_place_steps(launch, y, n, chain, 0);
}

namespace {

void reshape_copy(Lowerer& lw, Launch& launch, int x, int y) {
  CopyOp op;
  op.dst = y;
  const Value& X = lw.val(x);
  const Value& Y = lw.val(y);
  if (X.batch() == Y.batch() && X.item_size() == Y.item_size()) {
    op.src = x;
    op.dims = {X.batch(), X.item_size()};
    op.src_strides = {X.batch_stride, 1};
    op.dst_strides = {Y.batch_stride, 1};
  } else if (X.dense() || Y.dense()) {
    const bool by_dst = X.dense();
    const Value& V = by_dst ? Y : X;
    op.src = x;
    op.dims = {V.batch(), V.item_size()};
    op.src_strides = {by_dst ? V.item_size() : X.batch_stride, 1};
    op.dst_strides = {by_dst ? Y.batch_stride : V.item_size(), 1};
  } else {
    reshape_copy(lw, launch, lw.dense(launch, x), y);
    return;
  }
  emit(launch, std::move(op));
}

}  // namespace

// Reshape and Flatten: the same elements, another shape.
void lower_reshape_node(Lowerer& lw, Launch& launch, NodeId n, int y) {
  const ir::Graph& g = lw.graph();
  reshape_copy(lw, launch, lw.value_for(g.node(n).inputs[0]), y);
}

}  // namespace ios::cuda
