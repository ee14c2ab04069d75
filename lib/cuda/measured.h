// The measured cost model: stage latencies measured on the GPU, in the same
// engine that runs schedules (lib/cuda/engine.h), and kept in the persistent
// profile database (cost/profile_db.h).
//
// A stage is lowered like a schedule's stage (one stream per group, or one
// merged convolution) into a runtime that borrows the model's device pool
// (device_pool.h: a grow-only arena, weights uploaded once, inputs filled with
// random values on the device, cuDNN algorithm choices and workspaces kept
// across stages), run once by plain launches to validate it, and run in the
// launch mode the schedule will run in (`launch`: captured as a CUDA graph
// and replayed, or issued by plain launches, or plain launches followed by a
// device synchronization): warm-up runs, then rounds of timed samples until
// the cost moves by less than `stable_tolerance` between rounds (or
// `max_repetitions`). What a sample queues, times and flushes is the timing
// plan of cuda/timing_plan.h: L2 flushed and inputs rewritten before every
// sample, the device kept ahead of the host, and in graph mode the cost of
// an empty graph launch taken off.
// Results are keyed by device, driver, cuDNN version, precision, batch,
// launch mode and the stage's canonical signature (shapes and attributes,
// not names), so an identical stage elsewhere in the model, or in a later
// run, is measured once.
//
// Plain C++ (no CUDA types): lib/cuda_stub provides the same entry points,
// which throw NoDeviceError.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "cuda/engine.h"
#include "sched/cost_model.h"
#include "sched/unit_graph.h"

namespace ios::cuda {

struct MeasureProgress {
  int measured = 0;    // stages timed on the GPU so far
  int cache_hits = 0;  // stages answered by the profile database or this run's memo
  int expected = 0;    // stages the caller announced (expect()); 0 when unknown
  double elapsed_s = 0.0;  // time spent measuring so far
  double setup_s = 0.0;    // ... of which building stage runtimes (lowering, memory, algorithms, capture)
  double eta_s = -1.0;     // estimated time left; < 0 when unknown
};

struct MeasuredOptions {
  std::string db_path;  // empty: cost::ProfileDb::default_path()
  ir::MathMode math = ir::MathMode::kTf32;  // float32 convolutions and products
  int device = 0;
  size_t workspace_limit_bytes = size_t{256} << 20;
  // How stages' convolutions run (exec/kernel_selection.h); the profile
  // database keys its rows by the kernel selection too.
  exec::ConvKernels conv_kernels = exec::ConvKernels::kLegacy;
  // How the schedule will run (one of sched::kLaunchModes): "graph",
  // "plain" or "synced". Stages are timed so and keyed by it.
  std::string launch = "graph";
  int warmup = 5;               // untimed runs before timing
  int round = 10;               // stage samples per round
  int min_repetitions = 20;
  int max_repetitions = 400;
  double stable_tolerance = 0.01;  // relative change of the median between rounds
  bool use_database = true;        // false: measure everything, store nothing
  // Called after every stage answered (measured or cache hit). May be empty.
  std::function<void(const MeasureProgress&)> progress;
};

class MeasuredCostModel : public sched::CostModel {
 public:
  std::string name() const override { return "measured"; }
  // A stage is measured once per signature and then answered from memory
  // or the profile database.
  bool costs_follow_signatures() const override { return true; }
  // Announces how many stage_latency() calls the caller expects (for the
  // progress ETA); may be called again to revise.
  virtual void expect(int stages) = 0;
  virtual MeasureProgress progress() const = 0;
  // The device the measurements come from (for the schedule file).
  virtual const DeviceSummary& device() const = 0;
  // The launch mode stages are timed in (MeasuredOptions::launch).
  virtual const std::string& launch() const = 0;
};

// Throws NoDeviceError without a usable device. `graph` must outlive the
// model and have an IR behind it.
std::unique_ptr<MeasuredCostModel> make_measured_cost_model(const sched::UnitGraph& graph,
                                                            const MeasuredOptions& options = {});

}  // namespace ios::cuda
