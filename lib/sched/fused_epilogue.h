// The fused epilogue of a convolution unit: the element-wise operators that
// follow its convolution inside the unit (bias is part of the convolution;
// BatchNorm is folded before units are formed). Operator merge requires all
// members to have equal epilogues, since the merged convolution applies one
// epilogue to every member's channels.
#pragma once

#include <string>

#include "ir/graph.h"
#include "sched/unit_graph.h"

namespace ios::sched {

// Whether units `a` and `b` apply the same element-wise work after their
// anchors: the same operators in the same order with equal attributes and
// equal constant operands. An epilogue node that reads another activation
// (e.g. a residual Add) never matches: a merged convolution cannot apply
// different operands to its slices. On false, `reason` (if given) says why.
bool same_epilogue(const ir::Graph& ir, const Unit& a, const Unit& b, std::string* reason = nullptr);

}  // namespace ios::sched
