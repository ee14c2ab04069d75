// Convolutions: cuDNN (algorithms: conv.h) with its fused bias + ReLU (and
// residual add) epilogue where the chain allows it, otherwise the bias and
// the chain as an element-wise operation in place; asymmetric pads as an
// explicit pad in front (op_pad.cpp); merged convolutions (IOS operator
// merge) as one convolution over the assembled weights.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/error.h"
#include "core/log.h"
#include "cuda/context.h"
#include "cuda/conv.h"
#include "cuda/cudnn_graph.h"
#include "cuda/launch.h"
#include "cuda/lowering.h"
#include "sched/merge.h"

namespace ios::cuda {

using ir::NodeId;
using ir::OpKind;
using ir::TensorId;

namespace {

class ConvolutionOp final : public GpuOp {
 public:
  ConvolutionOp(const ConvShape& requested, const ConvChoice& choice, const void* x,
                const void* w, const void* bias, const void* z, void* y, void* x_stage,
                void* y_stage, std::string label)
      : choice_(choice), label_(std::move(label)) {
    shape_ = requested;
    const int64_t x_dense = requested.x_item();
    const int64_t y_dense = requested.y_item();
    if (choice.x_dense && requested.x_batch_stride != x_dense) {
      IOS_ASSERT(x_stage != nullptr, "convolution '{}' needs a staging buffer for x", label_);
      stage_x_ = make_copy(x, x_stage, std::vector<int64_t>{requested.n, x_dense},
                           std::vector<int64_t>{requested.x_batch_stride, 1},
                           std::vector<int64_t>{x_dense, 1}, requested.type);
      x = x_stage;
      shape_.x_batch_stride = x_dense;
    }
    void* out = y;
    if (choice.y_dense && requested.y_batch_stride != y_dense) {
      IOS_ASSERT(y_stage != nullptr, "convolution '{}' needs a staging buffer for y", label_);
      stage_y_ = make_copy(y_stage, y, std::vector<int64_t>{requested.n, y_dense},
                           std::vector<int64_t>{y_dense, 1},
                           std::vector<int64_t>{requested.y_batch_stride, 1}, requested.type);
      out = y_stage;
      shape_.y_batch_stride = y_dense;
    }
    d_ = make_conv_descriptors(shape_, choice.math);
    x_ = x, w_ = w, bias_ = bias, z_ = z, y_ = out;
    if (requested.fused && !choice.fused) {
      // The fused call was refused or slower: bias (+ z) + ReLU by our own kernel.
      epilogue_ = conv_epilogue(shape_, out, shape_.y_batch_stride, bias, z);
      own_epilogue_ = true;
    }
  }

  void issue(const IssueContext& c) const override {
    if (stage_x_) stage_x_->issue(c);
    const float one = 1.0f, zero = 0.0f;
    if (choice_.fused) {
      const float alpha2 = shape_.has_z ? 1.0f : 0.0f;
      IOS_CUDNN_CALL(cudnnConvolutionBiasActivationForward(
          c.cudnn, &one, d_.x.get(), x_, d_.w.get(), w_, d_.conv.get(), choice_.algo, c.workspace,
          choice_.workspace, &alpha2, shape_.has_z ? d_.z.get() : d_.y.get(),
          shape_.has_z ? z_ : y_, d_.bias.get(), bias_, d_.relu.get(),
          d_.y.get(), y_));
    } else {
      IOS_CUDNN_CALL(cudnnConvolutionForward(c.cudnn, &one, d_.x.get(), x_, d_.w.get(), w_,
                                             d_.conv.get(), choice_.algo, c.workspace,
                                             choice_.workspace, &zero, d_.y.get(), y_));
      if (own_epilogue_) IOS_CUDA_CALL(kernels::elementwise(epilogue_, c.stream));
    }
    if (stage_y_) stage_y_->issue(c);
  }

  std::string describe() const override {
    return fmt::format(
        "conv '{}' {} {} -> {}{} algo {} ({}{}, ws {} KiB, measured {:.3f} ms){}{}{}", label_,
        fmt::join(shape_.filter, "x"), shape_.c, shape_.k,
        shape_.type == ir::ElementType::kFloat32 ? ""
                                                 : std::string(" ") + ir::type_name(shape_.type),
        conv_algo_name(choice_.algo), choice_.math == CUDNN_FMA_MATH ? "fma" : "tensor-op allowed",
        choice_.fused ? ", fused bias+relu" : "", choice_.workspace / 1024, choice_.time_ms,
        own_epilogue_ ? " + own epilogue" : "", stage_x_ ? " + x staged" : "",
        stage_y_ ? " + y staged" : "");
  }

 private:
  ConvShape shape_;
  ConvChoice choice_;
  ConvDescriptors d_;
  const void *x_ = nullptr, *w_ = nullptr, *bias_ = nullptr, *z_ = nullptr;
  void* y_ = nullptr;
  std::unique_ptr<GpuOp> stage_x_, stage_y_;
  kernels::EwParams epilogue_;
  bool own_epilogue_ = false;
  std::string label_;
};

// A convolution with its fused epilogue as one graph-API execution plan. The
// variant pack holds the workspace pointer, so it is made at the first issue
// on a workspace and again only when the stream's workspace changes.
class GraphConvolutionOp final : public GpuOp {
 public:
  GraphConvolutionOp(std::shared_ptr<const ConvPlanChoice> plan, const void* x, const void* w, const void* bias,
                     const void* z, void* y, std::string label)
      : plan_(std::move(plan)), x_(x), w_(w), bias_(bias), z_(z), y_(y), label_(std::move(label)) {
    if (plan_->own_epilogue) {
      const ConvShape& s = plan_->spec.shape;
      epilogue_ = conv_epilogue(s, y, s.y_batch_stride, bias, z);
    }
  }

  void issue(const IssueContext& c) const override {
    if (!pack_ || pack_workspace_ != c.workspace) {
      pack_ = make_variant_pack(plan_->spec, x_, w_, y_, bias_, z_, c.workspace);
      pack_workspace_ = c.workspace;
    }
    IOS_CUDNN_CALL(cudnnBackendExecute(c.cudnn, plan_->plan.plan.get(), pack_.get()));
    if (plan_->own_epilogue) IOS_CUDA_CALL(kernels::elementwise(epilogue_, c.stream));
  }

  std::string describe() const override {
    const ConvShape& s = plan_->spec.shape;
    return fmt::format("conv '{}' {} {} -> {}{} graph plan {} (heuristics {}, ws {} KiB, median {:.4f} ms of {} "
                       "plans timed){}",
                       label_, fmt::join(s.filter, "x"), s.c, s.k,
                       s.type == ir::ElementType::kFloat32 ? "" : std::string(" ") + ir::type_name(s.type),
                       plan_->config.name(), heuristic_mode_name(plan_->config.source), plan_->plan.workspace / 1024,
                       plan_->time_ms,
                       std::count_if(plan_->candidates.begin(), plan_->candidates.end(),
                                     [](const auto& c) { return c.second >= 0.0f; }),
                       plan_->own_epilogue          ? std::string(" + own epilogue")
                       : plan_->spec.epilogue.any() ? fmt::format(", fused bias{}+relu",
                                                                  plan_->spec.epilogue.residual ? "+z" : "")
                                                    : std::string());
  }

 private:
  std::shared_ptr<const ConvPlanChoice> plan_;
  const void *x_, *w_, *bias_, *z_;
  void* y_;
  std::string label_;
  kernels::EwParams epilogue_;
  mutable BackendDescriptor pack_;
  mutable void* pack_workspace_ = nullptr;
};

}  // namespace

void ConvOp::uses(Uses& u) const {
  u.read(x);
  u.read(z);
  u.write(y);
  u.write(x_dense);  // staging copies: written, then read, inside the operation
  u.write(y_dense);
}

std::string ConvOp::describe(const Program& p) const {
  return fmt::format("conv {}/s{} g{} {} -> {}{}{}{}", fmt::join(kernel, "x"),
                     fmt::join(stride, ","), group, p.value_name(x), p.value_name(y),
                     fused ? " (cuDNN bias" : "", fused && z >= 0 ? " + " + p.value_name(z) : "",
                     fused ? " + relu)" : "");
}

// The algorithm, on the device; cuDNN may support a strided x or y with no
// algorithm, and then the convolution stages it in a dense scratch buffer.
void ConvOp::prepare(Preparation& prep) {
  const ConvShape shape = conv_shape(prep.program, *this);
  if (prep.ctx.conv_kernels() == exec::ConvKernels::kGraph) {
    plan = choose_conv_plan(prep.ctx, shape, label);
    if (plan != nullptr) {
      prep.workspace = std::max(prep.workspace, static_cast<size_t>(plan->plan.workspace));
      ++prep.stats.convolutions;
      ++prep.stats.graph_convolutions;
      prep.stats.plans_from_cache += plan->from_cache ? 1 : 0;
      prep.stats.fused_convolutions += plan->spec.epilogue.any() && !plan->own_epilogue ? 1 : 0;
      return;
    }
    // Named at debug level (ios-run -v): the layers the graph API leaves to the legacy call.
    logger("cuda")->debug("convolution '{}' ({}): no graph-API plan builds; the legacy cuDNN call runs it", label,
                          shape.key());
    ++prep.stats.legacy_fallbacks;
  }
  auto chosen = std::make_shared<const ConvChoice>(choose_conv(prep.ctx, shape, label));
  if (chosen->x_dense && shape.x_batch_stride != shape.x_item()) {
    const ir::Shape xs = prep.program.values.at(static_cast<size_t>(x)).shape;
    x_dense = prep.program.add_scratch(label + ":x_dense", xs, shape.type);
  }
  if (chosen->y_dense && shape.y_batch_stride != shape.y_item()) {
    const ir::Shape ys = prep.program.values.at(static_cast<size_t>(y)).shape;
    y_dense = prep.program.add_scratch(label + ":y_dense", ys, shape.type);
  }
  prep.workspace = std::max(prep.workspace, chosen->workspace);
  ++prep.stats.convolutions;
  prep.stats.fused_convolutions += chosen->fused ? 1 : 0;
  choice = std::move(chosen);
}

std::unique_ptr<GpuOp> ConvOp::launch(const Binding& b) const {
  if (plan != nullptr) {
    return std::make_unique<GraphConvolutionOp>(plan, b.in(x), b.constant(weight),
                                                bias >= 0 ? b.constant(bias) : nullptr, z >= 0 ? b.in(z) : nullptr,
                                                b.out(y), label);
  }
  IOS_ASSERT(choice != nullptr, "convolution '{}' has no algorithm (prepare() did not run)", label);
  return std::make_unique<ConvolutionOp>(
      conv_shape(b.program(), *this), *choice, b.in(x), b.constant(weight),
      bias >= 0 ? b.constant(bias) : nullptr, z >= 0 ? b.in(z) : nullptr, b.out(y),
      x_dense >= 0 ? b.out(x_dense) : nullptr, y_dense >= 0 ? b.out(y_dense) : nullptr, label);
}

void lower_conv(Lowerer& lw, Launch& launch, NodeId n, const std::vector<NodeId>& chain) {
  const ir::Graph& g = lw.graph();
  const ir::Node& node = g.node(n);
  const std::string& label = g.tensor(node.outputs[0]).name;
  if (node.inputs.size() < 2 || !g.tensor(node.inputs[1]).is_constant()) {
    user_error("Conv '{}' (output '{}'): the CUDA backend needs constant weights", node.name,
               label);
  }
  const TensorId xt = node.inputs[0];
  const auto& a = node.attr<ir::ConvAttrs>();
  const size_t rank = g.tensor(xt).shape.size();
  if (rank < 3 || rank > 5 || a.spatial_rank() != rank - 2) {
    user_error(
        "Conv '{}' (output '{}'): a {}-D window over a rank-{} input; the CUDA backend runs 1-D "
        "to 3-D convolutions (N,C,L / N,C,H,W / N,C,T,H,W)",
        node.name, label, a.spatial_rank(), rank);
  }
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    if (node.inputs[i] != ir::kNone && lw.type_of(node.inputs[i]) != lw.type_of(xt)) {
      user_error("Conv '{}' (output '{}'): input {} ('{}') is {} but the input is {}; the CUDA backend needs "
                 "one element type per convolution",
                 node.name, label, i, g.tensor(node.inputs[i]).name, ir::type_name(lw.type_of(node.inputs[i])),
                 ir::type_name(lw.type_of(xt)));
    }
  }
  const bool has_bias = node.inputs.size() > 2 && node.inputs[2] != ir::kNone;
  if (has_bias && !g.tensor(node.inputs[2]).is_constant()) {
    user_error("Conv '{}' (output '{}'): the CUDA backend needs a constant bias", node.name, label);
  }
  const int y = lw.chain_target(n, chain);
  ir::Dims pads = a.pads;
  ConvOp op;
  op.x = lw.explicit_pad(launch, lw.value_for(xt), pads, label);
  op.y = y;
  op.weight = lw.constant(node.inputs[1]);
  op.kernel = a.kernel;
  op.stride = a.stride;
  op.dilation = a.dilation;
  op.pad.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(a.spatial_rank()));
  op.group = a.group;
  op.label = label;
  const int64_t out_channels = g.tensor(node.inputs[1]).shape[0];

  // cuDNN fuses bias + ReLU, and bias + residual add + ReLU.
  size_t consumed = 0;
  if (!chain.empty() && g.node(chain[0]).op == OpKind::kRelu) {
    consumed = 1;
  } else if (chain.size() >= 2 && g.node(chain[0]).op == OpKind::kAdd &&
             g.node(chain[1]).op == OpKind::kRelu) {
    const ir::Node& add = g.node(chain[0]);
    const TensorId cur = node.outputs[0];
    const TensorId other = add.inputs[0] == cur ? add.inputs[1] : add.inputs[0];
    if (!g.tensor(other).is_constant() && g.tensor(other).shape == g.tensor(cur).shape &&
        g.tensor(other).type == g.tensor(cur).type) {
      op.z = lw.value_for(other);
      consumed = 2;
    }
  }
  if (consumed > 0) {
    op.fused = true;
    op.relu = true;
    op.bias = has_bias
                  ? lw.constant(node.inputs[2], {out_channels})
                  : lw.new_constant(label + ":zero_bias", {out_channels},
                                    std::vector<float>(static_cast<size_t>(out_channels), 0.0f), lw.type_of(xt));
    emit(launch, op);
    lw.in_place_steps(launch, y, n, chain, consumed);
    return;
  }
  emit(launch, op);
  std::vector<EwStep> steps;
  if (has_bias) {
    steps.push_back(
        {ir::OpKind::kAdd, 0, 0,
         Ref::constant(lw.constant(node.inputs[2], Lowerer::channel_shape(out_channels, rank)))});
  }
  lw.in_place_steps(launch, y, n, chain, 0, std::move(steps));
}

// The storage plan checked the merge and placed the members' outputs (and
// their convolutions' outputs) as channel slices of the merged output.
void lower_merged_conv(Lowerer& lw, Launch& launch, int kernel) {
  const ir::Graph& g = lw.graph();
  const sched::MergeSpec& spec = lw.storage().merge_spec(kernel);
  const int merged = lw.merged_value(kernel);
  for (const auto& m : spec.members) lw.value_for(lw.member_output(m.unit));
  const sched::MergedWeights weights = sched::assemble_merged_weights(lw.units(), spec);
  const size_t spatial = spec.conv.spatial_rank();
  ir::Dims pads = spec.conv.pads;
  ConvOp op;
  op.label = launch.name;
  op.x = lw.explicit_pad(launch, lw.value_for(spec.input), pads, "merged");
  op.y = merged;
  // [out, in, k...] (sched::assemble_merged_weights), one k per spatial axis.
  ir::Shape weight_shape{spec.out_channels, spec.in_channels};
  weight_shape.insert(weight_shape.end(), spec.conv.kernel.begin(), spec.conv.kernel.end());
  op.weight = lw.new_constant(launch.name + ":weight", std::move(weight_shape), weights.weight,
                              lw.type_of(spec.input));
  op.kernel = spec.conv.kernel;
  op.stride = spec.conv.stride;
  op.dilation = spec.conv.dilation;
  op.pad.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(spatial));
  op.group = 1;

  // Each member's epilogue: the nodes after its convolution.
  std::vector<std::vector<NodeId>> chains;
  for (const auto& m : spec.members) {
    const sched::Unit& unit = lw.units().unit(m.unit);
    IOS_ASSERT(unit.nodes.front() == unit.anchor, "merged unit '{}' has a prologue", unit.id);
    chains.emplace_back(unit.nodes.begin() + 1, unit.nodes.end());
  }
  auto only_relu = [&](const std::vector<NodeId>& c) {
    return c.size() == 1 && g.node(c[0]).op == OpKind::kRelu;
  };
  if (std::all_of(chains.begin(), chains.end(), only_relu)) {
    op.fused = true;
    op.relu = true;
    op.bias = lw.new_constant(launch.name + ":bias", {spec.out_channels}, weights.bias, lw.type_of(spec.input));
    emit(launch, op);
    return;
  }
  emit(launch, op);
  std::vector<EwStep> whole;
  whole.push_back(
      {ir::OpKind::kAdd, 0, 0,
       Ref::constant(lw.new_constant(launch.name + ":bias",
                                     Lowerer::channel_shape(spec.out_channels, spatial + 2),
                                     weights.bias, lw.type_of(spec.input)))});
  // One epilogue for the whole buffer when the members' are identical and
  // need no operands; otherwise each member's on its slice.
  std::vector<std::vector<EwStep>> member_steps;
  for (size_t i = 0; i < chains.size(); ++i) {
    const sched::Unit& unit = lw.units().unit(spec.members[i].unit);
    std::vector<EwStep> steps;
    for (size_t j = 0; j < chains[i].size(); ++j) {
      const TensorId cur =
          j == 0 ? g.node(unit.anchor).outputs[0] : g.node(chains[i][j - 1]).outputs[0];
      lw.append_steps(chains[i][j], cur, steps);
    }
    member_steps.push_back(std::move(steps));
  }
  auto same = [&](const std::vector<EwStep>& a, const std::vector<EwStep>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].kind != b[i].kind || a[i].p0 != b[i].p0 || a[i].p1 != b[i].p1 || a[i].operand ||
          b[i].operand)
        return false;
    }
    return true;
  };
  const bool shared = std::all_of(member_steps.begin(), member_steps.end(),
                                  [&](const auto& s) { return same(s, member_steps.front()); });
  if (shared) {
    whole.insert(whole.end(), member_steps.front().begin(), member_steps.front().end());
    lw.push_elementwise(launch, Ref::value(merged), merged, std::move(whole));
    return;
  }
  lw.push_elementwise(launch, Ref::value(merged), merged, std::move(whole));
  for (size_t i = 0; i < spec.members.size(); ++i) {
    if (member_steps[i].empty()) continue;
    const int v = lw.value_for(lw.member_output(spec.members[i].unit));
    lw.push_elementwise(launch, Ref::value(v), v, std::move(member_steps[i]));
  }
}

}  // namespace ios::cuda
