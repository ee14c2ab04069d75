// trtexec-style latency reports for ios-run: a summary block per schedule, a
// comparison table of several schedules, and a JSON export of per-iteration
// timings (--export-times FILE).
//
// Export format (JSON, version 1):
//   {
//     "format": "ios-times", "version": 1,
//     "runs": [ {
//       "name": "ios",                       // schedule name as shown in the table
//       "schedule_file": "m.ios.json",       // "" when none (e.g. a built-in sequential run)
//       "backend": "cuda",                   // "cuda", "cpu" or "sim"
//       "device": "NVIDIA H100 80GB HBM3",
//       "batch": 1,
//       "warmup_iterations": 20,
//       "started_at": "2025-01-31T12:00:00.123Z",  // UTC wall clock of the first timed iteration
//       "latency_metric": "gpu_compute",     // what latency_ms is: "gpu_compute" (CUDA), "wall" (CPU)
//                                            // or "predicted_gpu_compute" (the simulator; nothing ran)
//       "summary": { "count", "min_ms", "max_ms", "mean_ms", "median_ms", "p90_ms", "p95_ms",
//                    "p99_ms", "stddev_ms", "cv", "throughput_qps" },
//       "end_to_end_summary": { ...the same keys... },   // only when end-to-end was measured
//       "iterations": [ { "index": 0, "start_ms": 0.0, "latency_ms": 0.81, "end_to_end_ms": 0.90 }, ... ]
//     } ]
//   }
// On the CUDA backend "latency_ms" is the GPU compute time of the iteration
// (events between iterations queued back to back) and "end_to_end_ms" the
// host time of a separate iteration on an idle GPU, its input upload and
// output download included (cuda/engine.h, TimingSamples); the comparison
// table uses the former.
// "start_ms" (host time of the iteration's start relative to the first timed
// iteration) is present only when the backend recorded it. The file is
// written atomically: a temporary file next to it, then a rename.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "exec/stats.h"
#include "ir/precision.h"

namespace ios::exec {

// The timings of one schedule.
struct TimedRun {
  std::string name;
  std::string schedule_file;
  std::string backend;
  std::string device;
  int64_t batch = 1;
  // The precision the run computes at: tf32, fp32, fp16 or bf16 (none:
  // unknown). The summary's title names a 16-bit one.
  std::optional<ir::Precision> precision;
  int64_t warmup_iterations = 0;
  int64_t started_at_unix_ms = 0;    // 0: unknown (exported as "")
  // Per timed iteration: GPU compute time on the CUDA backend, wall time on
  // the CPU. Schedules are compared by this.
  std::vector<double> latencies_ms;
  bool gpu_compute = false;          // latencies_ms is GPU compute time
  bool predicted = false;            // ... predicted by the GPU simulator, not measured
  std::vector<double> end_to_end_ms; // empty, or one per iteration (CUDA: input upload to output download)
  std::vector<double> start_ms;      // empty, or one per iteration
  // Why these numbers may not be what the schedule was made for (another
  // batch, device or launch mode), one sentence each; printed as [W] lines.
  std::vector<std::string> warnings;
  // Device memory: what the backend allocated for the plan (-1: it does not
  // say), and the peak the schedule file records (-1: an older file, or the
  // built-in sequential schedule before it is accounted).
  int64_t allocated_activation_bytes = -1;
  int64_t allocated_total_bytes = -1;  // activations, weights and workspaces, where all are known
  int64_t schedule_peak_bytes = -1;
};

struct ReportOptions {
  double cv_warning = 0.10;  // warn when the coefficient of variation exceeds this
};

// The summary block of one run, lines ending in '\n':
//   === Performance summary: ios (cuda, batch 1, 200 iterations) ===
//   Throughput: 1234.56 qps
//   Latency: min = 0.7811 ms, max = ..., mean = ..., median = ..., percentile(90%) = ...,
//            percentile(95%) = ..., percentile(99%) = ...   (one line; "GPU Compute Time:" when
//            gpu_compute)
//   Latency stddev = 0.0123 ms, coefficient of variation = 1.52%
//   End-to-end Host Latency: min = ..., mean = ..., median = ..., percentile(99%) = ...  (when measured)
// plus a line starting "[W] " when cv > options.cv_warning.
std::string format_summary(const TimedRun& run, const LatencyStats& stats,
                           const ReportOptions& options = {});

// A table with one row per run (name, mean, median, p99, speed-up of the mean
// against the first run; then, where known, the activation arena the
// backend allocated and the schedule's recorded peak, in MiB) and a final
// verdict line naming the fastest run.
std::string format_comparison(const std::vector<TimedRun>& runs);

// The export document (see above) as text.
std::string times_json(const std::vector<TimedRun>& runs);

// Writes times_json(runs) to `path` atomically; UserError naming the path on failure.
void export_times(const std::filesystem::path& path, const std::vector<TimedRun>& runs);


}  // namespace ios::exec
