// ExecPlan: the lowered, backend-neutral form of a schedule. One global issue
// order of steps, each on a stream: launch a kernel, record an event, or make
// the stream wait for an event. The order matters: a wait refers to the most
// recent record of its event issued before it (CUDA semantics), and issuing
// the steps in order on one thread is a valid sequential execution (the CPU
// backend does exactly that).
#pragma once

#include <string>
#include <vector>

#include "sched/schedule.h"
#include "sched/unit_graph.h"

namespace ios::exec {

// What one launch computes: one unit, or several convolutions (or matrix
// products sharing their input) merged into one (IOS operator merge;
// sched/merge.h).
struct Kernel {
  std::vector<sched::UnitId> units;
  bool merged = false;
};

struct Step {
  // kSync: the host waits until everything issued before it has completed
  // (cudaDeviceSynchronize), then issues on; it is on stream 0 and does
  // nothing there. Only StageJoin::kDeviceSync plans have it.
  enum class Kind { kLaunch, kRecord, kWait, kSync };
  Kind kind = Kind::kLaunch;
  int stream = 0;
  int kernel = -1;  // kLaunch: index into ExecPlan::kernels
  int event = -1;   // kRecord / kWait
};

struct ExecPlan {
  int num_streams = 1;
  int num_events = 0;
  std::vector<Kernel> kernels;
  std::vector<Step> steps;  // global issue order

  int count(Step::Kind kind) const;
};

// How a staged schedule with stage barriers keeps its stages apart.
enum class StageJoin {
  kEvents,      // a join and a fork of events on the device (ios's engine)
  // The host synchronizes the device after a stage (the IOS paper's engine:
  // after every stage except between two single-group stages, which share
  // stream 0, and after a single-group last stage) and issues the next
  // stage's groups on their streams without events. Streamed schedules and schedules without stage
  // barriers have no stages to join: they lower as with kEvents.
  kDeviceSync,
};

// Lowers either schedule form. The schedule must already be validated
// against the graph (sched/validate.h).
//  - staged: group i of a stage runs on stream i; a stage boundary is a join
//    (streams > 0 record, stream 0 waits) followed by a fork (stream 0 records,
//    the next stage's streams > 0 wait). Single-stream stages need neither.
//    With Barriers::kDependencies there are no joins and forks: the launches
//    keep their issue order and wait as a streamed schedule's do; a group
//    continues on the stream of its first unit's latest producer when no
//    other group of its stage took it (else the lowest free stream).
//  - streamed: units on their streams in issue order; a cross-stream
//    dependency becomes a record after the producer and a wait before the
//    consumer, skipped when an earlier wait already implies it. All streams
//    join stream 0 at the end.
ExecPlan lower(const sched::UnitGraph& graph, const sched::Schedule& schedule,
               StageJoin join = StageJoin::kEvents);

// One stage lowered as lower() lowers a one-stage schedule, into `plan`,
// reusing its buffers (the IOS search costs millions of stages). With
// kDeviceSync a stage of several groups ends in a kSync (the IOS paper's
// engine timed such a stage with the synchronization after it), a
// single-group stage does not.
void lower_stage(const sched::Stage& stage, ExecPlan& plan, StageJoin join = StageJoin::kEvents);

// Human-readable plan: per stream, its launches and event steps (ios-run --dry-run).
std::string describe(const sched::UnitGraph& graph, const ExecPlan& plan);

}  // namespace ios::exec
