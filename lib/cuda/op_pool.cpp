// MaxPool, AveragePool and GlobalAveragePool (and ReduceMean over every
// spatial axis, op_reduce.cpp) over 1 to 3 spatial axes: cuDNN's Nd pooling
// for float32 tensors when pads are symmetric and smaller than the window,
// the window is not dilated and the output size is floor-mode (a 1-D window
// as the 2-D one with H = 1, cudnn_dims in launch.h); the backend's own
// kernel otherwise (ceil mode, asymmetric pads, dilated MaxPool, which cuDNN
// pooling lacks, and 16-bit tensors). The own kernel works on
// ir::Window3's T, H, W geometry, as the CPU reference does, so one kernel
// serves every rank.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "cuda/launch.h"
#include "cuda/lowering.h"
#include "cuda/resources.h"
#include "ir/window.h"

namespace ios::cuda {
namespace {

using ir::NodeId;
using ir::OpKind;

class PoolOp final : public Operation {
 public:
  enum class Mode { kMax, kAverageIncludePad, kAverageExcludePad };
  Mode mode = Mode::kMax;
  int x = -1, y = -1;
  size_t spatial = 2;  // spatial axes of x and y (1 to 3)
  // The window on T, H, W (ir::Window3's form: axes x lacks have kernel 1).
  ir::Axes3 kernel{1, 1, 1}, stride{1, 1, 1}, dilation{1, 1, 1}, pad_begin{0, 0, 0},
      pad_end{0, 0, 0};
  // cuDNN when pads are symmetric and the output size is cuDNN's; otherwise
  // the backend's own kernel.
  bool use_cudnn = true;

  void uses(Uses& u) const override {
    u.read(x);
    u.write(y);
  }

  std::string describe(const Program& p) const override {
    const ir::Dims k(kernel.end() - static_cast<std::ptrdiff_t>(spatial), kernel.end());
    return fmt::format("{} {}{} {} -> {}", mode == Mode::kMax ? "maxpool" : "avgpool",
                       fmt::join(k, "x"), use_cudnn ? " (cuDNN)" : " (own)", p.value_name(x),
                       p.value_name(y));
  }

  std::unique_ptr<GpuOp> launch(const Binding& b) const override;
};

// The last `n` of T, H, W.
ir::Dims last(const ir::Axes3& a, size_t n) {
  return ir::Dims(a.end() - static_cast<std::ptrdiff_t>(n), a.end());
}

class CudnnPoolOp final : public GpuOp {
 public:
  CudnnPoolOp(const PoolOp& op, const Value& x, const Value& y, const void* xp, void* yp)
      : x_ptr_(xp), y_ptr_(yp) {
    const ir::Shape xd = cudnn_dims(x.shape);
    // y of x's rank: a ReduceMean without keepdims writes [N, C], which is
    // the pooled [N, C, 1...] in the same memory.
    ir::Shape yd = y.shape;
    yd.resize(x.shape.size(), 1);
    yd = cudnn_dims(yd);
    const size_t nd = xd.size() - 2;  // cuDNN's spatial axes: 2 or 3
    x_ = make_tensor_desc();
    y_ = make_tensor_desc();
    pool_ = make_pool_desc();
    set_tensor_nd(x_.get(), xd, x.batch_stride, x.type);
    set_tensor_nd(y_.get(), yd, y.batch_stride, y.type);
    const cudnnPoolingMode_t mode = op.mode == PoolOp::Mode::kMax ? CUDNN_POOLING_MAX
                                    : op.mode == PoolOp::Mode::kAverageIncludePad
                                        ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                        : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    auto ints = [&](const ir::Axes3& a) {
      std::vector<int> v;
      for (int64_t d : last(a, nd)) {
        IOS_ASSERT(d >= 0 && d <= INT32_MAX, "pooling window value {} does not fit cuDNN", d);
        v.push_back(static_cast<int>(d));
      }
      return v;
    };
    const std::vector<int> window = ints(op.kernel), pads = ints(op.pad_begin),
                           strides = ints(op.stride);
    IOS_CUDNN_CALL(cudnnSetPoolingNdDescriptor(pool_.get(), mode, CUDNN_NOT_PROPAGATE_NAN,
                                               static_cast<int>(nd), window.data(), pads.data(),
                                               strides.data()));
    what_ = fmt::format("cuDNN {} pool {}/{}", op.mode == PoolOp::Mode::kMax ? "max" : "average",
                        fmt::join(window, "x"), fmt::join(strides, ","));
  }
  void issue(const IssueContext& c) const override {
    const float one = 1.0f, zero = 0.0f;
    IOS_CUDNN_CALL(
        cudnnPoolingForward(c.cudnn, pool_.get(), &one, x_.get(), x_ptr_, &zero, y_.get(), y_ptr_));
  }
  std::string describe() const override { return what_; }

 private:
  TensorDesc x_, y_;
  PoolDesc pool_;
  const void* x_ptr_;
  void* y_ptr_;
  std::string what_;
};

class KernelPoolOp final : public GpuOp {
 public:
  explicit KernelPoolOp(const kernels::PoolParams& p) : p_(p) {}
  void issue(const IssueContext& c) const override { IOS_CUDA_CALL(kernels::pool(p_, c.stream)); }
  std::string describe() const override {
    return fmt::format("own pool {}x{}x{}/{},{},{}", p_.kernel[0], p_.kernel[1], p_.kernel[2],
                       p_.stride[0], p_.stride[1], p_.stride[2]);
  }

 private:
  kernels::PoolParams p_;
};

std::unique_ptr<GpuOp> PoolOp::launch(const Binding& b) const {
  const Value& xv = b.value(x);
  const Value& yv = b.value(y);
  if (use_cudnn) return std::make_unique<CudnnPoolOp>(*this, xv, yv, b.in(x), b.out(y));
  kernels::PoolParams pp;
  pp.n = xv.shape[0], pp.c = xv.shape[1];
  const ir::Axes3 in = ir::spatial3(xv.shape), out = ir::spatial3(yv.shape);
  for (size_t d = 0; d < 3; ++d) {
    pp.in[d] = in[d], pp.out[d] = out[d];
    pp.kernel[d] = kernel[d], pp.stride[d] = stride[d], pp.dilation[d] = dilation[d];
    pp.pad_begin[d] = pad_begin[d], pp.pad_end[d] = pad_end[d];
  }
  pp.mode = mode == Mode::kMax                 ? kernels::kPoolMax
            : mode == Mode::kAverageIncludePad ? kernels::kPoolAverageInclude
                                               : kernels::kPoolAverageExclude;
  pp.x = b.in(x), pp.x_batch_stride = xv.batch_stride;
  pp.y = b.out(y), pp.y_batch_stride = yv.batch_stride;
  pp.type = xv.type;
  IOS_ASSERT(yv.type == xv.type, "pooling of {} into {}", ir::type_name(xv.type), ir::type_name(yv.type));
  return std::make_unique<KernelPoolOp>(pp);
}

// cuDNN serves the window when it is float32, undilated, its pads are
// symmetric and smaller than the window, and the output has cuDNN's
// floor-mode size (ceil mode and asymmetric pads need the own kernel).
bool cudnn_pools(const PoolOp& op, const ir::Shape& xs, const ir::Shape& ys, ir::ElementType type) {
  if (type != ir::ElementType::kFloat32) return false;  // no 16-bit cuDNN pooling is relied on
  const ir::Axes3 in = ir::spatial3(xs), out = ir::spatial3(ys);
  for (size_t d = 0; d < 3; ++d) {
    if (op.dilation[d] != 1 || op.pad_begin[d] != op.pad_end[d]) return false;
    if (op.pad_begin[d] >= op.kernel[d]) return false;
    if ((in[d] + 2 * op.pad_begin[d] - op.kernel[d]) / op.stride[d] + 1 != out[d]) return false;
  }
  return true;
}

}  // namespace

void lower_pool(Lowerer& lw, Launch& launch, NodeId n, int y) {
  const ir::Graph& g = lw.graph();
  const ir::Node& node = g.node(n);
  PoolOp op;
  op.x = lw.value_for(node.inputs[0]);
  op.y = y;
  const ir::Shape& xs = lw.val(op.x).shape;
  const ir::Shape& ys = lw.val(y).shape;
  if (xs.size() < 3 || xs.size() > 5 || ys.size() != xs.size()) {
    user_error(
        "{} '{}': pooling of {} into {}; the CUDA backend pools 1 to 3 spatial axes "
        "(N,C,L / N,C,H,W / N,C,T,H,W)",
        ir::op_name(node.op), node.name, ir::to_string(xs), ir::to_string(ys));
  }
  op.spatial = xs.size() - 2;
  if (node.op == OpKind::kGlobalAveragePool) {
    op.mode = PoolOp::Mode::kAverageIncludePad;
    op.kernel = ir::spatial3(xs);
  } else {
    const auto& a = node.attr<ir::PoolAttrs>();
    if (a.spatial_rank() != op.spatial) {
      user_error("{} '{}': a {}-D window over {}", ir::op_name(node.op), node.name,
                 a.spatial_rank(), ir::to_string(xs));
    }
    op.mode = node.op == OpKind::kMaxPool ? PoolOp::Mode::kMax
              : a.count_include_pad       ? PoolOp::Mode::kAverageIncludePad
                                          : PoolOp::Mode::kAverageExcludePad;
    const ir::Window3 w = ir::window3(xs, ys, a);
    op.kernel = w.kernel, op.stride = w.stride, op.dilation = w.dilation;
    op.pad_begin = w.pad_begin, op.pad_end = w.pad_end;
  }
  op.use_cudnn = cudnn_pools(op, xs, ys, lw.val(op.x).type);
  emit(launch, op);
}

void Lowerer::global_average_pool(Launch& launch, int x, int y) {
  const ir::Shape& xs = val(x).shape;
  PoolOp op;
  op.x = x;
  op.y = y;
  op.spatial = xs.size() - 2;
  op.mode = PoolOp::Mode::kAverageIncludePad;
  op.kernel = ir::spatial3(xs);
  op.use_cudnn = cudnn_pools(op, xs, val(y).shape, val(x).type);
  emit(launch, op);
}

}  // namespace ios::cuda
