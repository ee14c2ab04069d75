// Validation of a schedule against a unit graph and a model. Schedules come
// from files users edit, diff and move between machines, so everything is
// checked before a plan is built from one.
#pragma once

#include <string>

#include "sched/schedule.h"
#include "sched/unit_graph.h"

namespace ios::sched {

// Every unit exactly once, dependencies respected (a unit runs after its
// producers: in an earlier stage, or earlier in the same group; in a streamed
// schedule earlier in the issue order), concurrent groups of a stage
// independent, merge stages mergeable, streams in range. Throws UserError
// starting with `source` (a file name) that names the unit and the rule.
void validate_schedule(const Schedule& schedule, const UnitGraph& graph, const std::string& source);

// The model file a schedule names (by content hash) is `model` (unless
// `force`). Throws UserError naming both files and --force.
void check_model_hash(const std::string& schedule_sha256, const std::string& schedule_model_path,
                      const ModelInfo& model, const std::string& source, bool force);

// The schedule was made for this model: same content hash (unless `force`),
// same batch (unless `other_batch`) and input shapes (but for the leading,
// batch dimension when the batches differ). Throws UserError naming both
// values.
void check_schedule_matches_model(const Schedule& schedule, const ModelInfo& model,
                                  const std::string& source, bool force, bool other_batch = false);

}  // namespace ios::sched
