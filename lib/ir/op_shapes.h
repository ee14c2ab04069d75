// The shape functions of the operator table (ir/op_info.cpp): output shapes
// from input shapes and normalized attributes. Each throws a UserError naming
// the node, its op type and its input shapes when the inputs do not fit.
#pragma once

#include <vector>

#include "ir/graph.h"

namespace ios::ir::shapes {

using Shapes = std::vector<Shape>;

// One input, output of the same shape: unary element-wise operators.
Shapes same_as_input(const Node& node, const Shapes& in);
// Two inputs broadcast to each other (Add, Mul).
Shapes broadcast(const Node& node, const Shapes& in);

Shapes conv(const Node& node, const Shapes& in);
Shapes pool(const Node& node, const Shapes& in);
Shapes global_pool(const Node& node, const Shapes& in);
Shapes concat(const Node& node, const Shapes& in);
Shapes split(const Node& node, const Shapes& in);
Shapes slice(const Node& node, const Shapes& in);
Shapes reduce(const Node& node, const Shapes& in);
Shapes flatten(const Node& node, const Shapes& in);
Shapes reshape(const Node& node, const Shapes& in);
Shapes transpose(const Node& node, const Shapes& in);
Shapes gemm(const Node& node, const Shapes& in);
Shapes matmul(const Node& node, const Shapes& in);
Shapes softmax(const Node& node, const Shapes& in);
Shapes pad(const Node& node, const Shapes& in);
Shapes batch_norm(const Node& node, const Shapes& in);
Shapes resize(const Node& node, const Shapes& in);
Shapes layer_norm(const Node& node, const Shapes& in);

}  // namespace ios::ir::shapes
