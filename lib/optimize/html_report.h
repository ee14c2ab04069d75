// ios-optimize --html: one self-contained page with the summary, the
// picture of the schedule (SVG drawn by Graphviz) and the per-block table,
// rendered from the run's OptimizeReport.
#pragma once

#include <string>

#include "optimize/optimize_report.h"
#include "sched/schedule.h"
#include "sched/unit_graph.h"

namespace ios::optimize {

// Writes the page atomically. Needs Graphviz's `dot` (sched::GraphvizMissing,
// a UserError naming `path`, without it); a model too large to draw, or a
// drawing that fails or passes Graphviz's limits, leaves a note in the
// picture's place.
void write_html_report(const std::string& path, const OptimizeReport& report,
                       const sched::Schedule& schedule, const sched::UnitGraph& units);

}  // namespace ios::optimize
