// MaxPool, AveragePool and GlobalAveragePool (and ReduceMean over H and W,
// op_reduce.cpp): cuDNN when pads are symmetric and smaller than the window
// and the output size is floor-mode; the backend's own kernel otherwise
// (ceil mode, asymmetric pads).
#include <fmt/format.h>

#include "core/error.h"
#include "cuda/launch.h"
#include "cuda/lowering.h"
#include "cuda/resources.h"

namespace ios::cuda {
namespace {

using ir::NodeId;
using ir::OpKind;

class PoolOp final : public Operation {
 public:
  enum class Mode { kMax, kAverageIncludePad, kAverageExcludePad };
  Mode mode = Mode::kMax;
  int x = -1, y = -1;
  std::array<int64_t, 2> kernel{1, 1}, stride{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};  // top, left, bottom, right
  bool ceil_mode = false;
  // cuDNN when pads are symmetric and the output size is cuDNN's; otherwise
  // the backend's own kernel.
  bool use_cudnn = true;

  void uses(Uses& u) const override {
    u.read(x);
    u.write(y);
  }

  std::string describe(const Program& p) const override {
    return std::string(mode == Mode::kMax ? "maxpool " : "avgpool ") + std::to_string(kernel[0]) +
           'x' + std::to_string(kernel[1]) + (use_cudnn ? " (cuDNN) " : " (own) ") +
           p.value_name(x) + " -> " + p.value_name(y);
  }

  std::unique_ptr<GpuOp> launch(const Binding& b) const override;
};

class CudnnPoolOp final : public GpuOp {
 public:
  CudnnPoolOp(const PoolOp& op, const Value& x, const Value& y, const void* xp, void* yp)
      : x_ptr_(xp), y_ptr_(yp) {
    const ir::Shape& xs = x.shape;
    const int64_t oh = y.shape.size() == 4 ? y.shape[2] : 1;
    const int64_t ow = y.shape.size() == 4 ? y.shape[3] : 1;
    x_ = make_tensor_desc();
    y_ = make_tensor_desc();
    pool_ = make_pool_desc();
    set_tensor4d(x_.get(), xs[0], xs[1], xs[2], xs[3], x.batch_stride, xs[2] * xs[3], xs[3], 1);
    set_tensor4d(y_.get(), xs[0], xs[1], oh, ow, y.batch_stride, oh * ow, ow, 1);
    const cudnnPoolingMode_t mode = op.mode == PoolOp::Mode::kMax ? CUDNN_POOLING_MAX
                                    : op.mode == PoolOp::Mode::kAverageIncludePad
                                        ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                        : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    IOS_CUDNN_CALL(cudnnSetPooling2dDescriptor(
        pool_.get(), mode, CUDNN_NOT_PROPAGATE_NAN, static_cast<int>(op.kernel[0]),
        static_cast<int>(op.kernel[1]), static_cast<int>(op.pads[0]), static_cast<int>(op.pads[1]),
        static_cast<int>(op.stride[0]), static_cast<int>(op.stride[1])));
    what_ = fmt::format("cuDNN {} pool {}x{}/{}", op.mode == PoolOp::Mode::kMax ? "max" : "average",
                        op.kernel[0], op.kernel[1], op.stride[0]);
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
  void issue(const IssueContext& c) const override { IOS_CUDA_CALL(kernels::pool2d(p_, c.stream)); }
  std::string describe() const override {
    return fmt::format("own pool {}x{}/{}", p_.kh, p_.kw, p_.sh);
  }

 private:
  kernels::PoolParams p_;
};

std::unique_ptr<GpuOp> PoolOp::launch(const Binding& b) const {
  const Value& xv = b.value(x);
  const Value& yv = b.value(y);
  if (use_cudnn) return std::make_unique<CudnnPoolOp>(*this, xv, yv, b.in(x), b.out(y));
  kernels::PoolParams pp;
  pp.n = xv.shape[0], pp.c = xv.shape[1], pp.h = xv.shape[2], pp.w = xv.shape[3];
  pp.oh = yv.shape.size() == 4 ? yv.shape[2] : 1;
  pp.ow = yv.shape.size() == 4 ? yv.shape[3] : 1;
  pp.kh = kernel[0], pp.kw = kernel[1], pp.sh = stride[0], pp.sw = stride[1];
  pp.pad_top = pads[0], pp.pad_left = pads[1], pp.pad_bottom = pads[2], pp.pad_right = pads[3];
  pp.mode = mode == Mode::kMax                 ? kernels::kPoolMax
            : mode == Mode::kAverageIncludePad ? kernels::kPoolAverageInclude
                                               : kernels::kPoolAverageExclude;
  pp.x = b.in(x), pp.x_batch_stride = xv.batch_stride;
  pp.y = b.out(y), pp.y_batch_stride = yv.batch_stride;
  pp.type = xv.type;
  IOS_ASSERT(yv.type == xv.type, "pooling of {} into {}", ir::type_name(xv.type), ir::type_name(yv.type));
  return std::make_unique<KernelPoolOp>(pp);
}

}  // namespace

void lower_pool(Lowerer& lw, Launch& launch, NodeId n, int y) {
  const ir::Graph& g = lw.graph();
  const ir::Node& node = g.node(n);
  PoolOp op;
  op.x = lw.value_for(node.inputs[0]);
  op.y = y;
  const ir::Shape& xs = lw.val(op.x).shape;
  if (xs.size() != 4) {
    user_error("{} '{}': only 2-D pooling (4-D tensors) is supported by the CUDA backend",
               ir::op_name(node.op), node.name);
  }
  if (node.op == OpKind::kGlobalAveragePool) {
    op.mode = PoolOp::Mode::kAverageIncludePad;
    op.kernel = {xs[2], xs[3]};
    op.stride = {1, 1};
  } else {
    const auto& a = node.attr<ir::PoolAttrs>();
    op.mode = node.op == OpKind::kMaxPool ? PoolOp::Mode::kMax
              : a.count_include_pad       ? PoolOp::Mode::kAverageIncludePad
                                          : PoolOp::Mode::kAverageExcludePad;
    need_2d_window(node, a.spatial_rank());
    if (a.dilation != ir::Dims{1, 1}) {
      user_error("{} '{}': dilated pooling is not supported by the CUDA backend; run it with --backend cpu",
                 ir::op_name(node.op), node.name);
    }
    op.kernel = pair(a.kernel);
    op.stride = pair(a.stride);
    op.pads = quad(a.pads);
    op.ceil_mode = a.ceil_mode;
  }
  // cuDNN: symmetric pads smaller than the window and floor-mode sizes.
  const ir::Shape& ys = lw.val(y).shape;
  const bool symmetric = op.pads[0] == op.pads[2] && op.pads[1] == op.pads[3];
  const bool small_pads = op.pads[0] < op.kernel[0] && op.pads[1] < op.kernel[1];
  const bool floor_size =
      ys.size() >= 2 &&
      (xs[2] + 2 * op.pads[0] - op.kernel[0]) / op.stride[0] + 1 == (ys.size() == 4 ? ys[2] : 1) &&
      (xs[3] + 2 * op.pads[1] - op.kernel[1]) / op.stride[1] + 1 == (ys.size() == 4 ? ys[3] : 1);
  // 16-bit tensors: the own kernel (reads the type, sums in float), so that
  // no cuDNN pooling configuration of the type has to be relied on.
  const bool float32 = lw.val(op.x).type == ir::ElementType::kFloat32;
  op.use_cudnn = symmetric && small_pads && floor_size && float32;
  emit(launch, op);
}

void Lowerer::global_average_pool(Launch& launch, int x, int y) {
  const ir::Shape& xs = val(x).shape;
  PoolOp op;
  op.x = x;
  op.y = y;
  op.mode = PoolOp::Mode::kAverageIncludePad;
  op.kernel = {xs[2], xs[3]};
  op.use_cudnn = val(x).type == ir::ElementType::kFloat32;
  emit(launch, op);
}

}  // namespace ios::cuda
