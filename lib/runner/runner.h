// The ios-run pipeline: load a model and schedules, validate, lower, and
// either print the plans (--dry-run) or execute them on a backend (CUDA or the
// CPU reference), time them interleaved, check outputs and report; or predict
// them with the GPU simulator (--backend sim), which executes nothing.
// apps/ios-run only parses options into RunOptions and calls run().
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "exec/kernel_selection.h"
#include "ir/precision.h"

namespace ios::runner {

// RunOptions::rtol and atol's "the backend's tolerance".
inline constexpr double kBackendTolerance = -1.0;

struct RunOptions {
  std::string model_path;
  std::vector<std::string> schedule_paths;  // FILE or NAME=FILE; none: the sequential schedule
  bool dry_run = false;
  // A registered backend (backends/registry.h); empty: the default, the first
  // registered.
  std::string backend;
  // For a backend that simulates a device: the device profile; empty: its
  // choice (the first schedule's device when it names a shipped profile).
  std::string device_profile;
  // Input shapes: with neither batch nor input_shapes, those the first
  // schedule records (the model's own without a schedule).
  int64_t batch = 0;
  bool rewrite_batch = false;  // batch also replaces a static batch (onnx::ImportOptions)
  std::vector<std::string> input_shapes;
  bool force = false;            // accept schedules made for another model file
  // Run schedules made for another batch at this one (the IOS paper's
  // Table 3 experiment); the report marks each.
  bool retarget = false;
  int warmup = -1;               // -1: the backend's default
  int iterations = -1;           // -1: the backend's default
  double duration_s = 0.0;       // keep timing at least this long
  bool check = false;
  std::vector<std::string> references;  // NAME=file.npy or file.npy (single output)
  // Tolerances of --check; kBackendTolerance: the backend's, by precision
  // (docs/cli.md). Any other negative or NaN value is refused.
  double rtol = kBackendTolerance;
  double atol = kBackendTolerance;
  std::vector<std::string> inputs;      // NAME=file.npy or file.npy (single input)
  uint64_t seed = 0;
  std::string output_dir;
  std::string export_times;
  std::string trace;
  std::string dot_path;  // a picture of the (single) schedule: DOT, or SVG for *.svg
  // "graph" (a captured CUDA graph), "plain" (host launches) or "synced"
  // (host launches, and the host synchronizes the device after each stage
  // of a staged schedule, as the IOS paper's engine did): the values of
  // ios-optimize --launch and of a schedule's scheduler.launch.
  std::string launch = "graph";
  // tf32, fp32, fp16 or bf16; none: the precision each schedule records
  // (engine::ShapeRequest), tf32 without one.
  std::optional<ir::Precision> precision;
  int threads = 0;  // for a backend that uses threads; 0: all cores
  // How convolutions run on the GPU (--conv-kernels; exec/kernel_selection.h).
  exec::ConvKernels conv_kernels = exec::ConvKernels::kLegacy;
  std::string plan_cache;  // --plan-cache; empty: plans.sqlite beside the profile database
  bool verbose = false;
  bool quiet = false;
};

// Returns the exit code (0, or 4 when --check found a mismatch); throws
// ios::Error for everything else.
int run(const RunOptions& options, std::ostream& out);

}  // namespace ios::runner
