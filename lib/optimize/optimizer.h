// The ios-optimize pipeline: import -> units -> cost model -> scheduler ->
// schedule file, with the summary and --analyze reports. apps/ios-optimize
// only parses options into OptimizeOptions and calls run_optimize().
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/progress.h"
#include "cost/budgeted.h"
#include "cost/simulated.h"
#include "exec/kernel_selection.h"
#include "exec/plan.h"
#include "ir/precision.h"
#include "model/prepared_model.h"
#include "optimize/optimize_report.h"
#include "sched/cost_model.h"
#include "sched/schedule.h"
#include "sched/scheduler.h"
#include "sched/unit_graph.h"

namespace ios::optimize {

// --time-limit's default, in seconds of search (import, reports and files
// come on top). The IOS search of every model in onnx_models/generated takes
// under 20 s on the 2-core development machine, NASNet-A Large the longest,
// so the default leaves it room for a machine 2.5x slower, and with import
// and the reports (a few seconds on the largest models) keeps a run under a
// minute whatever the model.
inline constexpr double kDefaultTimeLimitS = 50.0;

struct OptimizeOptions {
  std::string model_path;
  std::string output_path;  // empty: next to the model
  std::string scheduler = "ios";
  std::string scheduler_params;
  int64_t batch = 0;  // 0: the model's own (must be static); fills symbolic batch dimensions
  bool rewrite_batch = false;  // --batch also replaces a static batch (onnx::ImportOptions)
  std::vector<std::string> input_shapes;  // NAME:1x3x224x224
  std::string cost = "auto";
  std::string device_profile = "h100";
  // Whether --device-profile was given. Measured searches otherwise rank
  // stages with the shipped profile of the GPU at hand (profile_for_device).
  bool device_profile_given = false;
  std::string profile_db;
  // --conv-kernels: how the measured stages' convolutions run (and which
  // profile-database rows they may reuse: exec/kernel_selection.h).
  exec::ConvKernels conv_kernels = exec::ConvKernels::kLegacy;
  // --profile-budget: how much of a searching scheduler's search the GPU
  // measures (cost/budgeted.h): "N" stages, "Ns" seconds of measuring, or
  // "all" (every stage the search considers, no simulator).
  std::string profile_budget = std::to_string(cost::kDefaultProfileBudget);
  // --precision: tf32 or fp32 (a float32 model's math), fp16 or bf16
  // (converted, or a typed model's own); none: tf32, or a typed model's own
  // 16-bit type (model::PrecisionRequest).
  std::optional<ir::Precision> precision;
  std::vector<std::string> keep_fp32;  // --keep-fp32 NODE|OPTYPE,...
  bool half_io = false;                // --half-io
  std::string write_onnx;  // --write-onnx: the converted graph as ONNX (onnx/typed_export.h)
  int max_block_units = 40;
  double max_block_log10_bound = 9.0;
  // Seconds the search may take (searching schedulers only); 0 = no limit.
  // Without --time-limit, a search with measured costs has none: its
  // --profile-budget bounds the measuring.
  double time_limit_s = kDefaultTimeLimitS;
  bool time_limit_given = false;
  // How a staged schedule's stages are separated when it runs: "staged"
  // (barriers), "streamed" (only true dependencies: sched::Barriers) or
  // "best" (whichever the simulator predicts faster).
  std::string form = "staged";
  // How the schedule will run, planned for by the simulator and recorded in
  // the schedule: "graph" (a captured CUDA graph, ios-run's default),
  // "plain" (host launches, ios-run --no-cuda-graph) or "synced" (host
  // launches and a device synchronization after each stage, as the IOS
  // paper's engine ran; ios-run --launch synced).
  std::string launch = "graph";
  // Threads the search may use (searching schedulers, simulated costs); 0:
  // one per core. The schedule does not depend on it.
  int threads = 0;
  std::string report_json;  // also write the summary and per-block statistics as JSON
  std::string dot_path;     // also write a picture of the schedule (DOT, or SVG for *.svg)
  std::string html_path;    // also write a page with the summary, picture and block table
  // Fit the --device-profile's knobs to this profile database's measured
  // stages of the model and write the profile to output_path (no schedule).
  std::string calibrate_db;
  // With calibrate_db: more databases to read (--calibrate-db) and more
  // models whose measured stages join the one fit (--calibrate-model); each
  // model's stages are looked up in every database, at the same --batch and
  // --precision.
  std::vector<std::string> calibrate_dbs;
  std::vector<std::string> calibrate_models;
  // Outputs: "-" is standard output. Without `force`, an output that names
  // the model, or an existing file that is not a schedule (for report_json:
  // not a report), is refused.
  // --memory-limit: the most device memory the schedule's peak may take
  // (exec/schedule_memory.h), as given ("512MiB"); empty: no limit.
  std::string memory_limit;
  // --max-streams: the most streams (a staged stage's groups, a streamed
  // schedule's streams); 0: no bound. The smaller of it and the scheduler's
  // own s or streams parameter wins.
  int max_streams = 0;
  bool force = false;
  bool analyze = false;
  bool verbose = false;
  bool quiet = false;
};

// The cost model the options ask for, and the device it stands for.
struct CostChoice {
  // A budgeted measured search's parts: the GPU's measured model and the
  // simulator that ranks the stages. `model` refers to both, so they are
  // declared before it (and destroyed after it).
  std::unique_ptr<sched::CostModel> measured;
  std::unique_ptr<cost::SimulatedCostModel> ranking;
  std::unique_ptr<sched::CostModel> model;
  sched::DeviceInfo device;
  std::string note;  // e.g. "predicted (no GPU)": printed in the summary
};
// --profile-budget's text ("20000", "300s", "all") as budget options;
// UserError for anything else. "all" is max_stages < 0 with no seconds.
cost::BudgetOptions parse_profile_budget(const std::string& text);

// The shipped device profile of a GPU by its CUDA device name ("NVIDIA
// H100 80GB HBM3" -> "h100"), or `fallback` for a GPU without one.
std::string profile_for_device(const std::string& device_name, const std::string& fallback);

// With `progress`, the measured model reports stages measured on that line
// (the search's progress shares it). With measured costs and a searching
// scheduler (options.scheduler) under a --profile-budget other than "all",
// the model is a cost::BudgetedCostModel over the GPU and the simulator.
// `precision`: the prepared model's (PrecisionInfo::value), whose float32
// math the cost models use (float32 regions of fp16/bf16 graphs run FP32).
CostChoice make_cost_model(const sched::UnitGraph& units, const OptimizeOptions& options,
                           ir::Precision precision, ProgressLine* progress = nullptr);

// Runs a scheduler by registry name with "k=v,..." parameters and fills the
// schedule's metadata. Under the simulated cost model the schedule's
// predicted latency is then that of its whole lowered plan on the simulator
// (predict_by_simulation), whatever the scheduler estimated.
// `progress`, when set, is told after each block of a searching scheduler.
// `time_limit_s` bounds a searching scheduler's search (0 = no limit);
// `threads` (0: one per core) search its blocks in parallel.
// `bounds` bound a searching scheduler's stages: live bytes and
// workspaces per stage, and streams (Scheduler::set_memory_bound,
// set_max_streams); zero: none.
struct SearchBounds {
  int64_t memory_bound = 0;
  int max_streams = 0;
  // A schedule of the same scheduler, parameters and streams under a looser
  // bound, whose blocks that fit are kept (sched::Scheduler::set_prior).
  const sched::StagedSchedule* prior = nullptr;
};
sched::Schedule schedule_model(const model::PreparedModel& prepared, const std::string& scheduler,
                               const std::string& params, const CostChoice& cost,
                               sched::SearchStats& stats, sched::BlockProgress progress = {},
                               double time_limit_s = 0.0, int threads = 1, SearchBounds bounds = {});

// --memory-limit's text as bytes: an integer or decimal number, optionally
// followed by B, KiB, MiB or GiB (binary units; "512MiB", "1.5 GiB").
// UserError for anything else, and for a limit that is not positive or
// not finite.
int64_t parse_memory_limit(const std::string& text);

// The scheduler parameters with --max-streams applied: the ios family's
// and dos's s, lios's streams become the smaller of theirs and
// `max_streams` (s = 0, unlimited, becomes max_streams). Sequential uses one
// stream already. UserError for greedy and nimble, whose algorithms fix
// their streams. Returns `params` unchanged when nothing is lowered.
std::string apply_max_streams(const std::string& scheduler, const std::string& params, int max_streams);

// Replaces a schedule's predictions by the simulation of its whole lowered
// plan: the predicted latency, and for a streamed schedule each launch's
// predicted start/finish and each block's latency in `stats`. Every scheduler
// is thereby compared by one model (contention and event waits included).
void predict_by_simulation(const cost::SimulatedCostModel& model, sched::Schedule& schedule,
                           sched::SearchStats& stats);

// The fastest schedule `scheduler` finds whose peak device memory
// (exec/schedule_memory.h, lowered with `join`) is at most `limit` bytes
// (docs/schedulers.md, *Memory*): the searching schedulers search with a
// live-bytes bound per stage down a ladder of bounds, streams and merges that
// depends on the model alone (so a looser limit never gets a slower
// schedule), within `time_limit_s` (0: none), keep the fastest schedule
// whose placed peak fits, and fall back to the sequential schedule where it
// fits and is faster; lios lowers its streams; the others are checked.
// UserError naming the smallest peak found when nothing fits.
struct LimitedSearch {
  sched::Schedule schedule;
  sched::SearchStats stats;
  int64_t bound = 0;  // the kept schedule's search bound (live bytes per stage); 0: none
  int rounds = 0;    // the kept schedule's search, counting the unconstrained one first
  std::string note;  // how the limit was met, in words
};
LimitedSearch search_within_memory(const model::PreparedModel& prepared, const std::string& scheduler,
                                   const std::string& params, const CostChoice& cost, int64_t limit,
                                   int max_streams, exec::StageJoin join, double time_limit_s,
                                   int threads, const sched::BlockProgress& progress);

// ios-optimize's search without its files and printing (the engine API's
// ios::Schedule::optimize()): the same phases as run_optimize, from the check of the
// request to the report, with no output declared. `options` must name no
// output file (output_path, report_json, dot_path, html_path, calibrate_db
// empty) and ask for no --analyze.
struct Optimization {
  std::unique_ptr<model::PreparedModel> prepared;
  sched::Schedule schedule;
  OptimizeReport report;
};
Optimization optimize_model(const OptimizeOptions& options);

// The whole of ios-optimize; returns the exit code.
int run_optimize(const OptimizeOptions& options, std::ostream& out);

// Whether the registered scheduler `name` searches (honours --time-limit);
// UserError for an unknown name.
bool scheduler_searches(const std::string& name);

// --list-schedulers text.
std::string describe_schedulers();

// Options that would do nothing with the rest of the request (a profile
// database with simulated costs, a time limit for a scheduler that does not
// search, ...) are refused, never ignored: UserError "OPTION has no effect
// CONTEXT: WHY" for the first one. `given("--profile-db")` says whether the
// caller set that option: ios-optimize, on its command line;
// ios::Schedule::optimize, to other than its default. Both call this, so
// both refuse the same requests with the same message.
void reject_options_without_effect(const OptimizeOptions& options,
                                   const std::function<bool(const std::string& option)>& given);

}  // namespace ios::optimize
