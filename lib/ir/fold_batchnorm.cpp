// The import pass ir::fold_batchnorm (declared and described in ir/passes.h).
#include "ir/passes.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <optional>
#include <utility>

#include "core/error.h"
#include "ir/pass_util.h"

namespace ios::ir {

using namespace pass_util;

int fold_batchnorm(Graph& graph) {
  NameSet names(graph);
  std::vector<bool> dead(graph.num_nodes(), false);
  int folded = 0;
  for (size_t b = 0; b < graph.num_nodes(); ++b) {
    const Node& bn = graph.node(static_cast<NodeId>(b));
    if (bn.op != OpKind::kBatchNorm) continue;
    const TensorId x = bn.inputs.at(0);
    const NodeId c = graph.tensor(x).producer;
    if (c == kNone || dead[static_cast<size_t>(c)] || graph.node(c).op != OpKind::kConv) continue;
    if (!single_private_use(graph, x, static_cast<NodeId>(b))) continue;
    const Node& conv = graph.node(c);
    bool constant = is_const(graph, conv.inputs.at(1)) &&
                    (conv.inputs.size() < 3 || is_const(graph, conv.inputs[2]));
    for (size_t i = 1; i < 5; ++i) constant = constant && is_const(graph, bn.inputs.at(i));
    if (!constant) continue;

    const auto& w = *graph.tensor(conv.inputs[1]).data;
    const Shape w_shape = graph.tensor(conv.inputs[1]).shape;
    const auto out_channels = static_cast<size_t>(w_shape.at(0));
    if (out_channels == 0) continue;  // an empty convolution: nothing to fold (and no division by 0)
    const size_t per_channel = w.size() / out_channels;
    const auto& gamma = *graph.tensor(bn.inputs[1]).data;
    const auto& beta = *graph.tensor(bn.inputs[2]).data;
    const auto& mean = *graph.tensor(bn.inputs[3]).data;
    const auto& var = *graph.tensor(bn.inputs[4]).data;
    IOS_ASSERT(gamma.size() == out_channels && beta.size() == out_channels &&
                   mean.size() == out_channels && var.size() == out_channels,
               "BatchNorm '{}' parameters do not match conv '{}' channels", bn.name, conv.name);
    const double eps = bn.attr<BatchNormAttrs>().epsilon;

    auto new_w = std::make_shared<std::vector<float>>(w.size());
    auto new_b = std::make_shared<std::vector<float>>(out_channels);
    const std::vector<float>* old_b =
        conv.inputs.size() == 3 ? graph.tensor(conv.inputs[2]).data.get() : nullptr;
    for (size_t o = 0; o < out_channels; ++o) {
      const double s = gamma[o] / std::sqrt(static_cast<double>(var[o]) + eps);
      for (size_t i = 0; i < per_channel; ++i) {
        (*new_w)[o * per_channel + i] = static_cast<float>(w[o * per_channel + i] * s);
      }
      const double bias = old_b ? (*old_b)[o] : 0.0;
      (*new_b)[o] = static_cast<float>((bias - mean[o]) * s + beta[o]);
    }
    const std::string base = graph.tensor(conv.inputs[1]).name;
    Tensor wt{names.fresh(base + "_bn_folded"), w_shape, kNone, {}, new_w};
    Tensor bt{names.fresh(graph.tensor(bn.outputs[0]).name + "_bn_bias"),
              Shape{static_cast<int64_t>(out_channels)}, kNone, {}, new_b};
    const TensorId bn_out = bn.outputs.at(0);
    const TensorId w_id = graph.add_tensor(std::move(wt));  // invalidates tensor references
    const TensorId b_id = graph.add_tensor(std::move(bt));
    Node& conv_mut = graph.node(c);
    conv_mut.inputs = {conv_mut.inputs[0], w_id, b_id};
    conv_mut.outputs = {bn_out};
    dead[b] = true;
    ++folded;
  }
  if (folded) graph.compact(dead);
  return folded;
}

}  // namespace ios::ir
