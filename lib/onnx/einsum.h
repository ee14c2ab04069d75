// Einsum as the IR's own operators. The equations attention uses (a batched
// product of two operands, each index once per operand, q·kᵀ or attn·v) are
// one MatMul between Transposes and Reshapes; a single operand that only
// permutes its indices is one Transpose. Sums over an index of one operand,
// diagonals and three or more operands are refused.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace ios::onnx {

// The steps that compute one Einsum; a Transpose whose perm is the identity
// and a Reshape to the shape it has are left out by whoever builds them.
struct EinsumPlan {
  // Each operand permuted to [batch..., left..., contracted...] (A) and
  // [batch..., contracted..., right...] (B), then reshaped to
  // [batch..., L, K] and [batch..., K, R].
  std::vector<std::vector<int64_t>> operand_perm;
  std::vector<ir::Shape> operand_matrix;
  // MatMul's result reshaped to [batch..., left..., right...] (the product
  // shape), then permuted to the output's order.
  ir::Shape product;
  std::vector<int64_t> output_perm;
  ir::Shape output;
  bool matmul = true;  // false: one operand, output_perm is all there is
};

// Plans `equation` (ONNX's form: letters, commas, "->", spaces ignored; an
// implicit output is the letters used once, in alphabetical order) for
// operands of the given static shapes. Throws UserError "`where`: Einsum
// 'eq': reason" for what ios does not lower.
EinsumPlan plan_einsum(const std::string& equation, const std::vector<ir::Shape>& operands,
                       const std::string& where);

}  // namespace ios::onnx
