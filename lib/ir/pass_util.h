// What the import passes (ir/passes.h, one pass per file) share: fresh
// tensor names, and the tests a rewrite needs before it may delete an
// intermediate value.
#pragma once

#include <fmt/format.h>

#include <optional>
#include <string>
#include <unordered_set>

#include "ir/graph.h"

namespace ios::ir::pass_util {

// Tensor names in use, to give new tensors unique names.
class NameSet {
 public:
  explicit NameSet(const Graph& graph) {
    for (const Tensor& t : graph.tensors()) names_.insert(t.name);
  }
  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int i = 1; names_.count(name); ++i) name = fmt::format("{}_{}", base, i);
    names_.insert(name);
    return name;
  }

 private:
  std::unordered_set<std::string> names_;
};

// `t` is read once, by `consumer` alone, and is not a graph output.
bool single_private_use(const Graph& graph, TensorId t, NodeId consumer);

inline bool is_const(const Graph& graph, TensorId t) { return graph.tensor(t).is_constant(); }

// The value of a one-element constant (a scalar, or [1], [1, 1]...).
std::optional<float> scalar_constant(const Graph& graph, TensorId t);

}  // namespace ios::ir::pass_util
