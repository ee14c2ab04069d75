// Validity of a schedule against its unit graph, checked from first
// principles (independent of the library's validate.h): every unit exactly
// once, every dependency respected.
#pragma once

#include <fmt/format.h>

#include <string>
#include <vector>

#include "sched/schedule.h"
#include "sched/unit_graph.h"

namespace ios::sched::test {

// Empty when valid, otherwise the first problem found.
inline std::string check_schedule(const UnitGraph& graph, const Schedule& schedule) {
  const int n = graph.size();
  if (schedule.is_staged()) {
    // position of each unit: (stage, group, index in group)
    std::vector<int> stage_of(static_cast<size_t>(n), -1), group_of(static_cast<size_t>(n), -1),
        index_of(static_cast<size_t>(n), -1);
    const auto& stages = schedule.staged().stages;
    for (size_t s = 0; s < stages.size(); ++s) {
      const Stage& stage = stages[s];
      if (stage.groups.empty()) return fmt::format("stage {} is empty", s);
      if (stage.strategy == Strategy::kMerge && stage.groups.size() != 1) {
        return fmt::format("merge stage {} has {} groups", s, stage.groups.size());
      }
      for (size_t g = 0; g < stage.groups.size(); ++g) {
        if (stage.groups[g].empty()) return fmt::format("stage {} group {} is empty", s, g);
        for (size_t i = 0; i < stage.groups[g].size(); ++i) {
          const UnitId u = stage.groups[g][i];
          if (u < 0 || u >= n) return fmt::format("stage {} names unit {}", s, u);
          if (stage_of[static_cast<size_t>(u)] >= 0) return fmt::format("unit {} appears twice", u);
          stage_of[static_cast<size_t>(u)] = static_cast<int>(s);
          group_of[static_cast<size_t>(u)] = static_cast<int>(g);
          index_of[static_cast<size_t>(u)] = static_cast<int>(i);
        }
      }
    }
    for (UnitId u = 0; u < n; ++u) {
      if (stage_of[static_cast<size_t>(u)] < 0) return fmt::format("unit {} is missing", u);
    }
    for (UnitId v = 0; v < n; ++v) {
      for (UnitId u : graph.preds(v)) {
        const size_t a = static_cast<size_t>(u), b = static_cast<size_t>(v);
        if (stage_of[a] < stage_of[b]) continue;
        if (stage_of[a] > stage_of[b]) return fmt::format("unit {} runs in a stage before its input {}", v, u);
        const Stage& stage = stages[static_cast<size_t>(stage_of[a])];
        if (stage.strategy == Strategy::kMerge) {
          return fmt::format("merged units {} and {} depend on each other", u, v);
        }
        if (group_of[a] != group_of[b]) {
          return fmt::format("units {} -> {} are in one stage but different groups", u, v);
        }
        if (index_of[a] >= index_of[b]) return fmt::format("unit {} runs before its input {} in a group", v, u);
      }
    }
    return "";
  }
  const StreamedSchedule& streamed = schedule.streamed();
  std::vector<int> pos(static_cast<size_t>(n), -1);
  for (size_t i = 0; i < streamed.launches.size(); ++i) {
    const auto& l = streamed.launches[i];
    if (l.unit < 0 || l.unit >= n) return fmt::format("launch {} names unit {}", i, l.unit);
    if (pos[static_cast<size_t>(l.unit)] >= 0) return fmt::format("unit {} launched twice", l.unit);
    if (l.stream < 0 || l.stream >= streamed.num_streams) {
      return fmt::format("unit {} on stream {} of {}", l.unit, l.stream, streamed.num_streams);
    }
    if (l.predicted_finish_ms < l.predicted_start_ms) return fmt::format("unit {} ends before it starts", l.unit);
    pos[static_cast<size_t>(l.unit)] = static_cast<int>(i);
  }
  for (UnitId u = 0; u < n; ++u) {
    if (pos[static_cast<size_t>(u)] < 0) return fmt::format("unit {} is missing", u);
  }
  for (UnitId v = 0; v < n; ++v) {
    const auto& lv = streamed.launches[static_cast<size_t>(pos[static_cast<size_t>(v)])];
    for (UnitId u : graph.preds(v)) {
      if (pos[static_cast<size_t>(u)] > pos[static_cast<size_t>(v)]) {
        return fmt::format("unit {} is issued before its input {}", v, u);
      }
      const auto& lu = streamed.launches[static_cast<size_t>(pos[static_cast<size_t>(u)])];
      if (lv.predicted_start_ms + 1e-9 < lu.predicted_finish_ms) {
        return fmt::format("unit {} is predicted to start before its input {} ends", v, u);
      }
    }
  }
  // Units of one stream must not overlap in the prediction.
  std::vector<double> stream_free(static_cast<size_t>(streamed.num_streams), -1e300);
  for (const auto& l : streamed.launches) {
    if (l.predicted_start_ms + 1e-9 < stream_free[static_cast<size_t>(l.stream)]) {
      return fmt::format("unit {} overlaps the previous unit of stream {}", l.unit, l.stream);
    }
    stream_free[static_cast<size_t>(l.stream)] = l.predicted_finish_ms;
  }
  return "";
}

}  // namespace ios::sched::test
