#include "sched/validate.h"

#include <algorithm>

#include "core/error.h"
#include "core/json_limits.h"
#include "sched/merge.h"

namespace ios::sched {
namespace {

// Unit ids come from the model's node names: quoted, cut and escaped.
std::string unit_name(const UnitGraph& graph, UnitId u) { return quote_excerpt(graph.unit(u).id); }

void check_unit_in_range(const UnitGraph& graph, UnitId u, const std::string& source) {
  if (u < 0 || u >= graph.size()) {
    user_error("{}: unit index {} is out of range (the model has {} units)", source, u, graph.size());
  }
}

void validate_staged(const StagedSchedule& staged, const UnitGraph& graph, const std::string& source) {
  struct Place {
    int stage = -1, group = -1, index = -1;
  };
  std::vector<Place> place(static_cast<size_t>(graph.size()));
  for (size_t s = 0; s < staged.stages.size(); ++s) {
    const Stage& stage = staged.stages[s];
    if (stage.groups.empty()) user_error("{}: stage {} has no groups", source, s);
    if (stage.strategy == Strategy::kMerge && stage.groups.size() != 1) {
      user_error("{}: merge stage {} must have exactly one group (it has {})", source, s,
                 stage.groups.size());
    }
    for (size_t g = 0; g < stage.groups.size(); ++g) {
      if (stage.groups[g].empty()) user_error("{}: stage {} group {} is empty", source, s, g);
      for (size_t i = 0; i < stage.groups[g].size(); ++i) {
        const UnitId u = stage.groups[g][i];
        check_unit_in_range(graph, u, source);
        Place& p = place[static_cast<size_t>(u)];
        if (p.stage >= 0) {
          user_error("{}: unit {} is scheduled twice (stages {} and {}); each unit must appear "
                     "exactly once",
                     source, unit_name(graph, u), p.stage, s);
        }
        p = {static_cast<int>(s), static_cast<int>(g), static_cast<int>(i)};
      }
    }
    if (stage.strategy == Strategy::kMerge) {
      const MergeCheck check = check_merge(graph, stage.groups[0]);
      if (!check.spec) {
        user_error("{}: stage {} merges units that cannot be merged: {}", source, s, check.reason);
      }
    }
  }
  for (UnitId u = 0; u < graph.size(); ++u) {
    if (place[static_cast<size_t>(u)].stage < 0) {
      user_error("{}: unit {} is missing; each unit must appear exactly once", source,
                 unit_name(graph, u));
    }
  }
  for (UnitId v = 0; v < graph.size(); ++v) {
    const Place& pv = place[static_cast<size_t>(v)];
    for (UnitId u : graph.preds(v)) {
      const Place& pu = place[static_cast<size_t>(u)];
      const bool earlier_stage = pu.stage < pv.stage;
      const bool earlier_in_group = pu.stage == pv.stage && pu.group == pv.group &&
                                    pu.index < pv.index &&
                                    staged.stages[static_cast<size_t>(pv.stage)].strategy ==
                                        Strategy::kConcurrent;
      if (!earlier_stage && !earlier_in_group) {
        user_error("{}: unit {} (stage {}) runs before or beside its input {} (stage {}); a "
                   "unit must come after the units it reads, in an earlier stage or earlier in "
                   "the same group",
                   source, unit_name(graph, v), pv.stage, unit_name(graph, u), pu.stage);
      }
    }
  }
}

void validate_streamed(const StreamedSchedule& streamed, const UnitGraph& graph,
                       const std::string& source) {
  if (streamed.num_streams < 1 || streamed.num_streams > 1024) {
    user_error("{}: num_streams is {}; it must be between 1 and 1024", source, streamed.num_streams);
  }
  std::vector<int> position(static_cast<size_t>(graph.size()), -1);
  for (size_t i = 0; i < streamed.launches.size(); ++i) {
    const auto& launch = streamed.launches[i];
    check_unit_in_range(graph, launch.unit, source);
    if (launch.stream < 0 || launch.stream >= streamed.num_streams) {
      user_error("{}: unit {} is on stream {}, outside 0..{}", source,
                 unit_name(graph, launch.unit), launch.stream, streamed.num_streams - 1);
    }
    int& pos = position[static_cast<size_t>(launch.unit)];
    if (pos >= 0) {
      user_error("{}: unit {} is launched twice; each unit must appear exactly once", source,
                 unit_name(graph, launch.unit));
    }
    pos = static_cast<int>(i);
  }
  for (UnitId v = 0; v < graph.size(); ++v) {
    if (position[static_cast<size_t>(v)] < 0) {
      user_error("{}: unit {} is missing; each unit must appear exactly once", source,
                 unit_name(graph, v));
    }
    for (UnitId u : graph.preds(v)) {
      if (position[static_cast<size_t>(u)] > position[static_cast<size_t>(v)]) {
        user_error("{}: unit {} is launched before its input {}; the issue order must "
                   "respect dependencies",
                   source, unit_name(graph, v), unit_name(graph, u));
      }
    }
  }
}

}  // namespace

void validate_schedule(const Schedule& schedule, const UnitGraph& graph, const std::string& source) {
  if (schedule.is_staged()) {
    validate_staged(schedule.staged(), graph, source);
  } else {
    validate_streamed(schedule.streamed(), graph, source);
  }
}

void check_model_hash(const std::string& schedule_sha256, const std::string& schedule_model_path,
                      const ModelInfo& model, const std::string& source, bool force) {
  if (schedule_sha256 != model.sha256 && !force) {
    user_error("{}: the schedule was made for another model ({}, sha256 {}...) but '{}' has "
               "sha256 {}...; re-run ios-optimize, or pass --force to use it anyway",
               source, quote_excerpt(schedule_model_path), schedule_sha256.substr(0, 12),
               model.path, model.sha256.substr(0, 12));
  }
}

void check_schedule_matches_model(const Schedule& schedule, const ModelInfo& model,
                                  const std::string& source, bool force, bool other_batch) {
  check_model_hash(schedule.model.sha256, schedule.model.path, model, source, force);
  const bool batch_differs = schedule.model.batch != model.batch;
  if (batch_differs && !other_batch) {
    user_error("{}: the schedule was made for batch {} but the model is run at batch {}; pass "
               "--batch {}, re-run ios-optimize --batch {}, or pass --retarget to run it at "
               "batch {} as it is",
               source, schedule.model.batch, model.batch, schedule.model.batch, model.batch,
               model.batch);
  }
  for (const auto& input : schedule.model.inputs) {
    // Named references, not a structured binding: clang 14 cannot capture
    // structured bindings in the lambda below.
    const std::string& name = input.first;
    const ir::Shape& shape = input.second;
    auto it = std::find_if(model.inputs.begin(), model.inputs.end(),
                           [&](const auto& in) { return in.first == name; });
    if (it == model.inputs.end()) {
      user_error("{}: the schedule names input {}, which the model does not have", source,
                 quote_excerpt(name));
    }
    // Another batch changes the leading dimension only.
    const bool same = batch_differs && !shape.empty() && it->second.size() == shape.size()
                          ? std::equal(shape.begin() + 1, shape.end(), it->second.begin() + 1)
                          : it->second == shape;
    if (!same) {
      user_error("{}: input {} has shape {} in the schedule but {} in the model", source,
                 quote_excerpt(name), ir::to_string(shape), ir::to_string(it->second));
    }
  }
}

}  // namespace ios::sched
