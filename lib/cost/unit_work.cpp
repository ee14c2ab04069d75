#include "cost/unit_work.h"

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>

#include "core/error.h"
#include "ir/op_info.h"

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
  const ir::OpTraits& traits = ir::op_info(op).traits;
  if (traits.elementwise != ir::Elementwise::kNone) return NodeClass::kFused;
  if (traits.view || traits.zero_copy) return NodeClass::kView;
  return NodeClass::kKernel;
}

double elements(const ir::Graph& g, ir::TensorId t) {
  return static_cast<double>(ir::num_elements(g.tensor(t).shape));
}

double bytes_per_element(ir::ElementType type) { return static_cast<double>(ir::bytes_of(type)); }

// Bytes of a tensor in device memory, at its element type.
double tensor_bytes(const ir::Graph& g, ir::TensorId t) {
  return elements(g, t) * bytes_per_element(g.tensor(t).type);
}

bool node_matmul_like(const ir::Node& n) {
  if (n.op == OpKind::kConv) return n.attr<ir::ConvAttrs>().group == 1;
  return n.op == OpKind::kGemm || n.op == OpKind::kMatMul;
}

// The per-shape classes of a 2-D convolution kernel (KernelWork).
void classify_conv(const ir::ConvAttrs& conv, KernelWork& kw) {
  if (conv.kernel.size() != 2) return;
  const bool unit_steps = std::all_of(conv.stride.begin(), conv.stride.end(), [](int64_t v) { return v == 1; }) &&
                          std::all_of(conv.dilation.begin(), conv.dilation.end(), [](int64_t v) { return v == 1; });
  kw.winograd = conv.kernel[0] == 3 && conv.kernel[1] == 3 && unit_steps && conv.group == 1;
  kw.asymmetric = conv.kernel[0] != conv.kernel[1] && std::min(conv.kernel[0], conv.kernel[1]) == 1;
}

}  // namespace

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
    kw.reduction = ir::node_reduction(g, n);
    kw.matmul_like = node_matmul_like(n);
    kw.type = g.tensor(n.outputs.at(0)).type;
    if (n.op == OpKind::kConv) classify_conv(n.attr<ir::ConvAttrs>(), kw);
  }
  for (size_t i = 0; i < unit.nodes.size(); ++i) {
    if (kernel_of[i] == kNoKernel) continue;
    work.kernels[static_cast<size_t>(kernel_of[i])].flops += ir::node_flops(g, unit.nodes[i]);
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
    for (ir::TensorId t : read) kw.bytes_read += tensor_bytes(g, t);
    for (ir::TensorId t : written) kw.bytes_written += tensor_bytes(g, t);
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
  classify_conv(spec.conv, merged);  // the zero-padded kernel: 1x3 + 3x1 make a 3x3
  double spatial = 0.0;  // N * Hout * Wout, equal for every member
  // The merged weights and bias take the members' weight type, and the
  // kernel computes in the members' output type (a merge needs equal ones).
  const ir::Node& first = g.node(graph.unit(spec.members.front().unit).anchor);
  const double weight_bytes = bytes_per_element(g.tensor(first.inputs.at(1)).type);
  merged.type = g.tensor(first.outputs.at(0)).type;
  for (const auto& member : spec.members) {
    const UnitWork w = unit_work(graph, member.unit);
    IOS_ASSERT(w.kernels.size() == 1, "merge member '{}' launches {} kernels, expected 1",
               graph.unit(member.unit).id, w.kernels.size());
    const KernelWork& k = w.kernels[0];
    const ir::Node& conv = g.node(graph.unit(member.unit).anchor);
    IOS_ASSERT(conv.op == ir::OpKind::kConv, "merge member '{}' is not a convolution",
               graph.unit(member.unit).id);
    const ir::Shape& out = g.tensor(conv.outputs.at(0)).shape;
    IOS_ASSERT(out.size() >= 3 && out[1] > 0, "merge member '{}' has output {}",
               graph.unit(member.unit).id, ir::to_string(out));
    spatial =
        static_cast<double>(ir::num_elements(out) / out[1]);  // batch times the spatial volume
    // Keep the member's bias and fused epilogue; its multiply-adds are
    // replaced by the merged kernel's below.
    merged.flops += k.flops - 2.0 * k.outputs * ir::node_reduction(g, conv);
    merged.bytes_written += k.bytes_written;
    merged.outputs += k.outputs;
  }
  const double out_channels = static_cast<double>(spec.out_channels);
  merged.flops += 2.0 * spatial * out_channels * merged.reduction;
  const double weights = out_channels * merged.reduction + out_channels;  // weight + bias
  merged.bytes_read = tensor_bytes(g, spec.input) + weights * weight_bytes;
  UnitWork work;
  work.kernels.push_back(std::move(merged));
  return work;
}

UnitWork merged_matmul_work(const sched::UnitGraph& graph, const sched::MergeSpec& spec) {
  const ir::Graph* ir = graph.ir();
  IOS_ASSERT(ir != nullptr, "merged_matmul_work needs a unit graph formed from an IR graph");
  IOS_ASSERT(spec.kind == sched::MergeKind::kMatMul && spec.members.size() >= 2,
             "not a merged product of >= 2 members ({} members)", spec.members.size());
  const ir::Graph& g = *ir;

  KernelWork merged;
  merged.what = "MatMul (merged)";
  merged.matmul_like = true;
  merged.reduction = static_cast<double>(spec.in_channels);
  const ir::Node& first = g.node(graph.unit(spec.members.front().unit).anchor);
  const double weight_bytes = bytes_per_element(g.tensor(first.inputs.at(1)).type);
  merged.type = g.tensor(first.outputs.at(0)).type;
  const double temporary_bytes = bytes_per_element(merged.type);
  for (const auto& member : spec.members) {
    const UnitWork w = unit_work(graph, member.unit);
    IOS_ASSERT(w.kernels.size() == 1, "merge member '{}' launches {} kernels, expected 1",
               graph.unit(member.unit).id, w.kernels.size());
    const KernelWork& k = w.kernels[0];
    const ir::Node& product = g.node(graph.unit(member.unit).anchor);
    // Keep the member's fused epilogue (and a Gemm's C); its multiply-adds
    // are replaced by the merged product's below.
    merged.flops += k.flops - 2.0 * k.outputs * ir::node_reduction(g, product);
    merged.bytes_written += k.bytes_written;
    merged.outputs += k.outputs;
  }
  const double rows = static_cast<double>(spec.rows);
  const double columns = static_cast<double>(spec.out_channels);
  merged.flops += 2.0 * rows * columns * merged.reduction;
  const double weights = merged.reduction * columns + columns;  // weight + bias
  const double temporary = rows * columns;                      // written, then read by the copies
  merged.bytes_read =
      tensor_bytes(g, spec.input) + weights * weight_bytes + temporary * temporary_bytes;
  merged.bytes_written += temporary * temporary_bytes;
  UnitWork work;
  work.kernels.push_back(std::move(merged));
  return work;
}

UnitWork merged_work(const sched::UnitGraph& graph, const sched::MergeSpec& spec) {
  return spec.kind == sched::MergeKind::kMatMul ? merged_matmul_work(graph, spec)
                                                : merged_conv_work(graph, spec);
}

}  // namespace ios::cost
