// What one ios-optimize run did, as one object that every report renders:
// the summary printed at the end, the --analyze table, --report-json and the
// --html page. The pipeline (optimizer.cpp) fills it phase by phase; nothing
// else assembles report text.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sched/scheduler.h"

namespace ios::optimize {

struct BlockReport {
  int index = 0;
  std::string first_unit;
  int units = 0;
  int width = 0;
  bool split_by_cap = false;
  std::string kinds;                        // "3 conv, 1 pool"
  std::optional<sched::BlockStats> search;  // absent for a block the scheduler did not report
};

// A budgeted measured search (--profile-budget, cost/budgeted.h).
struct BudgetReport {
  std::string limit;       // --profile-budget's text: "20000", "300s"
  int64_t measured = 0;    // stages the search had the GPU time
  int64_t reused = 0;      // ... found measured before (profile database)
  int64_t predicted = 0;   // distinct stages only the corrected simulator answered
  bool exhausted = false;  // the budget ran out
  int schedule_stages = 0;
  int schedule_predicted = 0;  // of the schedule's stages, those whose latency is predicted
};

// --cost measured: what the GPU timed.
struct MeasurementReport {
  int64_t measured = 0;
  double elapsed_s = 0.0;
  double setup_s = 0.0;
  int64_t cache_hits = 0;
  std::optional<BudgetReport> budget;
};

struct OptimizeReport {
  std::string model_path;
  int64_t batch = 0;
  std::string sha256;
  int units = 0;
  std::vector<BlockReport> blocks;
  int widest_units = 0, widest_width = 0;  // the widest block: by width, then size
  std::string scheduler;
  std::vector<std::pair<std::string, std::string>> params;
  std::string cost_model;  // "simulated", "measured"
  std::string cost_note;   // e.g. "predicted: GPU simulator with the 'h100' device profile"
  std::string device;
  double import_ms = 0.0;
  double search_ms = 0.0;
  double time_limit_s = 0.0;  // the search's limit; 0 = none
  int64_t states = 0, transitions = 0, stages_costed = 0;  // over all blocks
  std::optional<MeasurementReport> measurement;
  bool analyze_only = false;
  // The schedule found.
  bool staged = true;
  int stages = 0, merges = 0, streams = 1;
  // --form: what was asked, whether the staged schedule runs without its
  // stage barriers, and the simulator's latency of each form (0: not computed).
  std::string form_option = "staged";
  bool dependency_barriers = false;
  double staged_form_ms = 0.0, streamed_form_ms = 0.0;
  std::string launch;  // the launch mode the schedule was planned for (graph, plain, synced)
  double predicted_ms = 0.0;
  double sequential_ms = 0.0;  // 0: not computed (--analyze)
  std::string schedule_file;   // empty: none written (--analyze)
  // The schedule's peak device memory (exec/schedule_memory.h); absent
  // with --analyze. With --memory-limit: the limit, the live-byte bound the
  // search kept each stage within (its last repair round), and how the
  // limit was met, in words.
  std::optional<sched::MemoryInfo> memory;
  int64_t memory_limit = 0;  // 0: none
  int64_t memory_search_bound = 0;  // 0: the scheduler searched without one
  std::string memory_note;
  int max_streams = 0;  // --max-streams; 0: none
};

// How a block's search went and whose stages it kept ("complete",
// "reduced r3s4, greedy", "-" for a scheduler that does not search): the
// --analyze and --html search column.
std::string search_cell(const sched::BlockStats& s);

// "=== ios-optimize summary ===" and its lines.
std::string render_summary(const OptimizeReport& report);
// The --analyze table: one row per block, then the totals.
std::string render_analysis(const OptimizeReport& report);
// The --report-json document (format "ios-optimize-report", version 1).
std::string render_json(const OptimizeReport& report);
// "arena 12.0 MiB (live 10.5 MiB; inputs 0.6 MiB, outputs 4 KiB), weights 97.5
// MiB (merged 3.1 MiB), workspaces 2 x 1.1 MiB predicted: peak 111.2 MiB".
std::string memory_line(const sched::MemoryInfo& memory);

// The label/value rows at the top of the --html page.
std::vector<std::pair<std::string, std::string>> summary_rows(const OptimizeReport& report);

}  // namespace ios::optimize
