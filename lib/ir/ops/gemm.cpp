// Gemm (fully connected layers) and MatMul (batched, broadcasting).
//
// Its entries in the operator table (ir/op_info.h), with their attribute
// parsers, shape functions and work (docs/architecture.md, "Adding an
// operator").

#include <vector>

#include "ir/op_definition.h"
#include "ir/shape_inference.h"

namespace ios::ir::ops {
namespace {

Attrs parse_gemm(const AttributeReader& r, const Shapes&) {
  return GemmAttrs{r.get_float("alpha", 1.0f), r.get_float("beta", 1.0f),
                   r.get_int("transA", 0) != 0, r.get_int("transB", 0) != 0};
}

Shape gemm_one(const Node& node, const std::vector<Shape>& in) {
  need_inputs(node, in, 2, 3);
  need_rank(node, in, 0, 2);
  need_rank(node, in, 1, 2);
  const auto& a = node.attr<GemmAttrs>();
  const int64_t m = a.trans_a ? in[0][1] : in[0][0];
  const int64_t k = a.trans_a ? in[0][0] : in[0][1];
  const int64_t kb = a.trans_b ? in[1][1] : in[1][0];
  const int64_t n = a.trans_b ? in[1][0] : in[1][1];
  if (k != kb) fail(node, in, "inner dimensions differ ({} vs {})", k, kb);
  Shape out{m, n};
  if (in.size() == 3) {
    auto b = broadcast_shapes(out, in[2]);
    if (!b || *b != out) fail(node, in, "C does not broadcast to {}", to_string(out));
  }
  return out;
}

Shapes gemm_shapes(const Node& node, const Shapes& in) { return {gemm_one(node, in)}; }

Shape matmul_one(const Node& node, const std::vector<Shape>& in) {
  need_inputs(node, in, 2, 2);
  Shape a = in[0], b = in[1];
  if (a.empty() || b.empty()) fail(node, in, "MatMul of a scalar");
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  if (a.back() != b[b.size() - 2]) fail(node, in, "inner dimensions differ");
  const Shape a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
  auto batch = broadcast_shapes(a_batch, b_batch);
  if (!batch) fail(node, in, "batch dimensions do not broadcast");
  Shape out = *batch;
  if (!a_vec) out.push_back(a[a.size() - 2]);
  if (!b_vec) out.push_back(b.back());
  return out;
}

Shapes matmul_shapes(const Node& node, const Shapes& in) { return {matmul_one(node, in)}; }

double gemm_k(const Graph& g, const Node& n) {
  const Shape& a = input_shape(g, n, 0);
  IOS_ASSERT(!a.empty(), "matmul '{}' has a scalar input", n.name);
  if (n.op == OpKind::kGemm) {
    IOS_ASSERT(a.size() == 2, "gemm '{}' has an input of rank {}", n.name, a.size());
    return static_cast<double>(n.attr<GemmAttrs>().trans_a ? a[0] : a[1]);
  }
  return static_cast<double>(a.back());
}

double gemm_flops(const Graph& g, const Node& n) {
  const double out = output_elements(g, n);
  const bool bias = n.inputs.size() > 2;
  return 2.0 * out * gemm_k(g, n) + (bias ? out : 0.0);
}

double matmul_flops(const Graph& g, const Node& n) {
  return 2.0 * output_elements(g, n) * gemm_k(g, n);
}

}  // namespace

OpInfo gemm_op() {
  return work(
      inputs(op(OpKind::kGemm, "Gemm", 7, parse_gemm, gemm_shapes, anchor(OpClass::kMatMul)),
             up_to_three),
      0, gemm_flops, gemm_k);
}

OpInfo mat_mul_op() {
  return work(
      inputs(op(OpKind::kMatMul, "MatMul", 1, nullptr, matmul_shapes, anchor(OpClass::kMatMul)),
             two),
      0, matmul_flops, gemm_k);
}

}  // namespace ios::ir::ops
