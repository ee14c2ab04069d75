// A picture of a schedule: Graphviz DOT of the unit DAG, one cluster per
// stage (staged schedules: groups coloured, merge stages marked) or per
// stream (streamed schedules: launches numbered in issue order).
#pragma once

#include <string>
#include <string_view>

#include "sched/schedule.h"
#include "sched/unit_graph.h"

namespace ios::sched {

// The DOT text; `title` labels the graph (e.g. the schedule file).
std::string schedule_to_dot(const Schedule& schedule, const UnitGraph& graph,
                            std::string_view title);

// Renders DOT text to SVG with Graphviz's `dot`. UserError naming
// `for_path` when `dot` is not installed; InternalError when it fails.
std::string render_svg(const std::string& dot, const std::string& for_path);

// Writes the picture to `path` atomically: DOT text, or SVG rendered by
// Graphviz's `dot` when `path` ends in ".svg" (UserError naming the path when
// `dot` is missing or fails).
void write_schedule_picture(const std::string& path, const Schedule& schedule,
                            const UnitGraph& graph, std::string_view title);

}  // namespace ios::sched
