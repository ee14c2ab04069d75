// Softmax and LogSoftmax on any axis: cuDNN (ACCURATE or LOG, channel mode
// on [outer, K, inner, 1]). With axis 1 the batch may be strided; on another axis a strided input
// is copied dense first and a strided output is computed in a dense scratch
// tensor and copied there. A 16-bit softmax runs cuDNN's float32 softmax
// between two converting copies (float32 scratch tensors), so no cuDNN
// softmax configuration of the type has to be relied on; the CPU reference
// computes it the same way (float math on the stored inputs, the output
// rounded once).
#include "core/error.h"
#include "cuda/launch.h"
#include "cuda/lowering.h"
#include "cuda/resources.h"

namespace ios::cuda {
namespace {

using ir::NodeId;

class SoftmaxGpuOp final : public GpuOp {
 public:
  SoftmaxGpuOp(int64_t softmax_axis, bool log, const Value& x, const Value& y, const void* xp, void* yp)
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
  const void* x_ptr_;
  void* y_ptr_;
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
    IOS_ASSERT(b.type(x) == ir::ElementType::kFloat32 && b.type(y) == ir::ElementType::kFloat32,
               "cuDNN softmax of {} into {}", ir::type_name(b.type(x)), ir::type_name(b.type(y)));
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
  if (lw.val(x).type != ir::ElementType::kFloat32 || lw.val(y).type != ir::ElementType::kFloat32) {
    // float32 copies of x and of the result, converted on the way in and out.
    const ir::Shape& shape = lw.val(x).shape;
    const int x32 = lw.scratch(launch, lw.val(x).name + ":float32", shape, ir::ElementType::kFloat32);
    emit(launch, lw.strided_copy(x, x32, shape));
    const int y32 = lw.scratch(launch, lw.val(y).name + ":float32", shape, ir::ElementType::kFloat32);
    emit(launch, SoftmaxOp(x32, y32, axis, log));
    emit(launch, lw.strided_copy(y32, y, shape));
    return;
  }
  if (axis == 1 || (lw.val(x).dense() && lw.val(y).dense())) {
    emit(launch, SoftmaxOp(x, y, axis, log));
    return;
  }
  x = lw.dense(launch, x);
  if (lw.val(y).dense()) {
    emit(launch, SoftmaxOp(x, y, axis, log));
    return;
  }
  const int t = lw.scratch(launch, lw.val(y).name + ":dense", lw.val(y).shape, lw.val(y).type);
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
