// A picture of a schedule: Graphviz DOT of the unit DAG, one cluster per
// stage (staged schedules: groups coloured, merge stages marked) or per
// stream (streamed schedules: launches numbered in issue order).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"
#include "sched/schedule.h"
#include "sched/unit_graph.h"

namespace ios::sched {

// The DOT text; `title` labels the graph (e.g. the schedule file).
std::string schedule_to_dot(const Schedule& schedule, const UnitGraph& graph,
                            std::string_view title);

// Drawing SVG needs Graphviz's `dot`, which is not installed.
class GraphvizMissing : public UserError {
 public:
  using UserError::UserError;
};

// SVG pictures are drawn for at most this many units: Graphviz's layout
// grows faster than linearly (a 10,000-unit chain takes about a minute and
// 2.7 GB), and such a picture is unreadable anyway.
inline constexpr int64_t kMaxSvgUnits = 4000;

// Refuses (UserError naming `option` and `path`) an SVG picture of a model
// over kMaxSvgUnits units: checked before the search, not after it.
void check_picture_size(std::string_view option, const std::string& path, int64_t units);

// Renders DOT text to SVG with Graphviz's `dot`, bounded in time (60 s, or
// IOS_DOT_TIME_LIMIT_S), memory (2 GiB) and output (512 MiB). UserError
// naming `for_path` when `dot` fails or passes a limit, GraphvizMissing when
// it is not installed.
std::string render_svg(const std::string& dot, const std::string& for_path);

// Writes the picture to `path` atomically: DOT text, or SVG rendered by
// Graphviz's `dot` when `path` ends in ".svg" (UserError naming the path when
// `dot` is missing or fails).
void write_schedule_picture(const std::string& path, const Schedule& schedule,
                            const UnitGraph& graph, std::string_view title);

}  // namespace ios::sched
