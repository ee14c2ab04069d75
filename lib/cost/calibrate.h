// Calibration: fits a device profile's knobs so that the simulated cost model
// reproduces measured stage latencies (a profile database filled by
// `ios-optimize --cost measured` on a GPU). `ios-optimize MODEL --calibrate
// DB -o profile.json` runs it; docs/cost-model.md ("Calibration") describes
// what is fitted and how.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cost/device_profile.h"
#include "cost/profile_db.h"
#include "cost/simulated.h"

namespace ios::cost {

struct StageSample {
  sched::Stage stage;
  double measured_ms = 0.0;
};

// The distinct stages (by signature) the sequential, greedy and IOS
// schedulers ask about on `graph`: the stages a measured search stores.
std::vector<sched::Stage> candidate_stages(const sched::UnitGraph& graph,
                                           const DeviceProfile& profile,
                                           const SimulatedOptions& options);

// The candidates found in `db` at this math mode and batch, for the one
// measured device (device, driver, cuDNN) with the most of them.
struct DbSamples {
  std::string device;  // "NAME (driver D, cuDNN C)"; empty when nothing matched
  std::vector<StageSample> samples;
};
DbSamples samples_from_db(const sched::UnitGraph& graph, const ProfileDb& db,
                          const std::vector<sched::Stage>& candidates, ir::MathMode math,
                          int64_t batch);

// One model's measured stages: its unit graph (which must outlive the
// calibration), the options it is simulated with, and the samples.
struct ModelSamples {
  const sched::UnitGraph* graph = nullptr;
  SimulatedOptions options;
  std::vector<StageSample> samples;
};

// |predicted / measured - 1| over a set of samples.
struct FitError {
  size_t samples = 0;              // those used: measured and launching kernels
  double mean_error_before = 0.0;  // with the start profile
  double mean_error_after = 0.0;   // with the fitted one
  double max_error_after = 0.0;
};

struct CalibrationResult {
  DeviceProfile profile;            // the start profile with the fitted knobs
  std::vector<std::string> fitted;  // names of the fitted fields
  size_t samples = 0;
  double mean_error_before = 0.0;  // mean |predicted / measured - 1| with the start profile
  double mean_error_after = 0.0;
  double max_error_after = 0.0;
  int evaluations = 0;              // objective evaluations of the search
  std::vector<FitError> per_model;  // in the order of the models given
};

// Fits launch_overhead_us, event_sync_overhead_us, compute_efficiency,
// memory_efficiency, concurrency_interference (and tensor_core_efficiency
// when TF32 tensor cores are in use) by minimising the mean squared log ratio
// of predicted to measured stage latency (Nelder-Mead, deterministic). Peaks
// and the integer knobs stay as in `start`. UserError without usable samples.
CalibrationResult calibrate_profile(const sched::UnitGraph& graph, const DeviceProfile& start,
                                    const SimulatedOptions& options,
                                    const std::vector<StageSample>& samples);

// One fit over the stages of several models (one device's measurements of
// each): the objective is the mean over every usable sample, whichever model
// it belongs to; the tensor-core efficiency is fitted when any model uses
// tensor cores. A model without usable samples takes no part (its per_model
// entry counts 0 samples); UserError when too few samples remain in all.
CalibrationResult calibrate_profile(const std::vector<ModelSamples>& models,
                                    const DeviceProfile& start);

}  // namespace ios::cost
