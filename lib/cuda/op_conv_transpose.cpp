// ConvTranspose on CUDA: cuDNN's backward-data convolution, which is the
// transposed convolution's definition (dx of the forward convolution whose
// filter is the weight [C_in, C_out / group, k...], with the input as dy),
// over 1 to 3 spatial axes (a 1-D one as the 2-D one with H = 1, as for
// Conv). The algorithm is searched and timed like a forward convolution's
// (choose_conv_transpose, conv.h). The bias and the node's element-wise
// chain are one element-wise operation after it, in place on y, as for an
// unfused Conv: cuDNN has no fused epilogue for backward-data convolutions.
//
// cuDNN pads both ends of an axis alike: pads whose end differs from the
// start lower when the forward convolution's size rule still gives back the
// input (0 <= begin - end + output_padding < stride), which holds for every
// export of nn.ConvTranspose1d/2d/3d; otherwise the node is refused by name.
#include <fmt/format.h>

#include "core/error.h"
#include "cuda/conv.h"
#include "cuda/launch.h"
#include "cuda/lowering.h"
#include "cuda/resources.h"

namespace ios::cuda {
namespace {

using ir::NodeId;

class ConvTransposeGpuOp final : public GpuOp {
 public:
  // x, y and the weights are all of x's type; a 16-bit one runs on tensor
  // cores (float compute), a float32 one in the math the search chose.
  ConvTransposeGpuOp(const ConvTransposeShape& shape, const ConvTransposeChoice& choice,
                     const void* xp, const void* wp, void* yp, std::string label)
      : d_(make_conv_transpose_descriptors(shape, choice.math)),
        choice_(choice),
        x_ptr_(xp),
        w_ptr_(wp),
        y_ptr_(yp),
        label_(std::move(label)) {}

  void issue(const IssueContext& c) const override {
    IOS_ASSERT(choice_.workspace <= c.workspace_bytes,
               "ConvTranspose '{}': {} bytes of workspace, {} reserved", label_, choice_.workspace,
               c.workspace_bytes);
    const float one = 1.0f, zero = 0.0f;
    IOS_CUDNN_CALL(cudnnConvolutionBackwardData(c.cudnn, &one, d_.w.get(), w_ptr_, d_.x.get(),
                                                x_ptr_, d_.conv.get(), choice_.algo, c.workspace,
                                                choice_.workspace, &zero, d_.y.get(), y_ptr_));
  }
  std::string describe() const override {
    return fmt::format(
        "conv-transpose '{}' cuDNN backward-data {} ({}, ws {} KiB, measured {:.3f} ms)", label_,
        conv_transpose_algo_name(choice_.algo),
        choice_.math == CUDNN_FMA_MATH ? "fma" : "tensor-op allowed", choice_.workspace / 1024,
        choice_.time_ms);
  }

 private:
  ConvTransposeDescriptors d_;
  ConvTransposeChoice choice_;
  const void* x_ptr_;
  const void* w_ptr_;
  void* y_ptr_;
  std::string label_;
};

class ConvTransposeOp final : public Operation {
 public:
  int x = -1, y = -1;
  int weight = -1;  // constant [C_in, C_out / group, k...]
  ir::ConvTransposeAttrs attrs;
  std::string label;
  std::shared_ptr<const ConvTransposeChoice> choice;  // prepare()'s, on the device

  void uses(Uses& u) const override {
    u.read(x);
    u.write(y);
  }

  std::string describe(const Program& p) const override {
    return "conv-transpose " + p.value_name(x) + " -> " + p.value_name(y);
  }

  // cuDNN's geometry: the IR's spatial axes, a 1-D one as 2-D with H = 1.
  ConvTransposeShape shape(const Program& p) const {
    const Value& xv = p.values.at(static_cast<size_t>(x));
    const Value& yv = p.values.at(static_cast<size_t>(y));
    const Constant& w = p.constants.at(static_cast<size_t>(weight));
    const ir::Shape xd = cudnn_dims(xv.shape), yd = cudnn_dims(yv.shape), wd = cudnn_dims(w.shape);
    const size_t spatial = attrs.spatial_rank();
    ConvTransposeShape s;
    s.n = xd[0], s.c_in = xd[1], s.c_out = yd[1], s.group = attrs.group;
    s.in.assign(xd.begin() + 2, xd.end());
    s.out.assign(yd.begin() + 2, yd.end());
    s.filter.assign(wd.begin() + 2, wd.end());
    // cuDNN's (symmetric) pad of each axis is the begin pad; the lowering
    // checked that the end pad's difference is absorbed by the output size.
    s.pad = cudnn_axes(
        ir::Dims(attrs.pads.begin(), attrs.pads.begin() + static_cast<std::ptrdiff_t>(spatial)), 0);
    s.stride = cudnn_axes(attrs.stride, 1);
    s.dilation = cudnn_axes(attrs.dilation, 1);
    s.x_batch_stride = xv.batch_stride;
    s.y_batch_stride = yv.batch_stride;
    s.x_align = xv.alignment();
    s.y_align = yv.alignment();
    s.type = xv.type;
    IOS_ASSERT(yv.type == s.type && w.type == s.type, "ConvTranspose '{}' mixes element types",
               label);
    return s;
  }

  void prepare(Preparation& prep) override {
    auto chosen = std::make_shared<const ConvTransposeChoice>(
        choose_conv_transpose(prep.ctx, shape(prep.program), label));
    prep.workspace = std::max(prep.workspace, chosen->workspace);
    choice = std::move(chosen);
  }

  std::unique_ptr<GpuOp> launch(const Binding& b) const override {
    IOS_ASSERT(choice != nullptr, "ConvTranspose '{}' has no algorithm (prepare() did not run)",
               label);
    return std::make_unique<ConvTransposeGpuOp>(shape(b.program()), *choice, b.in(x),
                                                b.constant(weight), b.out(y), label);
  }
};

}  // namespace

void lower_conv_transpose(Lowerer& lw, Launch& launch, NodeId n, const std::vector<NodeId>& chain) {
  const ir::Graph& g = lw.graph();
  const ir::Node& node = g.node(n);
  const auto& a = node.attr<ir::ConvTransposeAttrs>();
  const size_t spatial = a.spatial_rank();
  const size_t rank = g.tensor(node.inputs[0]).shape.size();
  if (spatial < 1 || spatial > 3 || rank != spatial + 2) {
    user_error(
        "node '{}' (ConvTranspose): a {}-D window over a rank-{} input; the CUDA backend runs 1-D "
        "to 3-D transposed convolutions",
        node.name, spatial, rank);
  }
  for (size_t k = 0; k < spatial; ++k) {
    const int64_t skew = a.pads[k] - a.pads[k + spatial] + a.output_padding[k];
    if (skew < 0 || skew >= a.stride[k]) {
      user_error(
          "node '{}' (ConvTranspose): pads {}/{} with output_padding {} along axis {} have no "
          "cuDNN backward-data form (its pads are symmetric); the CUDA backend needs the end pad "
          "at most the start pad plus output_padding, and less than a stride smaller",
          node.name, a.pads[k], a.pads[k + spatial], a.output_padding[k], 2 + k);
    }
  }
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    if (node.inputs[i] != ir::kNone && !g.tensor(node.inputs[i]).is_constant()) {
      user_error("node '{}' (ConvTranspose): input {} is computed at run time; the CUDA backend needs constant "
                 "weights and bias", node.name, i);
    }
  }
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    if (node.inputs[i] != ir::kNone && lw.type_of(node.inputs[i]) != lw.type_of(node.inputs[0])) {
      user_error("node '{}' (ConvTranspose): input {} is {} but the input is {}; the CUDA backend needs one element "
                 "type per convolution",
                 node.name, i, ir::type_name(lw.type_of(node.inputs[i])), ir::type_name(lw.type_of(node.inputs[0])));
    }
  }
  const int y = lw.chain_target(n, chain);
  ConvTransposeOp op;
  op.x = lw.value_for(node.inputs[0]);
  op.y = y;
  op.weight = lw.constant(node.inputs[1]);
  op.attrs = a;
  op.label = g.tensor(node.outputs[0]).name;
  emit(launch, std::move(op));
  // The bias is the first step of the chain's element-wise operation: bias
  // and activations in one pass over y.
  std::vector<EwStep> steps;
  if (node.inputs.size() > 2 && node.inputs[2] != ir::kNone) {
    const int64_t channels = g.tensor(node.outputs[0]).shape[1];
    steps.push_back(
        {ir::OpKind::kAdd, 0, 0,
         Ref::constant(lw.constant(node.inputs[2], Lowerer::channel_shape(channels, rank)))});
  }
  lw.in_place_steps(launch, y, n, chain, 0, std::move(steps));
}

}  // namespace ios::cuda
