// Gemm and MatMul (2-D, or batched with full or no batch broadcast): the
// backend's own tiled FP32 kernel; merged matrix products (IOS operator
// merge of products sharing their input) as one GEMM over the assembled
// weights.
#include <fmt/format.h>

#include "core/error.h"
#include "cuda/launch.h"
#include "cuda/lowering.h"
#include "sched/merge.h"

namespace ios::cuda {

using ir::NodeId;
using ir::OpKind;
using ir::TensorId;

namespace {

class GemmGpuOp final : public GpuOp {
 public:
  explicit GemmGpuOp(const kernels::GemmParams& p) : p_(p) {}
  void issue(const IssueContext& c) const override { IOS_CUDA_CALL(kernels::gemm(p_, c.stream)); }
  std::string describe() const override {
    return fmt::format("own gemm {}x{}x{} (batch {})", p_.m, p_.n, p_.k, p_.batch);
  }

 private:
  kernels::GemmParams p_;
};

}  // namespace

void GemmOp::uses(Uses& u) const {
  u.read(a);
  u.read(b);
  u.read(c);
  u.write(y);
}

std::string GemmOp::describe(const Program& p) const {
  return fmt::format("gemm {}x{}x{}x{} {} * {} -> {}", batch, m, n, k, p.ref_name(a), p.ref_name(b),
                     p.value_name(y));
}

std::unique_ptr<GpuOp> GemmOp::launch(const Binding& bind) const {
  kernels::GemmParams g;
  g.m = m, g.n = n, g.k = k, g.batch = batch;
  g.alpha = alpha, g.beta = beta;
  const Value& yv = bind.value(y);
  // Row stride of a 2-D operand as stored: its batch stride.
  const auto [as, ab] = bind.layout(a);
  const auto [bs, bb] = bind.layout(b);
  g.a = bind.in(a);
  g.b = bind.in(b);
  if (as.size() == 2) {
    g.a_row = trans_a ? 1 : ab;
    g.a_col = trans_a ? ab : 1;
  } else {
    g.a_row = k, g.a_col = 1, g.a_batch = a_batched ? m * k : 0;
  }
  if (bs.size() == 2) {
    g.b_row = trans_b ? 1 : bb;
    g.b_col = trans_b ? bb : 1;
  } else {
    g.b_row = n, g.b_col = 1, g.b_batch = b_batched ? k * n : 0;
  }
  if (c) {
    const auto [cs, cb] = bind.layout(c);
    g.c = bind.in(c);
    if (cs.size() == 2) {
      g.c_row = cs[0] == 1 && m != 1 ? 0 : cb;
      g.c_col = cs[1] == 1 && n != 1 ? 0 : 1;
    } else if (cs.size() == 1) {
      g.c_row = 0;
      g.c_col = cs[0] == 1 && n != 1 ? 0 : 1;
    }
  }
  g.y = bind.out(y);
  if (yv.shape.size() == 2) {
    g.y_row = yv.batch_stride;
  } else {
    g.y_row = n, g.y_batch = m * n;
  }
  return std::make_unique<GemmGpuOp>(g);
}

void lower_gemm(Lowerer& lw, Launch& launch, NodeId n, int y) {
  const ir::Graph& g = lw.graph();
  const ir::Node& node = g.node(n);
  GemmOp op;
  op.y = y;
  const ir::Shape& ys = lw.val(y).shape;
  if (node.op == OpKind::kGemm) {
    const auto& a = node.attr<ir::GemmAttrs>();
    op.a = lw.ref_for(node.inputs[0]);
    op.b = lw.ref_for(node.inputs[1]);
    if (node.inputs.size() > 2 && node.inputs[2] != ir::kNone) op.c = lw.ref_for(node.inputs[2]);
    op.alpha = a.alpha;
    op.beta = op.c ? a.beta : 0.0f;
    op.trans_a = a.trans_a;
    op.trans_b = a.trans_b;
    const ir::Shape& as = g.tensor(node.inputs[0]).shape;
    IOS_ASSERT(as.size() == 2 && ys.size() == 2, "Gemm '{}' operands must be 2-D", node.name);
    op.m = ys[0];
    op.n = ys[1];
    op.k = a.trans_a ? as[0] : as[1];
  } else {
    const ir::Shape& as = g.tensor(node.inputs[0]).shape;
    const ir::Shape& bs = g.tensor(node.inputs[1]).shape;
    if (as.size() < 2 || bs.size() < 2) {
      user_error("MatMul '{}': 1-D operands are not supported by the CUDA backend", node.name);
    }
    op.m = as[as.size() - 2];
    op.k = as.back();
    op.n = bs.back();
    op.batch = ir::num_elements(ys) / (op.m * op.n);
    auto batched = [&](const ir::Shape& s) {
      const int64_t b = ir::num_elements(s) / (s[s.size() - 1] * s[s.size() - 2]);
      if (b == op.batch) return true;
      if (b == 1) return false;
      user_error(
          "MatMul '{}': partial broadcasting of batch dimensions ({} with {}) is not supported by "
          "the CUDA backend",
          node.name, ir::to_string(as), ir::to_string(bs));
    };
    op.a_batched = batched(as);
    op.b_batched = batched(bs);
    auto operand = [&](TensorId t, const ir::Shape& s) {
      if (g.tensor(t).is_constant()) return lw.ref_for(t);
      int v = lw.value_for(t);
      if (s.size() > 2) v = lw.dense(launch, v);  // batch strides must be uniform
      return Ref::value(v);
    };
    op.a = operand(node.inputs[0], as);
    op.b = operand(node.inputs[1], bs);
    if (ys.size() > 2 && !lw.val(y).dense()) {
      user_error("MatMul '{}': a batched output written into a concatenation is not supported",
                 node.name);
    }
  }
  emit(launch, op);
}

// A merged matrix product (IOS operator merge of products sharing their
// input): one GemmOp of the input with the assembled weights [K, sum N_i]
// and bias (the Gemm members' C) into the merged temporary, then per member
// a copy of its columns into its product's output, where its epilogue runs
// in place as for an unmerged unit (the storage plan placed it so).
void lower_merged_product(Lowerer& lw, Launch& launch, int kernel) {
  const sched::MergeSpec& spec = lw.storage().merge_spec(kernel);
  IOS_ASSERT(spec.kind == sched::MergeKind::kMatMul && lw.storage().merged_region(kernel).dense(),
             "kernel {} is not a merged product", kernel);
  const int merged = lw.merged_value(kernel);
  const sched::MergedWeights weights = sched::assemble_merged_weights(lw.units(), spec);
  GemmOp op;
  int a = lw.value_for(spec.input);
  if (lw.val(a).shape.size() > 2)
    a = lw.dense(launch, a);  // rows of a batched input must be uniform
  op.a = Ref::value(a);
  op.b = Ref::constant(lw.new_constant(launch.name + ":weight",
                                       {spec.in_channels, spec.out_channels}, weights.weight));
  op.c = Ref::constant(lw.new_constant(launch.name + ":bias", {spec.out_channels}, weights.bias));
  op.beta = 1.0f;
  op.m = spec.rows;
  op.n = spec.out_channels;
  op.k = spec.in_channels;
  op.y = merged;
  emit(launch, op);

  for (const sched::MergeMember& member : spec.members) {
    const sched::Unit& unit = lw.units().unit(member.unit);
    IOS_ASSERT(!unit.nodes.empty() && unit.nodes.front() == unit.anchor,
               "merged unit '{}' has a prologue", unit.id);
    const std::vector<NodeId>& chain = lw.storage().epilogue(unit.anchor);
    const int y = lw.chain_target(unit.anchor, chain);
    const int64_t columns = member.out_channels;
    const int64_t items = lw.val(y).batch();
    const int64_t rows_per_item = lw.val(y).item_size() / columns;
    IOS_ASSERT(lw.val(y).shape.back() == columns && items * rows_per_item == spec.rows,
               "member '{}' output {} in a {} x {} merge", unit.id, ir::to_string(lw.val(y).shape),
               spec.rows, spec.out_channels);
    CopyOp copy;
    copy.src = merged;
    copy.dst = y;
    copy.dims = {items, rows_per_item, columns};
    copy.src_strides = {rows_per_item * spec.out_channels, spec.out_channels, 1};
    copy.dst_strides = {lw.val(y).batch_stride, columns, 1};
    copy.src_offset = member.channel_offset;
    emit(launch, std::move(copy));
    lw.in_place_steps(launch, y, unit.anchor, chain, 0);
    // Nodes after the product that its epilogue did not take.
    for (size_t i = 1; i < unit.nodes.size(); ++i) {
      if (lw.storage().in_epilogue(unit.nodes[i])) continue;
      lw.lower_node(launch, unit.nodes[i], lw.storage().epilogue(unit.nodes[i]));
    }
  }
}

}  // namespace ios::cuda
