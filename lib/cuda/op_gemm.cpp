// Gemm and MatMul (2-D, or batched with full or no batch broadcast):
// cuBLASLt, or the backend's own tiled FP32 kernel where cuBLASLt cannot
// serve the layout (gemm.h); merged matrix products (IOS operator merge of
// products sharing their input) as one GEMM over the assembled weights.
#include <fmt/format.h>

#include "core/error.h"
#include "core/log.h"
#include "cuda/gemm.h"
#include "cuda/launch.h"
#include "cuda/lowering.h"
#include "sched/merge.h"

namespace ios::cuda {

using ir::NodeId;
using ir::OpKind;
using ir::TensorId;

namespace {

class OwnGemmGpuOp final : public GpuOp {
 public:
  explicit OwnGemmGpuOp(const kernels::GemmParams& p, std::string why) : p_(p), why_(std::move(why)) {}
  void issue(const IssueContext& c) const override { IOS_CUDA_CALL(kernels::gemm(p_, c.stream)); }
  std::string describe() const override {
    return fmt::format("own gemm {}x{}x{} (batch {}; {})", p_.m, p_.n, p_.k, p_.batch, why_);
  }

 private:
  kernels::GemmParams p_;
  std::string why_;
};

class CublasGemmGpuOp final : public GpuOp {
 public:
  CublasGemmGpuOp(const GemmChoice& choice, const kernels::GemmParams& p) : choice_(choice), p_(p), product_(choice, p) {}
  void issue(const IssueContext& c) const override {
    IOS_ASSERT(c.workspace_bytes >= choice_.workspace, "cuBLASLt product needs {} workspace bytes, the stream has {}",
               choice_.workspace, c.workspace_bytes);
    IOS_CUBLAS_CALL(product_.run(p_, c.workspace, c.stream));
  }
  std::string describe() const override {
    return fmt::format("cublasLt gemm {}x{}x{} (batch {}; {}{}, ws {} KiB)", p_.m, p_.n, p_.k, p_.batch,
                       ir::is_half(p_.type)
                           ? ir::type_name(p_.type)
                           : ir::math_mode_name(choice_.tf32 ? ir::MathMode::kTf32 : ir::MathMode::kFp32),
                       choice_.plan.bias ? ", bias epilogue" : "",
                       choice_.workspace / 1024);
  }

 private:
  GemmChoice choice_;
  kernels::GemmParams p_;
  LtProduct product_;
};

// Shape and batch stride of an operand as stored (a constant is dense).
std::pair<ir::Shape, int64_t> operand_layout(const Program& p, const Ref& r) {
  if (r.is_value()) {
    const Value& v = p.values.at(static_cast<size_t>(r.index));
    return {v.shape, v.batch_stride};
  }
  const Constant& c = p.constants.at(static_cast<size_t>(r.index));
  return {c.shape, item_of(c.shape)};
}

// Byte alignment of an operand's pointer (constants are buffer-aligned).
uint32_t operand_alignment(const Program& p, const Ref& r) {
  if (!r.is_value()) return static_cast<uint32_t>(kBufferAlignment);
  const Value& v = p.values.at(static_cast<size_t>(r.index));
  return gemm_alignment(v.offset, v.type);
}

uint32_t pointer_bytes_alignment(const void* ptr) {
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  uint32_t a = static_cast<uint32_t>(kBufferAlignment);
  while (a > 1 && address % a != 0) a /= 2;
  return a;
}

// The product's strides and scalars (no pointers).
kernels::GemmParams gemm_params(const Program& program, const GemmOp& op) {
  kernels::GemmParams g;
  g.m = op.m, g.n = op.n, g.k = op.k, g.batch = op.batch;
  g.alpha = op.alpha, g.beta = op.beta;
  const Value& yv = program.values.at(static_cast<size_t>(op.y));
  g.type = yv.type;
  // Row stride of a 2-D operand as stored: its batch stride.
  const auto [as, ab] = operand_layout(program, op.a);
  const auto [bs, bb] = operand_layout(program, op.b);
  if (as.size() == 2) {
    g.a_row = op.trans_a ? 1 : ab;
    g.a_col = op.trans_a ? ab : 1;
  } else {
    g.a_row = op.k, g.a_col = 1, g.a_batch = op.a_batched ? op.m * op.k : 0;
  }
  if (bs.size() == 2) {
    g.b_row = op.trans_b ? 1 : bb;
    g.b_col = op.trans_b ? bb : 1;
  } else {
    g.b_row = op.n, g.b_col = 1, g.b_batch = op.b_batched ? op.k * op.n : 0;
  }
  if (op.c) {
    const auto [cs, cb] = operand_layout(program, op.c);
    g.has_c = true;
    if (cs.size() == 2) {
      g.c_row = cs[0] == 1 && op.m != 1 ? 0 : cb;
      g.c_col = cs[1] == 1 && op.n != 1 ? 0 : 1;
    } else if (cs.size() == 1) {
      g.c_row = 0;
      g.c_col = cs[0] == 1 && op.n != 1 ? 0 : 1;
    }
  }
  if (yv.shape.size() == 2) {
    g.y_row = yv.batch_stride;
  } else {
    g.y_row = op.n, g.y_batch = op.m * op.n;
  }
  return g;
}

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

void GemmOp::prepare(Preparation& prep) {
  const kernels::GemmParams g = gemm_params(prep.program, *this);
  const uint32_t align_c = c ? operand_alignment(prep.program, c) : static_cast<uint32_t>(kBufferAlignment);
  auto chosen = std::make_shared<const GemmChoice>(choose_gemm(
      prep.ctx, g, operand_alignment(prep.program, a), operand_alignment(prep.program, b), align_c,
      static_cast<uint32_t>(prep.program.values.at(static_cast<size_t>(y)).alignment()), label));
  if (chosen->plan.cublas) prep.workspace = std::max(prep.workspace, chosen->workspace);
  choice = std::move(chosen);
}

std::unique_ptr<GpuOp> GemmOp::launch(const Binding& bind) const {
  IOS_ASSERT(choice != nullptr, "product '{}' has no path (prepare() did not run)", label);
  kernels::GemmParams g = gemm_params(bind.program(), *this);
  g.a = bind.in(a);
  g.b = bind.in(b);
  if (c) g.c = bind.in(c);
  g.y = bind.out(y);
  std::string own_reason = choice->plan.own_reason;
  if (choice->plan.cublas) {
    // The algorithm was chosen for the alignment the program's offsets
    // promised; pointers placed otherwise (never expected) run on the own
    // kernel rather than on an algorithm that may read misaligned.
    const bool aligned = pointer_bytes_alignment(g.a) >= choice->align_a &&
                         pointer_bytes_alignment(g.b) >= choice->align_b &&
                         (!c || pointer_bytes_alignment(g.c) >= choice->align_c) &&
                         pointer_bytes_alignment(g.y) >= choice->align_y;
    if (aligned) return std::make_unique<CublasGemmGpuOp>(*choice, g);
    own_reason = "pointers less aligned than the cuBLASLt algorithm assumes";
    logger("cuda")->warn("product '{}': {}", label, own_reason);
  }
  const kernels::GemmGrid grid = kernels::gemm_grid(g.m, g.n, g.batch);
  if (grid.error != nullptr) {
    user_error("product '{}' ({}x{}x{}, batch {}): the CUDA backend's own GEMM kernel cannot launch it: {}", label,
               g.m, g.n, g.k, g.batch, grid.error);
  }
  return std::make_unique<OwnGemmGpuOp>(g, own_reason);
}

void lower_gemm(Lowerer& lw, Launch& launch, NodeId n, int y) {
  const ir::Graph& g = lw.graph();
  const ir::Node& node = g.node(n);
  GemmOp op;
  op.y = y;
  op.label = g.tensor(node.outputs[0]).name;
  const ir::Shape& ys = lw.val(y).shape;
  // One element type for A, B, C and Y (cuBLASLt's A/B/C/D, the own kernel's T).
  for (TensorId t : node.inputs) {
    if (t != ir::kNone && lw.type_of(t) != lw.val(y).type) {
      user_error("{} '{}': input '{}' is {} but the output is {}; the CUDA backend needs one element type per "
                 "product",
                 ir::op_name(node.op), node.name, g.tensor(t).name, ir::type_name(lw.type_of(t)),
                 ir::type_name(lw.val(y).type));
    }
  }
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
  op.label = launch.name;
  int a = lw.value_for(spec.input);
  if (lw.val(a).shape.size() > 2)
    a = lw.dense(launch, a);  // rows of a batched input must be uniform
  op.a = Ref::value(a);
  op.b = Ref::constant(lw.new_constant(launch.name + ":weight",
                                       {spec.in_channels, spec.out_channels}, weights.weight,
                                       lw.type_of(spec.input)));
  op.c = Ref::constant(
      lw.new_constant(launch.name + ":bias", {spec.out_channels}, weights.bias, lw.type_of(spec.input)));
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
