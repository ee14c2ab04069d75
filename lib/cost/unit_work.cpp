#include "cost/unit_work.h"

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>

#include "core/error.h"

namespace ios::cost {
namespace {

using ir::OpKind;

// How a node maps onto kernels.
enum class NodeClass {
  kFused,   // element-wise: joins the kernel of the compute node before it
  kView,    // no data movement: Flatten/Reshape alias their input, Concat is zero-copy
  kKernel,  // starts a kernel of its own
};

NodeClass classify(OpKind op) {
  if (is_elementwise(op)) return NodeClass::kFused;
  switch (op) {
    case OpKind::kFlatten:
    case OpKind::kReshape:
    case OpKind::kConcat:
      return NodeClass::kView;
    default:
      return NodeClass::kKernel;
  }
}

double elements(const ir::Graph& g, ir::TensorId t) {
  return static_cast<double>(ir::num_elements(g.tensor(t).shape));
}

const ir::Shape& shape_of(const ir::Graph& g, const ir::Node& n, size_t input) {
  IOS_ASSERT(input < n.inputs.size(), "node '{}' ({}) has no input {}", n.name, ir::op_name(n.op),
             input);
  return g.tensor(n.inputs[input]).shape;
}

// Reduction length per output element of a conv: Cin/group * kh * kw, read
// off the weight tensor [Cout, Cin/group, kh, kw].
double conv_reduction(const ir::Graph& g, const ir::Node& n) {
  const ir::Shape& w = shape_of(g, n, 1);
  IOS_ASSERT(w.size() == 4, "conv '{}' has a weight of rank {}", n.name, w.size());
  return static_cast<double>(w[1] * w[2] * w[3]);
}

double gemm_k(const ir::Graph& g, const ir::Node& n) {
  const ir::Shape& a = shape_of(g, n, 0);
  IOS_ASSERT(!a.empty(), "matmul '{}' has a scalar input", n.name);
  if (n.op == OpKind::kGemm) {
    IOS_ASSERT(a.size() == 2, "gemm '{}' has an input of rank {}", n.name, a.size());
    return static_cast<double>(n.attr<ir::GemmAttrs>().trans_a ? a[0] : a[1]);
  }
  return static_cast<double>(a.back());
}

// Reduction length per output element (1 for maps without reduction).
double node_reduction(const ir::Graph& g, const ir::Node& n) {
  const double out = elements(g, n.outputs.at(0));
  switch (n.op) {
    case OpKind::kConv:
      return conv_reduction(g, n);
    case OpKind::kGemm:
    case OpKind::kMatMul:
      return gemm_k(g, n);
    case OpKind::kMaxPool:
    case OpKind::kAveragePool: {
      const auto& a = n.attr<ir::PoolAttrs>();
      return static_cast<double>(a.kernel[0] * a.kernel[1]);
    }
    case OpKind::kGlobalAveragePool:
    case OpKind::kReduceMean:
      return out > 0 ? elements(g, n.inputs.at(0)) / out : 1.0;
    default:
      return 1.0;
  }
}

bool node_matmul_like(const ir::Node& n) {
  if (n.op == OpKind::kConv) return n.attr<ir::ConvAttrs>().group == 1;
  return n.op == OpKind::kGemm || n.op == OpKind::kMatMul;
}

}  // namespace

bool is_elementwise(OpKind op) {
  switch (op) {
    case OpKind::kRelu:
    case OpKind::kClip:
    case OpKind::kSigmoid:
    case OpKind::kHardSigmoid:
    case OpKind::kHardSwish:
    case OpKind::kAdd:
    case OpKind::kMul:
    case OpKind::kBatchNorm:
      return true;
    default:
      return false;
  }
}

double node_flops(const ir::Graph& g, ir::NodeId id) {
  const ir::Node& n = g.node(id);
  if (n.outputs.empty()) return 0.0;
  const double out = elements(g, n.outputs[0]);
  switch (n.op) {
    case OpKind::kConv: {
      const bool bias = n.inputs.size() > 2;
      return 2.0 * out * conv_reduction(g, n) + (bias ? out : 0.0);
    }
    case OpKind::kGemm: {
      const bool bias = n.inputs.size() > 2;
      return 2.0 * out * gemm_k(g, n) + (bias ? out : 0.0);
    }
    case OpKind::kMatMul:
      return 2.0 * out * gemm_k(g, n);
    // Element-wise: operations per output element.
    case OpKind::kRelu:
    case OpKind::kAdd:
    case OpKind::kMul:
      return out;
    case OpKind::kClip:
    case OpKind::kBatchNorm:
      return 2.0 * out;
    case OpKind::kHardSigmoid:
      return 3.0 * out;
    case OpKind::kSigmoid:
      return 4.0 * out;  // exp, add, divide, negate
    case OpKind::kHardSwish:
      return 5.0 * out;
    case OpKind::kSoftmax:
      return 5.0 * out;  // max, subtract, exp, sum, divide
    case OpKind::kMaxPool:
    case OpKind::kAveragePool:
      return out * node_reduction(g, n);
    case OpKind::kGlobalAveragePool:
    case OpKind::kReduceMean:
      return elements(g, n.inputs.at(0));
    default:
      return 0.0;  // data movement only
  }
}

double UnitWork::flops() const {
  double total = 0.0;
  for (const auto& k : kernels) total += k.flops;
  return total;
}

double UnitWork::bytes() const {
  double total = 0.0;
  for (const auto& k : kernels) total += k.bytes();
  return total;
}

double UnitWork::parallelism() const {
  double most = 0.0;
  for (const auto& k : kernels) most = std::max(most, k.outputs);
  return most;
}

UnitWork unit_work(const sched::UnitGraph& graph, sched::UnitId unit_id) {
  const ir::Graph* ir = graph.ir();
  IOS_ASSERT(ir != nullptr, "unit_work needs a unit graph formed from an IR graph (unit {})",
             unit_id);
  const ir::Graph& g = *ir;
  const sched::Unit& unit = graph.unit(unit_id);

  // Assign every node to a kernel (-1: no kernel). Element-wise nodes before
  // the first compute node are its prologue.
  constexpr int kNoKernel = -1;
  std::vector<int> kernel_of(unit.nodes.size(), kNoKernel);
  std::vector<ir::NodeId> main_node;  // per kernel
  std::vector<size_t> prologue;
  for (size_t i = 0; i < unit.nodes.size(); ++i) {
    const ir::Node& n = g.node(unit.nodes[i]);
    switch (classify(n.op)) {
      case NodeClass::kKernel:
        main_node.push_back(unit.nodes[i]);
        kernel_of[i] = static_cast<int>(main_node.size()) - 1;
        for (size_t p : prologue) kernel_of[p] = kernel_of[i];
        prologue.clear();
        break;
      case NodeClass::kFused:
        if (main_node.empty()) {
          prologue.push_back(i);
        } else {
          kernel_of[i] = static_cast<int>(main_node.size()) - 1;
        }
        break;
      case NodeClass::kView:
        break;
    }
  }
  if (!prologue.empty()) {  // a unit of element-wise nodes only: one kernel
    main_node.push_back(unit.nodes[prologue.back()]);
    for (size_t p : prologue) kernel_of[p] = static_cast<int>(main_node.size()) - 1;
  }

  // Which kernel (or kNoKernel) produced each tensor made inside the unit,
  // and which kernels read it: hashed, so that units of many fused nodes
  // (long element-wise chains) cost linear time.
  std::unordered_map<ir::TensorId, int> made;
  std::unordered_map<ir::TensorId, std::vector<int>> readers;
  auto made_by = [&](ir::TensorId t) -> std::optional<int> {
    auto it = made.find(t);
    if (it == made.end()) return std::nullopt;
    return it->second;
  };
  std::vector<std::vector<size_t>> nodes_of(main_node.size());
  for (size_t i = 0; i < unit.nodes.size(); ++i) {
    const ir::Node& n = g.node(unit.nodes[i]);
    for (ir::TensorId t : n.outputs) made.emplace(t, kernel_of[i]);
    for (ir::TensorId t : n.inputs) readers[t].push_back(kernel_of[i]);
    if (kernel_of[i] != kNoKernel) nodes_of[static_cast<size_t>(kernel_of[i])].push_back(i);
  }
  const std::set<ir::TensorId> unit_outputs(unit.outputs.begin(), unit.outputs.end());

  UnitWork work;
  work.kernels.resize(main_node.size());
  for (size_t k = 0; k < main_node.size(); ++k) {
    const ir::Node& n = g.node(main_node[k]);
    KernelWork& kw = work.kernels[k];
    kw.what = std::string(ir::op_name(n.op));
    kw.outputs = elements(g, n.outputs.at(0));
    kw.reduction = node_reduction(g, n);
    kw.matmul_like = node_matmul_like(n);
  }
  for (size_t i = 0; i < unit.nodes.size(); ++i) {
    if (kernel_of[i] == kNoKernel) continue;
    work.kernels[static_cast<size_t>(kernel_of[i])].flops += node_flops(g, unit.nodes[i]);
  }

  // Bytes: a kernel reads each tensor it uses that it does not make, and
  // writes each tensor it makes that leaves it (a unit output, a graph output,
  // or an input of another node of the unit outside this kernel).
  for (size_t k = 0; k < main_node.size(); ++k) {
    KernelWork& kw = work.kernels[k];
    std::set<ir::TensorId> read, written;
    for (size_t i : nodes_of[k]) {
      const ir::Node& n = g.node(unit.nodes[i]);
      for (ir::TensorId t : n.inputs) {
        const auto maker = made_by(t);
        if (!maker || *maker != static_cast<int>(k)) read.insert(t);
      }
      for (ir::TensorId t : n.outputs) {
        bool leaves = unit_outputs.count(t) > 0 || g.is_graph_output(t);
        if (!leaves) {
          auto it = readers.find(t);
          if (it != readers.end()) {
            leaves = std::any_of(it->second.begin(), it->second.end(),
                                 [&](int reader) { return reader != static_cast<int>(k); });
          }
        }
        if (leaves) written.insert(t);
      }
    }
    for (ir::TensorId t : read) kw.bytes_read += elements(g, t) * kBytesPerElement;
    for (ir::TensorId t : written) kw.bytes_written += elements(g, t) * kBytesPerElement;
  }
  return work;
}

UnitWork merged_conv_work(const sched::UnitGraph& graph, const sched::MergeSpec& spec) {
  const ir::Graph* ir = graph.ir();
  IOS_ASSERT(ir != nullptr, "merged_conv_work needs a unit graph formed from an IR graph");
  IOS_ASSERT(spec.members.size() >= 2, "a merge needs >= 2 members, got {}", spec.members.size());
  const ir::Graph& g = *ir;

  KernelWork merged;
  merged.what = "Conv (merged)";
  merged.matmul_like = true;
  const auto& kernel = spec.conv.kernel;
  merged.reduction = static_cast<double>(spec.in_channels * kernel[0] * kernel[1]);
  double spatial = 0.0;  // N * Hout * Wout, equal for every member
  for (const auto& member : spec.members) {
    const UnitWork w = unit_work(graph, member.unit);
    IOS_ASSERT(w.kernels.size() == 1, "merge member '{}' launches {} kernels, expected 1",
               graph.unit(member.unit).id, w.kernels.size());
    const KernelWork& k = w.kernels[0];
    const ir::Node& conv = g.node(graph.unit(member.unit).anchor);
    IOS_ASSERT(conv.op == ir::OpKind::kConv, "merge member '{}' is not a convolution",
               graph.unit(member.unit).id);
    const ir::Shape& out = g.tensor(conv.outputs.at(0)).shape;
    IOS_ASSERT(out.size() == 4 && out[1] > 0, "merge member '{}' has output {}",
               graph.unit(member.unit).id, ir::to_string(out));
    spatial = static_cast<double>(out[0] * out[2] * out[3]);
    // Keep the member's bias and fused epilogue; its multiply-adds are
    // replaced by the merged kernel's below.
    merged.flops += k.flops - 2.0 * k.outputs * conv_reduction(g, conv);
    merged.bytes_written += k.bytes_written;
    merged.outputs += k.outputs;
  }
  const double out_channels = static_cast<double>(spec.out_channels);
  merged.flops += 2.0 * spatial * out_channels * merged.reduction;
  const double weights = out_channels * merged.reduction + out_channels;  // weight + bias
  merged.bytes_read = (elements(g, spec.input) + weights) * kBytesPerElement;
  UnitWork work;
  work.kernels.push_back(std::move(merged));
  return work;
}

}  // namespace ios::cost
