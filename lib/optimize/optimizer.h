// The ios-optimize pipeline: import -> units -> cost model -> scheduler ->
// schedule file, with the summary and --analyze reports. apps/ios-optimize
// only parses options into OptimizeOptions and calls run_optimize().
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "onnx/importer.h"
#include "sched/schedule.h"
#include "sched/scheduler.h"
#include "sched/unit_graph.h"

namespace ios::optimize {

struct OptimizeOptions {
  std::string model_path;
  std::string output_path;  // empty: next to the model
  std::string scheduler = "ios";
  std::string scheduler_params;
  int64_t batch = 0;  // 0: the model's own (must be static)
  std::vector<std::string> input_shapes;  // NAME:1x3x224x224
  std::string cost = "auto";
  std::string device_profile = "h100";
  std::string profile_db;
  std::string precision = "tf32";
  int max_block_units = 40;
  double max_block_log10_bound = 9.0;
  std::string report_json;  // also write the summary and per-block statistics as JSON
  // Outputs: "-" is standard output. Without `force`, an output that names
  // the model, or an existing file that is not a schedule (for report_json:
  // not a report), is refused.
  bool force = false;
  bool analyze = false;
  bool verbose = false;
  bool quiet = false;
};

// A model ready to schedule: the imported IR and its unit graph. The unit
// graph points into `model.graph`, so this is neither copied nor moved.
struct PreparedModel {
  PreparedModel() = default;
  PreparedModel(PreparedModel&&) = delete;  // `units` points into `model.graph`
  onnx::ImportedModel model;
  std::unique_ptr<sched::UnitGraph> units;
  sched::ModelInfo info() const;
};

// Imports and forms units. `input_shapes` entries are NAME:DxDxD.
std::unique_ptr<PreparedModel> prepare_model(const std::string& path, int64_t batch,
                                             const std::vector<std::string>& input_shapes,
                                             const sched::FormationOptions& formation = {});

// The cost model the options ask for, and the device it stands for.
struct CostChoice {
  std::unique_ptr<cost::CostModel> model;
  sched::DeviceInfo device;
  std::string note;  // e.g. "predicted (no GPU)": printed in the summary
};
CostChoice make_cost_model(const sched::UnitGraph& units, const OptimizeOptions& options);

// Runs a scheduler by registry name with "k=v,..." parameters and fills the
// schedule's metadata.
sched::Schedule schedule_model(const PreparedModel& prepared, const std::string& scheduler,
                               const std::string& params, const CostChoice& cost,
                               sched::SearchStats& stats);

// The whole of ios-optimize; returns the exit code.
int run_optimize(const OptimizeOptions& options, std::ostream& out);

// --list-schedulers text.
std::string describe_schedulers();

}  // namespace ios::optimize
