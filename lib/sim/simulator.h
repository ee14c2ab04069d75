// The GPU simulator: executes a lowered ExecPlan on a model of the device, so
// that every schedule form (staged or streamed) is predicted by the same
// rules the CUDA engine runs it under: per-stream in-order issue, event
// record/wait with a cross-stream latency, a per-kernel launch overhead, host
// issue of plain launches and host synchronizations, and kernels that overlap sharing the device's
// thread-block slots and DRAM bandwidth. Deterministic.
//
// The interface is data only: the plan, the cost of every kernel when it runs
// alone (lib/cost derives these from the unit-work model and a device
// profile), and a few device limits in; a timeline out. Rules and limits:
// docs/cost-model.md ("The GPU simulator").
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "exec/plan.h"

namespace ios::sim {

// How the host submits the plan.
enum class LaunchMode {
  kGraph,  // a captured CUDA graph: every step is on the device at time 0
  // One host thread issues the steps in plan order, one CUDA call at a time;
  // at a kSync step it waits for the device (exec::StageJoin::kDeviceSync).
  kPlain,
};

// One device kernel as it behaves alone on the device.
struct KernelCost {
  double launch_us = 0.0;  // on its stream before it works (launch, ramp-up, tail); uses no SMs
  double work_us = 0.0;    // working time alone (roofline)
  double sm_share = 0.0;   // fraction of the device's thread-block slots it fills alone, (0, 1]
  double bandwidth_share = 0.0;  // fraction of the usable DRAM bandwidth it draws alone, [0, 1]
  double working_set_mb = 0.0;   // the bytes it reads and writes, in MB (cache contention)
  double total_us() const { return launch_us + work_us; }
};

struct DeviceLimits {
  int64_t max_concurrent_kernels = 128;   // kernels working at once; later ones queue (FIFO)
  double concurrency_interference = 0.0;  // extra slowdown while more than one kernel works
  // While more than one kernel works, their DRAM traffic grows by
  // cache_contention times the fraction of the L2 their working sets fill
  // together (at most 1); 0: none.
  double l2_cache_mb = 0.0;
  double cache_contention = 0.0;
  // A stream waiting on an event recorded by another stream resumes this long
  // after the recorded work completed (a stage's fork and join pay it twice).
  double event_wait_us = 0.0;
  LaunchMode mode = LaunchMode::kGraph;
  // kPlain: host time of one CUDA call (a kernel launch, an event record or a
  // stream wait). A step cannot start on its stream before the host issued it.
  double host_call_us = 0.0;
  // kPlain: a kSync returns this long after the device finished the work
  // issued before it (the host wakes up); a call's time when the device had
  // already finished.
  double host_sync_us = 0.0;
};

// Where one device kernel ran (times in us from the start of the iteration).
struct KernelSpan {
  int launch = 0;  // index into ExecPlan::kernels
  int part = 0;    // which of that launch's kernels
  int stream = 0;
  double begin_us = 0.0;  // its stream reached it: the launch overhead starts
  double start_us = 0.0;  // it started working (after the launch and any wait for a kernel slot)
  double end_us = 0.0;
};

struct Timeline {
  // When the last stream finished its last step, or the host its last
  // synchronization if that was later.
  double makespan_us = 0.0;
  std::vector<KernelSpan> kernels;    // in order of begin_us (ties: stream order)
  std::vector<double> stream_end_us;  // per stream
  // Per plan launch: when its stream reached it and when its last kernel
  // ended (equal for a launch that runs nothing).
  std::vector<double> launch_begin_us, launch_end_us;
};

// `costs[k]` are the device kernels of plan launch k, in order; empty for a
// launch that runs nothing (a zero-copy unit). An inconsistent plan (a wait
// that can never be satisfied, a kSync in a kGraph plan) is an InternalError.
Timeline simulate(const exec::ExecPlan& plan, const std::vector<std::vector<KernelCost>>& costs,
                  const DeviceLimits& limits);

// The same simulation for many plans in a row (the IOS search's stages),
// reusing its buffers so that a warm simulator does not allocate: the same
// rules and arithmetic as simulate(), so the same times. Not shareable
// between threads; one per thread.
class Simulator {
 public:
  Simulator();
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;
  // The timeline of `plan`; valid until the next call.
  const Timeline& run(const exec::ExecPlan& plan, const std::vector<std::vector<KernelCost>>& costs,
                      const DeviceLimits& limits);

 private:
  std::unique_ptr<class Simulation> simulation_;
};

}  // namespace ios::sim
