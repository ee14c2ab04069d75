// ConvTranspose on CUDA: cuDNN's backward-data convolution, which is the
// transposed convolution's definition (dx of the forward convolution whose
// filter is the weight [C_in, C_out / group, kh, kw], with the input as dy),
// algorithm 0 (no workspace), strict FP32; the bias added by cudnnAddTensor,
// the epilogue chain after it in place. cuDNN pads both ends alike: pads
// whose end differs from the start lower when the forward convolution's
// size rule still gives back the input (0 <= begin - end + output_padding <
// stride), which holds for every export of nn.ConvTranspose2d; otherwise
// the node is refused by name.
#include <climits>

#include "core/error.h"
#include "cuda/launch.h"
#include "cuda/lowering.h"
#include "cuda/resources.h"

namespace ios::cuda {
namespace {

using ir::NodeId;

int cudnn_int(int64_t v, const char* what) {
  IOS_ASSERT(v >= 0 && v <= INT_MAX, "ConvTranspose: {} {} is out of cuDNN's range", what, v);
  return static_cast<int>(v);
}

class ConvTransposeGpuOp final : public GpuOp {
 public:
  // x, y, the weights and the bias are all of x's type; a 16-bit one runs on
  // tensor cores (float compute), a float32 one in FMA math as before.
  ConvTransposeGpuOp(const ir::ConvTransposeAttrs& a, const Value& x, const Value& y, const void* xp,
                     const void* wp, const void* bp, void* yp)
      : x_ptr_(xp), w_ptr_(wp), b_ptr_(bp), y_ptr_(yp) {
    const ir::ElementType type = x.type;
    const cudnnDataType_t data = cudnn_type(type);
    const ir::Shape& xs = x.shape;
    const ir::Shape& ys = y.shape;
    x_ = make_tensor_desc();
    y_ = make_tensor_desc();
    b_ = make_tensor_desc();
    w_ = make_filter_desc();
    conv_ = make_conv_desc();
    set_tensor4d(x_.get(), xs[0], xs[1], xs[2], xs[3], x.batch_stride, xs[2] * xs[3], xs[3], 1, type);
    set_tensor4d(y_.get(), ys[0], ys[1], ys[2], ys[3], y.batch_stride, ys[2] * ys[3], ys[3], 1, type);
    IOS_CUDNN_CALL(cudnnSetTensor4dDescriptor(b_.get(), CUDNN_TENSOR_NCHW, data, 1,
                                              cudnn_int(ys[1], "channels"), 1, 1));
    IOS_CUDNN_CALL(cudnnSetFilter4dDescriptor(w_.get(), data, CUDNN_TENSOR_NCHW,
                                              cudnn_int(xs[1], "input channels"),
                                              cudnn_int(ys[1] / a.group, "output channels per group"),
                                              cudnn_int(a.kernel[0], "kernel"), cudnn_int(a.kernel[1], "kernel")));
    IOS_CUDNN_CALL(cudnnSetConvolution2dDescriptor(
        conv_.get(), cudnn_int(a.pads[0], "pad"), cudnn_int(a.pads[1], "pad"), cudnn_int(a.stride[0], "stride"),
        cudnn_int(a.stride[1], "stride"), cudnn_int(a.dilation[0], "dilation"), cudnn_int(a.dilation[1], "dilation"),
        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    IOS_CUDNN_CALL(cudnnSetConvolutionGroupCount(conv_.get(), cudnn_int(a.group, "group")));
    IOS_CUDNN_CALL(cudnnSetConvolutionMathType(
        conv_.get(), type == ir::ElementType::kFloat32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
  }

  void issue(const IssueContext& c) const override {
    size_t bytes = 0;
    IOS_CUDNN_CALL(cudnnGetConvolutionBackwardDataWorkspaceSize(c.cudnn, w_.get(), x_.get(), conv_.get(), y_.get(),
                                                                CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, &bytes));
    IOS_ASSERT(bytes <= c.workspace_bytes, "ConvTranspose: backward-data algorithm 0 needs {} bytes of workspace",
               bytes);
    const float one = 1.0f, zero = 0.0f;
    IOS_CUDNN_CALL(cudnnConvolutionBackwardData(c.cudnn, &one, w_.get(), w_ptr_, x_.get(), x_ptr_, conv_.get(),
                                                CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, c.workspace, c.workspace_bytes,
                                                &zero, y_.get(), y_ptr_));
    if (b_ptr_ != nullptr) IOS_CUDNN_CALL(cudnnAddTensor(c.cudnn, &one, b_.get(), b_ptr_, &one, y_.get(), y_ptr_));
  }
  std::string describe() const override { return "cuDNN backward-data convolution (transposed)"; }

 private:
  TensorDesc x_, y_, b_;
  FilterDesc w_;
  ConvDesc conv_;
  const void* x_ptr_;
  const void* w_ptr_;
  const void* b_ptr_;
  void* y_ptr_;
};

class ConvTransposeOp final : public Operation {
 public:
  int x = -1, y = -1;
  int weight = -1, bias = -1;  // constants; bias -1: none
  ir::ConvTransposeAttrs attrs;

  void uses(Uses& u) const override {
    u.read(x);
    u.write(y);
  }

  std::string describe(const Program& p) const override {
    return "conv-transpose " + p.value_name(x) + " -> " + p.value_name(y);
  }

  std::unique_ptr<GpuOp> launch(const Binding& b) const override {
    return std::make_unique<ConvTransposeGpuOp>(attrs, b.value(x), b.value(y), b.in(x), b.constant(weight),
                                                bias >= 0 ? b.constant(bias) : nullptr, b.out(y));
  }
};

}  // namespace

void lower_conv_transpose(Lowerer& lw, Launch& launch, NodeId n, int y) {
  const ir::Graph& g = lw.graph();
  const ir::Node& node = g.node(n);
  const auto& a = node.attr<ir::ConvTransposeAttrs>();
  need_2d_window(node, a.spatial_rank());
  for (size_t k = 0; k < 2; ++k) {
    const int64_t skew = a.pads[k] - a.pads[k + 2] + a.output_padding[k];
    if (skew < 0 || skew >= a.stride[k]) {
      user_error("node '{}' (ConvTranspose): pads {}/{} with output_padding {} along axis {} have no cuDNN "
                 "backward-data form (its pads are symmetric); the CUDA backend needs the end pad at most the start "
                 "pad plus output_padding, and less than a stride smaller",
                 node.name, a.pads[k], a.pads[k + 2], a.output_padding[k], 2 + k);
    }
  }
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    if (!g.tensor(node.inputs[i]).is_constant()) {
      user_error("node '{}' (ConvTranspose): input {} is computed at run time; the CUDA backend needs constant "
                 "weights and bias", node.name, i);
    }
  }
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    if (lw.type_of(node.inputs[i]) != lw.type_of(node.inputs[0])) {
      user_error("node '{}' (ConvTranspose): input {} is {} but the input is {}; the CUDA backend needs one element "
                 "type per convolution",
                 node.name, i, ir::type_name(lw.type_of(node.inputs[i])), ir::type_name(lw.type_of(node.inputs[0])));
    }
  }
  ConvTransposeOp op;
  op.x = lw.value_for(node.inputs[0]);
  op.y = y;
  op.weight = lw.constant(node.inputs[1]);
  if (node.inputs.size() > 2) op.bias = lw.constant(node.inputs[2]);
  op.attrs = a;
  emit(launch, std::move(op));
}

}  // namespace ios::cuda
