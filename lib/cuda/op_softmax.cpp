// Softmax and LogSoftmax on any axis: cuDNN (ACCURATE or LOG, channel mode
// on [outer, K, inner, 1]). With axis 1 the batch may be strided; on another axis a strided input
// is copied dense first and a strided output is computed in a dense scratch
// tensor and copied there.
#include "core/error.h"
#include "cuda/launch.h"
#include "cuda/lowering.h"
#include "cuda/resources.h"

namespace ios::cuda {
namespace {

using ir::NodeId;

class SoftmaxGpuOp final : public GpuOp {
 public:
  SoftmaxGpuOp(int64_t softmax_axis, bool log, const Value& x, const Value& y, const float* xp, float* yp)
      : log_(log), x_ptr_(xp), y_ptr_(yp) {
    const ir::Shape& s = x.shape;
    const auto axis = static_cast<size_t>(softmax_axis);
    IOS_ASSERT(axis < s.size(), "softmax axis {} of rank {}", axis, s.size());
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < axis; ++d) outer *= s[d];
    for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
    const int64_t k = s[axis];
    // Softmax over "channels" of [outer, K, inner, 1]; with axis 1 the outer
    // dimension is the batch and may be strided.
    const int64_t xs = axis == 1 ? x.batch_stride : k * inner;
    const int64_t ys = axis == 1 ? y.batch_stride : k * inner;
    x_ = make_tensor_desc();
    y_ = make_tensor_desc();
    set_tensor4d(x_.get(), outer, k, inner, 1, xs, inner, 1, 1);
    set_tensor4d(y_.get(), outer, k, inner, 1, ys, inner, 1, 1);
  }
  void issue(const IssueContext& c) const override {
    const float one = 1.0f, zero = 0.0f;
    IOS_CUDNN_CALL(cudnnSoftmaxForward(c.cudnn, log_ ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE,
                                       CUDNN_SOFTMAX_MODE_CHANNEL, &one, x_.get(), x_ptr_, &zero, y_.get(), y_ptr_));
  }
  std::string describe() const override { return log_ ? "cuDNN log-softmax" : "cuDNN softmax"; }

 private:
  bool log_;
  TensorDesc x_, y_;
  const float* x_ptr_;
  float* y_ptr_;
};

class SoftmaxOp final : public Operation {
 public:
  int x = -1, y = -1;
  int64_t axis = 1;
  bool log = false;  // LogSoftmax

  SoftmaxOp(int x_, int y_, int64_t axis_, bool log_) : x(x_), y(y_), axis(axis_), log(log_) {}

  void uses(Uses& u) const override {
    u.read(x);
    u.write(y);
  }

  std::string describe(const Program& p) const override {
    return std::string(log ? "log-softmax" : "softmax") + " axis " + std::to_string(axis) + ' ' + p.value_name(x) + " -> " +
           p.value_name(y);
  }

  std::unique_ptr<GpuOp> launch(const Binding& b) const override {
    return std::make_unique<SoftmaxGpuOp>(axis, log, b.value(x), b.value(y), b.in(x), b.out(y));
  }
};

}  // namespace

void lower_softmax(Lowerer& lw, Launch& launch, NodeId n, int y) {
  const ir::Graph& g = lw.graph();
  const ir::Node& node = g.node(n);
  int x = lw.value_for(node.inputs[0]);
  const int64_t axis = normalize_axis(node.attr<ir::AxisAttrs>().axis, lw.val(x).shape.size());
  const bool log = node.op == ir::OpKind::kLogSoftmax;
  if (axis == 1 || (lw.val(x).dense() && lw.val(y).dense())) {
    emit(launch, SoftmaxOp(x, y, axis, log));
    return;
  }
  x = lw.dense(launch, x);
  if (lw.val(y).dense()) {
    emit(launch, SoftmaxOp(x, y, axis, log));
    return;
  }
  const int t = lw.scratch(launch, lw.val(y).name + ":dense", lw.val(y).shape);
  emit(launch, SoftmaxOp(x, t, axis, log));
  CopyOp copy;
  copy.src = t;
  copy.dst = y;
  copy.dims = lw.val(y).shape;
  copy.src_strides = lw.val(t).strides();
  copy.dst_strides = lw.val(y).strides();
  emit(launch, std::move(copy));
}

}  // namespace ios::cuda
