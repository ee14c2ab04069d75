// How the measured cost model (measured.h) times one stage: the steps of one
// round of samples, as data. The CUDA code executes these steps one by one
// (measured.cpp); the host tests check what is queued, what is timed and
// what is flushed, and run the plan on a model of the device.
//
// What a stage's sample must reproduce is the stage inside the whole model,
// run in the launch mode the schedule will run in (sched::kLaunchModes):
//  - graph: the whole model is one CUDA graph, launched once. A stage timed
//    alone is a graph launch of its own, and an event pair around it also
//    spans the device-side gap between graph launches, which the whole model
//    pays once, not once per stage. So every graph round also times the
//    replay of an empty graph with the stage's streams (fork and join, no
//    work) and the stage's cost is the median of its samples less the median
//    of the empty ones. Replaying K copies of the stage in one graph would
//    also hide the gap, but leaves the later copies warm in L2.
//  - plain: the host issues the stage's launches one by one, as it does in
//    the whole model; what that adds is real there too, nothing subtracted.
//  - synced: a stage of several groups ends in a device synchronization by
//    the host (exec::StageJoin::kDeviceSync), so its sample is host time,
//    from an idle device to the host seeing it done. A single-group stage is
//    not synchronized after and is timed as under plain.
// Every sample starts with the L2 cache flushed (a device buffer larger than
// L2 written over, kFlushL2) and the stage's inputs written again
// (kRewriteInputs), both before the sample's first event: in the whole model
// at batch 1 the weights come from DRAM (tens of MB between two uses of a
// layer's), while a stage's inputs were just written by their producers and
// sit in L2. Without the flush every replay reads weights left in L2 by the
// one before, and weight-bound stages come out too fast. The flush and the
// rewrite also keep the device busy while the host queues the sample, and a
// round starts behind an untimed replay (kReplayAhead), so no event-timed
// sample waits for the host's submission.
//
// Plain C++: the CUDA build and lib/cuda_stub share it.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace ios::cuda {

struct TimingStep {
  enum class Kind {
    kFlushL2,        // write the L2-sized scratch buffer over (evicts weights)
    kRewriteInputs,  // write the stage's inputs again (warm, as just produced)
    kReplayAhead,    // an untimed run of the stage, to keep the device ahead of the host
    kSynchronize,    // the host waits for the device (host-timed samples start idle)
    kStart,          // the sample's start: an event on stream 0, or the host clock
    kRunStage,       // one run of the stage in the launch mode
    kRunEmpty,       // one replay of the empty graph (graph mode only)
    kStop,           // the sample's end: an event on stream 0, or the host clock
  };
  Kind kind = Kind::kFlushL2;
  int sample = -1;  // kStart/kStop: the sample (within the round) they bound
};

struct TimingPlan {
  std::string launch;           // "graph", "plain" or "synced"
  bool host_timed = false;      // samples on the host clock (kStart/kStop), else events on stream 0
  bool subtract_empty = false;  // cost = median(stage samples) - median(empty samples)
  bool sync_after = false;      // the stage's run ends in a device synchronization (kSync)
  // One round: kStart/kStop pairs bound samples 0 .. samples() - 1.
  std::vector<TimingStep> round;
  // empty[i]: sample i times the empty graph, not the stage.
  std::vector<bool> empty;
  int samples() const { return static_cast<int>(empty.size()); }
  int stage_samples() const {
    return static_cast<int>(std::count(empty.begin(), empty.end(), false));
  }
};

// The plan for a stage of `groups` groups measured for `launch` (one of
// sched::kLaunchModes), `per_round` stage samples a round.
inline TimingPlan make_timing_plan(std::string_view launch, int groups, int per_round) {
  IOS_ASSERT(launch == "graph" || launch == "plain" || launch == "synced", "launch mode '{}'",
             launch);
  using K = TimingStep::Kind;
  TimingPlan plan;
  plan.launch = std::string(launch);
  plan.sync_after = launch == "synced" && groups > 1;
  plan.host_timed = plan.sync_after;
  plan.subtract_empty = launch == "graph";
  per_round = std::max(per_round, 1);
  auto sample = [&](K run) {
    const int index = plan.samples();
    plan.round.push_back({K::kFlushL2});
    plan.round.push_back({K::kRewriteInputs});
    // A host-timed sample starts from an idle device, as a synced stage does
    // in the whole model (the host synchronized after the stage before).
    if (plan.host_timed) plan.round.push_back({K::kSynchronize});
    plan.round.push_back({K::kStart, index});
    plan.round.push_back({run});
    plan.round.push_back({K::kStop, index});
    plan.empty.push_back(run == K::kRunEmpty);
  };
  if (!plan.host_timed) plan.round.push_back({K::kReplayAhead});
  for (int i = 0; i < per_round; ++i) {
    sample(K::kRunStage);
    // Interleaved, so that both medians see the same device state (clocks).
    if (plan.subtract_empty) sample(K::kRunEmpty);
  }
  return plan;
}

// The stage's cost from the medians of its samples and of the empty graph's
// (ignored unless plan.subtract_empty). Never negative: a stage that runs
// nothing (a zero-copy concat) reads like the empty graph, give or take
// noise, and costs 0.
inline double stage_cost(const TimingPlan& plan, double stage_median_ms, double empty_median_ms) {
  if (!plan.subtract_empty) return stage_median_ms;
  return std::max(stage_median_ms - empty_median_ms, 0.0);
}

}  // namespace ios::cuda
