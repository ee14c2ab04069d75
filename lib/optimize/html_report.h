// ios-optimize --html: one self-contained page with the summary, the
// picture of the schedule (SVG drawn by Graphviz) and the per-block table.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sched/schedule.h"
#include "sched/scheduler.h"
#include "sched/unit_graph.h"

namespace ios::optimize {

struct HtmlReport {
  std::string title;                                         // e.g. the schedule file
  std::vector<std::pair<std::string, std::string>> summary;  // label, value
};

// Writes the page atomically. Needs Graphviz's `dot` (sched::GraphvizMissing,
// a UserError naming `path`, without it); a model too large to draw, or a
// drawing that fails or passes Graphviz's limits, leaves a note in the
// picture's place.
void write_html_report(const std::string& path, const HtmlReport& report,
                       const sched::Schedule& schedule, const sched::UnitGraph& units,
                       const sched::SearchStats& stats);

}  // namespace ios::optimize
