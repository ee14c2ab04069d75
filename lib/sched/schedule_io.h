// The schedule file: versioned JSON (format in docs/schedule-format.md).
// Units are named by their stable ids (UnitGraph, unit_graph.h), so a file
// stays valid for the same model whatever order the importer produces.
#pragma once

#include <string>

#include "sched/schedule.h"
#include "sched/unit_graph.h"

namespace ios::sched {

inline constexpr int kScheduleFormatVersion = 1;
inline constexpr int64_t kMaxBatch = int64_t{1} << 20;  // also the CLI's --batch limit

// Serializes a schedule (must be valid for `graph`).
std::string schedule_to_json(const Schedule& schedule, const UnitGraph& graph);

// Writes atomically (core/file_io.h): an interrupted run never leaves a
// truncated schedule. Creates the folder.
void write_schedule(const std::string& path, const Schedule& schedule, const UnitGraph& graph);

// Parses and resolves unit ids against `graph`, then validates (validate.h).
// Every problem is a UserError that starts with `path` and names the field.
Schedule parse_schedule(const std::string& json_text, const std::string& path,
                        const UnitGraph& graph);
Schedule read_schedule(const std::string& path, const UnitGraph& graph);

}  // namespace ios::sched
