#include "onnx/einsum.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>

#include "core/error.h"

namespace ios::onnx {
namespace {

struct Parsed {
  std::vector<std::string> operands;  // index letters of each operand
  std::string output;
};

Parsed parse(const std::string& equation, const std::string& where) {
  auto fail = [&](const std::string& why) -> void {
    user_error("{}: Einsum '{}': {}", where, equation, why);
  };
  std::string eq;
  for (char c : equation) {
    if (c != ' ') eq += c;
  }
  if (eq.find("...") != std::string::npos) fail("ellipsis ('...') is not supported; write every index");
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  Parsed p;
  std::string current;
  for (char c : lhs) {
    if (c == ',') {
      p.operands.push_back(current);
      current.clear();
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      current += c;
    } else {
      fail(fmt::format("unexpected character '{}'", c));
    }
  }
  p.operands.push_back(current);
  if (arrow != std::string::npos) {
    for (char c : eq.substr(arrow + 2)) {
      if (!std::isalpha(static_cast<unsigned char>(c))) fail(fmt::format("unexpected character '{}' in the output", c));
      if (p.output.find(c) != std::string::npos) fail(fmt::format("index '{}' appears twice in the output", c));
      p.output += c;
    }
  } else {  // implicit: the indices used once, in alphabetical order
    std::map<char, int> uses;
    for (const auto& op : p.operands) {
      for (char c : op) ++uses[c];
    }
    for (const auto& [c, n] : uses) {
      if (n == 1) p.output += c;
    }
  }
  return p;
}

std::vector<int64_t> positions(const std::string& of, const std::string& in) {
  std::vector<int64_t> out;
  for (char c : of) out.push_back(static_cast<int64_t>(in.find(c)));
  return out;
}

// The product of the letters' sizes; nullopt when it overflows (shapes
// inferred from a hostile file are checked only after folding).
std::optional<int64_t> product_of(const std::string& letters, const std::map<char, int64_t>& size) {
  int64_t n = 1;
  for (char c : letters) {
    if (__builtin_mul_overflow(n, size.at(c), &n)) return std::nullopt;
  }
  return n;
}

}  // namespace

EinsumPlan plan_einsum(const std::string& equation, const std::vector<ir::Shape>& operands,
                       const std::string& where) {
  auto fail = [&](const std::string& why) { user_error("{}: Einsum '{}': {}", where, equation, why); };
  const Parsed p = parse(equation, where);
  if (p.operands.size() != operands.size()) {
    fail(fmt::format("the equation names {} operands, the node has {} inputs", p.operands.size(), operands.size()));
  }
  if (operands.size() > 2) fail("ios lowers Einsum of one or two operands only");
  std::map<char, int64_t> size;
  for (size_t k = 0; k < operands.size(); ++k) {
    const std::string& letters = p.operands[k];
    if (letters.size() != operands[k].size()) {
      fail(fmt::format("operand {} has {} indices for a tensor of rank {}", k, letters.size(), operands[k].size()));
    }
    for (size_t d = 0; d < letters.size(); ++d) {
      const char c = letters[d];
      if (letters.find(c) != d) fail(fmt::format("index '{}' repeats in operand {} (a diagonal); not supported", c, k));
      auto [it, fresh] = size.emplace(c, operands[k][d]);
      if (!fresh && it->second != operands[k][d]) {
        fail(fmt::format("index '{}' has size {} in one operand and {} in another (broadcasting is not supported)", c,
                         it->second, operands[k][d]));
      }
    }
  }
  EinsumPlan plan;
  for (char c : p.output) {
    if (!size.count(c)) fail(fmt::format("output index '{}' is in no operand", c));
    plan.output.push_back(size.at(c));
  }
  if (plan.output.empty()) fail("a scalar output is not supported (ios runs tensors of rank 1 or more)");
  auto in_output = [&](char c) { return p.output.find(c) != std::string::npos; };

  if (operands.size() == 1) {
    for (char c : p.operands[0]) {
      if (!in_output(c)) fail(fmt::format("index '{}' is summed over; ios lowers Einsum without reductions", c));
    }
    plan.matmul = false;
    plan.output_perm = positions(p.output, p.operands[0]);
    return plan;
  }

  const std::string &a = p.operands[0], &b = p.operands[1];
  std::string batch, left, right, contracted;
  for (char c : p.output) {
    const bool in_a = a.find(c) != std::string::npos, in_b = b.find(c) != std::string::npos;
    if (in_a && in_b) batch += c;
    else if (in_a) left += c;
    else right += c;
  }
  for (char c : a) {
    if (in_output(c)) continue;
    if (b.find(c) == std::string::npos) {
      fail(fmt::format("index '{}' is summed over in operand 0 alone; ios lowers products without such sums", c));
    }
    contracted += c;
  }
  for (char c : b) {
    if (!in_output(c) && a.find(c) == std::string::npos) {
      fail(fmt::format("index '{}' is summed over in operand 1 alone; ios lowers products without such sums", c));
    }
  }
  plan.operand_perm = {positions(batch + left + contracted, a), positions(batch + contracted + right, b)};
  ir::Shape batch_dims;
  for (char c : batch) batch_dims.push_back(size.at(c));
  const auto l = product_of(left, size), k = product_of(contracted, size), r = product_of(right, size);
  if (!l || !k || !r) fail("the operands' dimensions multiply beyond the int64 range");
  plan.operand_matrix = {batch_dims, batch_dims};
  plan.operand_matrix[0].insert(plan.operand_matrix[0].end(), {*l, *k});
  plan.operand_matrix[1].insert(plan.operand_matrix[1].end(), {*k, *r});
  const std::string product = batch + left + right;
  for (char c : product) plan.product.push_back(size.at(c));
  plan.output_perm = positions(p.output, product);
  return plan;
}

}  // namespace ios::onnx
