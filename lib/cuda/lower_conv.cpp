// Convolutions (lowering.h): cuDNN with its fused bias + ReLU (and residual
// add) epilogue where the chain allows it, otherwise the bias and the chain
// as an element-wise operation in place; merged convolutions (IOS operator
// merge) as one convolution over the assembled weights (merged matrix
// products: lower_compute.cpp).
#include <algorithm>

#include "core/error.h"
#include "cuda/lowering.h"
#include "sched/merge.h"

namespace ios::cuda {

using ir::NodeId;
using ir::OpKind;
using ir::TensorId;

// Pads made explicit when they are asymmetric (cuDNN pads symmetrically).
int Lowerer::explicit_pad(Launch& launch, int x, std::array<int64_t, 4>& pads,
                          const std::string& name) {
  if (pads[0] == pads[2] && pads[1] == pads[3]) return x;
  const ir::Shape& s = val(x).shape;
  const int t = p_.add_temp(name + ":padded",
                            {s[0], s[1], s[2] + pads[0] + pads[2], s[3] + pads[1] + pads[3]});
  PadOp op;
  op.x = x;
  op.y = t;
  op.begin = {0, 0, pads[0], pads[1]};
  emit(launch, std::move(op));
  pads = {0, 0, 0, 0};
  return t;
}

void Lowerer::lower_conv(Launch& launch, NodeId n, const std::vector<NodeId>& chain) {
  const ir::Node& node = g_.node(n);
  const std::string& label = g_.tensor(node.outputs[0]).name;
  if (node.inputs.size() < 2 || !g_.tensor(node.inputs[1]).is_constant()) {
    user_error("Conv '{}' (output '{}'): the CUDA backend needs constant weights", node.name,
               label);
  }
  const TensorId xt = node.inputs[0];
  if (g_.tensor(xt).shape.size() != 4) {
    user_error("Conv '{}' (output '{}'): only 2-D convolutions (4-D tensors) are supported",
               node.name, label);
  }
  const auto& a = node.attr<ir::ConvAttrs>();
  const bool has_bias = node.inputs.size() > 2 && node.inputs[2] != ir::kNone;
  if (has_bias && !g_.tensor(node.inputs[2]).is_constant()) {
    user_error("Conv '{}' (output '{}'): the CUDA backend needs a constant bias", node.name, label);
  }
  const int y = chain_target(n, chain);
  std::array<int64_t, 4> pads = a.pads;
  ConvOp op;
  op.x = explicit_pad(launch, value_for(xt), pads, label);
  op.y = y;
  op.weight = constant(node.inputs[1]);
  op.kernel = a.kernel;
  op.stride = a.stride;
  op.dilation = a.dilation;
  op.pad = {pads[0], pads[1]};
  op.group = a.group;
  op.label = label;
  const int64_t out_channels = g_.tensor(node.inputs[1]).shape[0];

  // cuDNN fuses bias + ReLU, and bias + residual add + ReLU.
  size_t consumed = 0;
  if (!chain.empty() && g_.node(chain[0]).op == OpKind::kRelu) {
    consumed = 1;
  } else if (chain.size() >= 2 && g_.node(chain[0]).op == OpKind::kAdd &&
             g_.node(chain[1]).op == OpKind::kRelu) {
    const ir::Node& add = g_.node(chain[0]);
    const TensorId cur = node.outputs[0];
    const TensorId other = add.inputs[0] == cur ? add.inputs[1] : add.inputs[0];
    if (!g_.tensor(other).is_constant() && g_.tensor(other).shape == g_.tensor(cur).shape) {
      op.z = value_for(other);
      consumed = 2;
    }
  }
  if (consumed > 0) {
    op.fused = true;
    op.relu = true;
    op.bias = has_bias ? constant(node.inputs[2], {out_channels})
                       : new_constant(label + ":zero_bias", {out_channels},
                                      std::vector<float>(static_cast<size_t>(out_channels), 0.0f));
    emit(launch, op);
    in_place_steps(launch, y, n, chain, consumed);
    return;
  }
  emit(launch, op);
  std::vector<EwStep> steps;
  if (has_bias) {
    steps.push_back({ir::OpKind::kAdd, 0, 0,
                     Ref::constant(constant(node.inputs[2], channel_shape(out_channels, 4)))});
  }
  in_place_steps(launch, y, n, chain, 0, std::move(steps));
}

// The storage plan checked the merge and placed the members' outputs (and
// their convolutions' outputs) as channel slices of the merged output.
void Lowerer::lower_merged(Launch& launch, int kernel) {
  const sched::MergeSpec& spec = storage_.merge_spec(kernel);
  if (spec.kind == sched::MergeKind::kMatMul) {
    lower_merged_product(launch, kernel);
    return;
  }
  const exec::Region& whole_region = storage_.merged_region(kernel);
  const int merged = add_value(
      storage_.storages().at(static_cast<size_t>(whole_region.storage)).name, whole_region.shape,
      whole_region.storage, whole_region.offset, whole_region.batch_stride);
  for (const auto& m : spec.members) value_for(member_output(m.unit));
  const sched::MergedWeights weights = sched::assemble_merged_weights(ug_, spec);
  std::array<int64_t, 4> pads = spec.conv.pads;
  ConvOp op;
  op.label = launch.name;
  op.x = explicit_pad(launch, value_for(spec.input), pads, "merged");
  op.y = merged;
  op.weight =
      new_constant(launch.name + ":weight",
                   {spec.out_channels, spec.in_channels, spec.conv.kernel[0], spec.conv.kernel[1]},
                   weights.weight);
  op.kernel = spec.conv.kernel;
  op.stride = spec.conv.stride;
  op.dilation = spec.conv.dilation;
  op.pad = {pads[0], pads[1]};
  op.group = 1;

  // Each member's epilogue: the nodes after its convolution.
  std::vector<std::vector<NodeId>> chains;
  for (const auto& m : spec.members) {
    const sched::Unit& unit = ug_.unit(m.unit);
    IOS_ASSERT(unit.nodes.front() == unit.anchor, "merged unit '{}' has a prologue", unit.id);
    chains.emplace_back(unit.nodes.begin() + 1, unit.nodes.end());
  }
  auto only_relu = [&](const std::vector<NodeId>& c) {
    return c.size() == 1 && g_.node(c[0]).op == OpKind::kRelu;
  };
  if (std::all_of(chains.begin(), chains.end(), only_relu)) {
    op.fused = true;
    op.relu = true;
    op.bias = new_constant(launch.name + ":bias", {spec.out_channels}, weights.bias);
    emit(launch, op);
    return;
  }
  emit(launch, op);
  std::vector<EwStep> whole;
  whole.push_back({ir::OpKind::kAdd, 0, 0,
                   Ref::constant(new_constant(launch.name + ":bias",
                                              channel_shape(spec.out_channels, 4), weights.bias))});
  // One epilogue for the whole buffer when the members' are identical and
  // need no operands; otherwise each member's on its slice.
  std::vector<std::vector<EwStep>> member_steps;
  for (size_t i = 0; i < chains.size(); ++i) {
    const sched::Unit& unit = ug_.unit(spec.members[i].unit);
    std::vector<EwStep> steps;
    for (size_t j = 0; j < chains[i].size(); ++j) {
      const TensorId cur =
          j == 0 ? g_.node(unit.anchor).outputs[0] : g_.node(chains[i][j - 1]).outputs[0];
      append_steps(chains[i][j], cur, steps);
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
    push_elementwise(launch, Ref::value(merged), merged, std::move(whole));
    return;
  }
  push_elementwise(launch, Ref::value(merged), merged, std::move(whole));
  for (size_t i = 0; i < spec.members.size(); ++i) {
    if (member_steps[i].empty()) continue;
    const int v = value_of_.at(static_cast<size_t>(member_output(spec.members[i].unit)));
    push_elementwise(launch, Ref::value(v), v, std::move(member_steps[i]));
  }
}

}  // namespace ios::cuda
