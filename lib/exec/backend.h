// What ios-run executes a plan on: a backend opens one session per lowered
// plan; a session runs it on given inputs, times it and traces one
// iteration. Backends are registered by name (lib/backends/registry.cpp, one
// line each) and described by traits, so the runner and the command line
// never name one: what a backend computes, how it is timed and which
// options apply to it are its traits.
//
// Adding a backend: a folder with a module that returns a BackendEntry
// (its traits and a factory), and its line in the registry.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "exec/allocations.h"
#include "exec/compare.h"
#include "exec/kernel_selection.h"
#include "exec/npy.h"
#include "exec/plan.h"
#include "exec/trace.h"
#include "ir/precision.h"
#include "sched/unit_graph.h"

namespace ios::exec {

using TensorMap = std::map<std::string, HostTensor>;

// Per timed iteration, in ms. `latency_ms` is what schedules are compared
// by (GPU compute time or wall time: the backend's traits say which);
// `end_to_end_ms` is empty or one per iteration (CUDA: host time from the
// input upload to the output download).
struct TimingSamples {
  std::vector<double> latency_ms;
  std::vector<double> end_to_end_ms;
};

struct BackendTraits {
  std::string description;  // one line, for --help
  // False: the backend predicts timing only (no outputs, inputs, checks).
  bool computes_outputs = true;
  bool traces = false;  // trace() records stream activity
  // Timing repeats: false for a deterministic prediction (--duration is
  // ignored, every iteration is the same).
  bool measured = true;
  // latency_ms is GPU compute time (measured or predicted), else wall time.
  bool gpu_compute_time = false;
  int default_warmup = 1;
  int default_iterations = 5;
  // Which options apply: the others are refused as having no effect.
  bool uses_cuda_graph = false;   // --no-cuda-graph
  bool uses_precision = false;    // --precision
  bool uses_threads = false;      // --threads
  bool uses_device_profile = false;  // --device-profile
  bool uses_conv_kernels = false;    // --conv-kernels
};

// The options a backend may use (those its traits say apply).
struct BackendOptions {
  // "graph" (a captured CUDA graph), "plain" (host launches) or "synced"
  // (host launches; the plans synchronize the device after stages: kSync).
  std::string launch = "graph";
  ir::Precision precision;         // tf32 (the default), fp32, fp16 or bf16
  int threads = 0;                 // 0: all cores
  // A profile name or file; empty: the backend's choice, which may follow
  // `schedule_device`, the device the first schedule was optimized for.
  std::string device_profile;
  std::string schedule_device;
  ConvKernels conv_kernels = ConvKernels::kLegacy;  // how convolutions run on the GPU
  std::string plan_cache;  // graph kernels: the plan cache file; empty: beside the profile database
  // Where sessions report what they allocate, by kind, while it lives (the
  // engine API's Engine::allocations()); null: nowhere. Must outlive the
  // backend and its sessions.
  AllocationCounter* allocations = nullptr;
};

// One lowered plan, ready to run.
// The device memory a session allocated for its plan, in bytes; -1 where
// the backend does not say (ios-run's comparison table, docs/cli.md).
struct AllocatedMemory {
  int64_t activations = -1;  // the arena (exec/schedule_memory.h: what the schedule reports)
  int64_t weights = -1;
  int64_t workspaces = -1;
};

class Session {
 public:
  virtual ~Session() = default;
  virtual AllocatedMemory allocated() const { return {}; }
  // Runs once; returns every graph output (empty when the backend does not
  // compute outputs).
  virtual TensorMap run(const TensorMap& inputs) = 0;
  // `iterations` timed runs after `warmup` untimed ones, on the inputs of
  // the last run().
  virtual TimingSamples time(int warmup, int iterations) = 0;
  // One traced iteration (per stream: what ran when); only when
  // traits().traces.
  virtual TraceIteration trace(const std::string& label) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // The device as reports name it ("NVIDIA H100 80GB HBM3", "CPU reference").
  virtual std::string device_name() const = 0;
  // The device name a schedule made for this device records
  // (sched::DeviceInfo::name: the GPU's name when measured, the profile's
  // when simulated); empty when schedules do not target the backend (the CPU).
  virtual std::string schedule_device_name() const { return {}; }
  // When the numbers are not measurements, what they are (printed with them
  // and in the trace); empty otherwise.
  virtual std::string prediction_note() const { return {}; }
  // --check's tolerances when the user gives none.
  virtual Tolerance default_tolerance() const = 0;
  virtual std::unique_ptr<Session> open(const ExecPlan& plan) = 0;
};

// A registered backend: its name (--backend NAME), traits and factory. The
// factory throws NoDeviceError when the backend's device is absent.
struct BackendEntry {
  std::string name;
  BackendTraits traits;
  std::function<std::unique_ptr<Backend>(const sched::UnitGraph&, const BackendOptions&)> make;
};

}  // namespace ios::exec
