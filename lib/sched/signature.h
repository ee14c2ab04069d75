// Canonical text of stages and blocks in terms of shapes and attributes,
// never names, so that identical work in different places of a model (or
// in different models) reads the same: the profile database's key, and how
// the IOS search recognises repeated blocks.
#pragma once

#include <string>

#include "sched/schedule.h"
#include "sched/unit_graph.h"

namespace ios::sched {

// The strategy, then per group its units in order (unit kind, and per node
// the op, attributes, input/output shapes, weight shapes, and where each
// input comes from), groups sorted since concurrent groups are unordered.
// A tensor that is not float32 carries its element type after its shape
// (":fp16", ":bf16"); all-float32 stages read as before the IR had types.
// Identical stages in different blocks of a model share a signature.
std::string stage_signature(const UnitGraph& graph, const Stage& stage);

// The block's units in order, rendered like one group of a stage: two
// blocks with the same signature have the same units in the same order,
// the same edges between them and the same sharing of inputs from outside,
// so any stage of one costs what the corresponding stage of the other does
// wherever costs follow stage signatures.
std::string block_signature(const UnitGraph& graph, const Block& block);

}  // namespace ios::sched
