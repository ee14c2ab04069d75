// The import pass ir::fold_pad (declared and described in ir/passes.h).
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

namespace {

// True when every value of `t` is >= 0 by construction of its producer.
bool known_non_negative(const Graph& graph, TensorId t) {
  const NodeId p = graph.tensor(t).producer;
  if (p == kNone) return false;
  const Node& n = graph.node(p);
  switch (n.op) {
    case OpKind::kRelu:
    case OpKind::kSigmoid:
    case OpKind::kHardSigmoid:
      return true;
    case OpKind::kClip:
      // With max < min the kernel outputs max, so both bounds must be >= 0.
      return n.attr<ClipAttrs>().min >= 0.0f && n.attr<ClipAttrs>().max >= 0.0f;
    default:
      return false;
  }
}

}  // namespace

int fold_pad(Graph& graph) {
  std::vector<bool> dead(graph.num_nodes(), false);
  // A removed all-zero Pad's output reads as its input (links are only
  // rebuilt by compact at the end).
  std::vector<TensorId> alias(graph.num_tensors());
  for (size_t t = 0; t < alias.size(); ++t) alias[t] = static_cast<TensorId>(t);
  int folded = 0;
  for (size_t p = 0; p < graph.num_nodes(); ++p) {
    const Node& pad = graph.node(static_cast<NodeId>(p));
    if (pad.op != OpKind::kPad) continue;
    const auto& a = pad.attr<PadAttrs>();
    const TensorId in = alias[static_cast<size_t>(pad.inputs.at(0))], out = pad.outputs.at(0);
    if (graph.is_graph_output(out)) continue;
    const bool all_zero = std::all_of(a.pads.begin(), a.pads.end(), [](int64_t v) { return v == 0; });
    if (all_zero) {
      for (NodeId c : graph.tensor(out).consumers) {
        for (TensorId& t : graph.node(c).inputs) {
          if (t == out) t = in;
        }
      }
      alias[static_cast<size_t>(out)] = in;
      dead[p] = true;
      ++folded;
      continue;
    }
    // A window's input: N, C and one to three spatial axes.
    const size_t rank = a.pads.size() / 2, spatial = rank - 2;
    if (a.mode != PadAttrs::Mode::kConstant || rank < 3 || rank > 5) continue;
    if (std::any_of(a.pads.begin(), a.pads.end(), [](int64_t v) { return v < 0; })) continue;
    if (a.pads[0] || a.pads[1] || a.pads[rank] || a.pads[rank + 1]) continue;  // N or C padded
    const auto& consumers = graph.tensor(out).consumers;
    if (consumers.size() != 1) continue;
    const NodeId c = consumers[0];
    if (dead[static_cast<size_t>(c)] || !single_private_use(graph, out, c)) continue;
    if (graph.node(c).inputs.at(0) != out) continue;
    // The spatial begins, then the spatial ends, as windows hold their pads.
    Dims extra(a.pads.begin() + 2, a.pads.begin() + static_cast<std::ptrdiff_t>(rank));
    extra.insert(extra.end(), a.pads.begin() + static_cast<std::ptrdiff_t>(rank) + 2, a.pads.end());
    Node& consumer = graph.node(c);
    Dims* target = nullptr;
    if (consumer.op == OpKind::kConv && a.value == 0.0f) {
      target = &consumer.attr<ConvAttrs>().pads;
    } else if (consumer.op == OpKind::kAveragePool && a.value == 0.0f) {
      auto& pool = consumer.attr<PoolAttrs>();
      const bool own_pads = std::any_of(pool.pads.begin(), pool.pads.end(), [](int64_t v) { return v != 0; });
      const bool dilated =
          std::any_of(pool.dilation.begin(), pool.dilation.end(), [](int64_t d) { return d != 1; });
      // As for MaxPool: a pad as large as the kernel is refused on import
      // (and by ONNX Runtime in a --write-onnx file), so none is made here.
      bool fits = true;
      for (size_t i = 0; i < 2 * spatial; ++i)
        fits = fits && pool.pads[i] + extra[i] < pool.kernel[i % spatial];
      if (!pool.ceil_mode && !dilated && fits && (pool.count_include_pad || !own_pads)) {
        pool.count_include_pad = true;
        target = &pool.pads;
      }
    } else if (consumer.op == OpKind::kMaxPool) {
      auto& pool = consumer.attr<PoolAttrs>();
      const bool neg_inf = a.value <= -FLT_MAX;
      const bool zero_ok = a.value == 0.0f && known_non_negative(graph, in);
      // ONNX's MaxPool needs each pad smaller than the kernel (undilated).
      bool fits =
          std::all_of(pool.dilation.begin(), pool.dilation.end(), [](int64_t d) { return d == 1; });
      for (size_t i = 0; i < 2 * spatial; ++i)
        fits = fits && pool.pads[i] + extra[i] < pool.kernel[i % spatial];
      if (!pool.ceil_mode && fits && (neg_inf || zero_ok)) target = &pool.pads;
    }
    if (!target || target->size() != extra.size()) continue;
    for (size_t i = 0; i < extra.size(); ++i) (*target)[i] += extra[i];
    consumer.inputs[0] = in;
    dead[p] = true;
    ++folded;
  }
  if (folded) graph.compact(dead);
  return folded;
}

}  // namespace ios::ir
