// Element-wise operators (Relu, Clip, Sigmoid, ..., Add, Sub, Mul, Div, Pow,
// BatchNormalization as scale and shift): the backend's own chain kernel,
// the math of ir/elementwise.h. The nodes of a unit's epilogue become steps
// of one operation that runs in place on the value the chain's first node
// writes (at most kMaxEwStepsPerOp steps per operation); every operator's
// lowering ends with the chain after it.
//
// Types: the kernel reads the chain's input in its type, each operand in its
// own, computes in float and stores the result in y's type. x and y have the
// same type except in a type-changing Cast, which is its own unit (never an
// epilogue, never in a chain: ir::is_epilogue_candidate) reading one type and
// writing another; the lowering passes the types through unchanged.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "cuda/launch.h"
#include "cuda/lowering.h"
#include "ir/op_info.h"

namespace ios::cuda {

using ir::NodeId;
using ir::OpKind;
using ir::TensorId;

static_assert(kernels::kMaxEwSteps == kMaxEwStepsPerOp,
              "the lowering splits element-wise chains at the kernel's limit");

namespace {

class ElementwiseOp final : public GpuOp {
 public:
  explicit ElementwiseOp(const kernels::EwParams& p, std::string what)
      : p_(p), what_(std::move(what)) {}
  void issue(const IssueContext& c) const override {
    IOS_CUDA_CALL(kernels::elementwise(p_, c.stream));
  }
  std::string describe() const override { return what_; }

 private:
  kernels::EwParams p_;
  std::string what_;
};

}  // namespace

kernels::EwOperand make_operand(const void* ptr, const ir::Shape& shape, int64_t batch_stride,
                                const ir::Shape& out, ir::ElementType type) {
  kernels::EwOperand op;
  op.ptr = ptr;
  op.type = type;
  op.batch_stride = batch_stride;
  if (shape == out) {
    op.mode = kernels::kFull;
    return op;
  }
  if (ir::num_elements(shape) == 1) {
    op.mode = kernels::kScalar;
    return op;
  }
  const size_t rank = out.size();
  IOS_ASSERT(shape.size() <= rank, "operand of rank {} broadcast to rank {}", shape.size(), rank);
  const size_t lead = rank - shape.size();
  ir::Shape padded(lead, 1);
  padded.insert(padded.end(), shape.begin(), shape.end());
  bool rest_one = true;
  for (size_t d = 2; d < rank; ++d) rest_one &= padded[d] == 1;
  if (rank >= 2 && rest_one && padded[1] == out[1]) {
    if (padded[0] == 1) {
      op.mode = kernels::kChannel;
      return op;
    }
    if (padded[0] == out[0] && lead == 0) {
      op.mode = kernels::kBatchChannel;
      return op;
    }
  }
  op.mode = kernels::kGeneric;
  const std::vector<int64_t> real = strides_of(shape, batch_stride);
  for (size_t d = 0; d < rank; ++d) {
    if (d < lead) {
      op.strides[d] = 0;
    } else {
      const size_t rd = d - lead;
      op.strides[d] = (shape[rd] == 1 && out[d] != 1) ? 0 : real[rd];
    }
  }
  return op;
}

kernels::EwParams ew_frame(const ir::Shape& out, void* y, int64_t y_batch_stride, ir::ElementType y_type) {
  kernels::EwParams p;
  ir::Shape shape = out.empty() ? ir::Shape{1} : out;
  p.rank = static_cast<int>(shape.size());
  fill_dims(p.dims, shape, "an element-wise output");
  p.total = ir::num_elements(shape);
  p.item = item_of(shape);
  p.channels = shape.size() >= 2 ? std::max<int64_t>(shape[1], 1) : 1;
  p.hw = p.item / p.channels;
  p.y = y;
  p.y_type = y_type;
  p.y_batch_stride = y_batch_stride;
  return p;
}

void add_step(kernels::EwParams& p, ir::OpKind kind, float p0, float p1,
              const kernels::EwOperand* operand, bool operand_first) {
  IOS_ASSERT(p.num_steps < kernels::kMaxEwSteps, "element-wise chain longer than {}",
             kernels::kMaxEwSteps);
  kernels::EwStepParams& s = p.steps[p.num_steps++];
  s.kind = kind;
  s.p0 = p0;
  s.p1 = p1;
  s.operand_first = operand_first;
  if (operand != nullptr) {
    s.operand = p.num_operands;
    p.operands[p.num_operands++] = *operand;
    p.generic |= operand->mode == kernels::kGeneric;
  }
}

void EwOp::uses(Uses& u) const {
  u.read(x);
  for (const EwStep& s : steps) u.read(s.operand);
  u.write(y);
}

std::string EwOp::describe(const Program& p) const {
  std::string text = "elementwise[" + std::to_string(steps.size()) + "] " + p.ref_name(x) + " -> " + p.value_name(y);
  const ir::ElementType to = p.values.at(static_cast<size_t>(y)).type;
  const ir::ElementType from = x.is_value()      ? p.values.at(static_cast<size_t>(x.index)).type
                               : x.is_constant() ? p.constants.at(static_cast<size_t>(x.index)).type
                                                 : to;
  if (from != to) text += fmt::format(" ({} -> {})", ir::type_name(from), ir::type_name(to));
  return text;
}

std::unique_ptr<GpuOp> EwOp::launch(const Binding& b) const {
  const Value& yv = b.value(y);
  kernels::EwParams params = ew_frame(yv.shape, b.out(y), yv.batch_stride, yv.type);
  const auto [xs, xb] = b.layout(x);
  params.x = make_operand(b.in(x), xs, xb, yv.shape.empty() ? ir::Shape{1} : yv.shape, b.type(x));
  params.generic |= params.x.mode == kernels::kGeneric;
  for (const EwStep& s : steps) {
    if (s.operand) {
      const auto [os, ob] = b.layout(s.operand);
      const kernels::EwOperand o =
          make_operand(b.in(s.operand), os, ob, yv.shape.empty() ? ir::Shape{1} : yv.shape, b.type(s.operand));
      add_step(params, s.kind, s.p0, s.p1, &o, s.operand_first);
    } else {
      add_step(params, s.kind, s.p0, s.p1, nullptr);
    }
  }
  const std::string types =
      params.x.type == yv.type ? std::string()
                               : fmt::format(" ({} -> {})", ir::type_name(params.x.type), ir::type_name(yv.type));
  return std::make_unique<ElementwiseOp>(
      params, fmt::format("elementwise x{} on {}{}{}", steps.size(), yv.name,
                          params.generic ? " (broadcast)" : "", types));
}

// The steps of element-wise node `m` applied to the chain value `cur`.
void Lowerer::append_steps(NodeId m, TensorId cur, std::vector<EwStep>& steps) {
  const ir::Node& node = g_.node(m);
  EwStep step;
  if (ir::op_info(node.op).traits.elementwise == ir::Elementwise::kBinary) {
    // The chain value is one operand, the step's operand the other; for
    // Sub, Div and Pow the order is the node's (x - c vs c - x).
    step.kind = node.op;
    const bool chain_first = node.inputs[0] == cur;
    step.operand = ref_for(chain_first ? node.inputs[1] : node.inputs[0]);
    step.operand_first = !chain_first;
    steps.push_back(step);
    return;
  }
  switch (node.op) {
    case OpKind::kBatchNorm: {
      // y = x * s + (bias - mean * s), s = scale / sqrt(var + eps), per channel.
      IOS_ASSERT(node.inputs.size() == 5, "BatchNormalization '{}' needs 5 inputs", node.name);
      for (size_t i = 1; i < 5; ++i) {
        if (!g_.tensor(node.inputs[i]).is_constant()) {
          user_error(
              "BatchNormalization '{}': input {} ('{}') must be a constant for the CUDA backend",
              node.name, i, g_.tensor(node.inputs[i]).name);
        }
      }
      const auto& scale = *g_.tensor(node.inputs[1]).data;
      const auto& bias = *g_.tensor(node.inputs[2]).data;
      const auto& mean = *g_.tensor(node.inputs[3]).data;
      const auto& var = *g_.tensor(node.inputs[4]).data;
      const float eps = node.attr<ir::BatchNormAttrs>().epsilon;
      std::vector<float> s(scale.size()), b(scale.size());
      for (size_t c = 0; c < scale.size(); ++c) {
        s[c] = scale[c] / std::sqrt(var[c] + eps);
        b[c] = bias[c] - mean[c] * s[c];
      }
      const ir::Shape shape =
          channel_shape(static_cast<int64_t>(s.size()), g_.tensor(cur).shape.size());
      const std::string name = g_.tensor(node.outputs[0]).name;
      steps.push_back(
          {OpKind::kMul, 0, 0, Ref::constant(new_constant(name + ":bn_scale", shape, s, ir::ElementType::kFloat32))});
      steps.push_back(
          {OpKind::kAdd, 0, 0, Ref::constant(new_constant(name + ":bn_shift", shape, b, ir::ElementType::kFloat32))});
      return;
    }
    default: {
      // A unary operator with math in ir/elementwise.h, its scalar
      // attributes as the step's parameters.
      IOS_ASSERT(ir::ew::has_unary(node.op), "node '{}' ({}) is not element-wise", node.name,
                 ir::op_name(node.op));
      const ir::ew::Params params = ir::elementwise_params(node);
      step.kind = node.op;
      step.p0 = params.p0;
      step.p1 = params.p1;
      break;
    }
  }
  steps.push_back(step);
}

// Appends y = steps(x) as element-wise ops of at most kMaxEwStepsPerOp steps
// each: the first reads x, the rest continue in place on y. Every EwOp the
// lowering makes goes through here (BatchNorm adds two steps, a convolution's
// bias one, so node counts do not bound step counts).
void Lowerer::push_elementwise(Launch& launch, Ref x, int y, std::vector<EwStep> steps) {
  const auto limit = static_cast<size_t>(kMaxEwStepsPerOp);
  if (steps.size() <= limit) {
    emit(launch, EwOp(x, y, std::move(steps)));
    return;
  }
  for (size_t from = 0; from < steps.size(); from += limit) {
    const size_t to = std::min(steps.size(), from + limit);
    emit(launch, EwOp(from == 0 ? x : Ref::value(y), y,
                      std::vector<EwStep>(steps.begin() + static_cast<std::ptrdiff_t>(from),
                                          steps.begin() + static_cast<std::ptrdiff_t>(to))));
  }
}

// The chain value entering chain[i]: the output of the node before it.
TensorId Lowerer::chain_input(NodeId anchor, const std::vector<NodeId>& chain, size_t i) const {
  return i == 0 ? g_.node(anchor).outputs[0] : g_.node(chain[i - 1]).outputs[0];
}

// The value of the chain's last output, which the storage plan made the
// anchor's output and the chain's intermediates too: the anchor writes
// there, the chain runs in place.
int Lowerer::chain_target(NodeId anchor, const std::vector<NodeId>& chain) {
  const TensorId last =
      chain.empty() ? g_.node(anchor).outputs[0] : g_.node(chain.back()).outputs[0];
  const int y = value_for(last);
  if (!chain.empty()) {
    value_of_[static_cast<size_t>(g_.node(anchor).outputs[0])] = y;
    for (size_t i = 0; i + 1 < chain.size(); ++i)
      value_of_[static_cast<size_t>(g_.node(chain[i]).outputs[0])] = y;
  }
  return y;
}

void Lowerer::in_place_steps(Launch& launch, int y, NodeId anchor, const std::vector<NodeId>& chain,
                             size_t from, std::vector<EwStep> steps) {
  for (size_t i = from; i < chain.size(); ++i)
    append_steps(chain[i], chain_input(anchor, chain, i), steps);
  if (!steps.empty()) push_elementwise(launch, Ref::value(y), y, std::move(steps));
}

// An element-wise node that no other node's chain took: y = steps(x) with
// its own chain after it.
void lower_elementwise(Lowerer& lw, Launch& launch, NodeId n, const std::vector<NodeId>& chain) {
  const ir::Graph& g = lw.graph();
  const ir::Node& node = g.node(n);
  const ir::Shape& out_shape = g.tensor(node.outputs[0]).shape;
  std::vector<EwStep> steps;
  Ref x;
  if (ir::op_info(node.op).traits.elementwise == ir::Elementwise::kBinary) {
    // x: an activation operand of the output's shape when there is one; the
    // other is the step's operand, first when it is the node's input 0.
    TensorId first = node.inputs[0], second = node.inputs[1];
    auto full = [&](TensorId t) {
      return !g.tensor(t).is_constant() && g.tensor(t).shape == out_shape;
    };
    if (!full(first) && full(second)) std::swap(first, second);
    if (g.tensor(first).is_constant() && !g.tensor(second).is_constant()) std::swap(first, second);
    x = lw.ref_for(first);
    EwStep step{node.op, 0, 0, lw.ref_for(second)};
    step.operand_first = first != node.inputs[0];
    steps.push_back(step);
  } else {
    x = lw.ref_for(node.inputs[0]);
    lw.append_steps(n, node.inputs[0], steps);
  }
  const int y = lw.chain_target(n, chain);
  for (size_t i = 0; i < chain.size(); ++i)
    lw.append_steps(chain[i], lw.chain_input(n, chain, i), steps);
  lw.push_elementwise(launch, x, y, std::move(steps));
}

}  // namespace ios::cuda
