// The schedule file: versioned JSON (format in docs/schedule-format.md).
// Units are named by their stable ids (UnitGraph, unit_graph.h), so a file
// stays valid for the same model whatever order the importer produces.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "sched/schedule.h"
#include "sched/unit_graph.h"

namespace ios::sched {

inline constexpr int kScheduleFormatVersion = 1;
inline constexpr int64_t kMaxBatch = int64_t{1} << 20;  // also the CLI's --batch limit
// A schedule file larger than this is refused before it is parsed. A schedule
// takes about 40 bytes per unit: 64 MiB is over a million units.
inline constexpr uint64_t kMaxScheduleFileBytes = uint64_t{64} << 20;

// Serializes a schedule (must be valid for `graph`).
std::string schedule_to_json(const Schedule& schedule, const UnitGraph& graph);

// A schedule's memory as the file's `memory` object records it (without the
// limit, which only a search under one has); --report-json shows the same.
nlohmann::json memory_to_json(const MemoryInfo& memory);

// The schedule file's "precision" object (docs/schedule-format.md).
nlohmann::json precision_to_json(const PrecisionInfo& precision);

// Writes atomically (core/file_io.h): an interrupted run never leaves a
// truncated schedule. Creates the folder.
void write_schedule(const std::string& path, const Schedule& schedule, const UnitGraph& graph);

// Reading happens in two steps so that a file is read and parsed once: the
// document (JSON syntax, format and version; the file at most
// kMaxScheduleFileBytes) needs no model, and tells which batch to import the
// model at; the schedule is then resolved against the model's units.
// Every problem is a UserError that starts with `path` and names the field.
nlohmann::json parse_schedule_document(const std::string& json_text, const std::string& path);
nlohmann::json read_schedule_document(const std::string& path);

// The batch the document was made for (model.batch, checked).
int64_t schedule_batch(const nlohmann::json& document, const std::string& path);

// The document's "precision" object, checked (UserError naming `path` and
// the field); std::nullopt when the file has none.
std::optional<PrecisionInfo> schedule_precision(const nlohmann::json& document,
                                                const std::string& path);

// Resolves unit ids against `graph`, then validates (validate.h).
Schedule schedule_from_document(const nlohmann::json& document, const std::string& path,
                                const UnitGraph& graph);

// Both steps at once.
Schedule parse_schedule(const std::string& json_text, const std::string& path,
                        const UnitGraph& graph);
Schedule read_schedule(const std::string& path, const UnitGraph& graph);

}  // namespace ios::sched
