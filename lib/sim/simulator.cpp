#include "sim/simulator.h"

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace ios::sim {
namespace {

using exec::Step;

// Work left below this (in solo microseconds) counts as done: the fluid
// updates subtract floating-point products.
constexpr double kWorkEps = 1e-9;
// issued_ of a step the host has not reached yet (it waits at a kSync).
constexpr double kNotIssued = std::numeric_limits<double>::infinity();

// Where a stream is. kStep: about to execute its current step (from part
// `part` of a launch), not before `ready_at`. kLaunching: the current kernel's
// launch overhead runs until `ready_at`. kQueued: launched, waiting for a
// kernel slot. kWorking: `remaining` solo microseconds of work left.
enum class Phase { kStep, kLaunching, kQueued, kWorking, kDone };

struct StreamState {
  size_t pos = 0;  // current step: stream_steps_[pos], up to `end`
  size_t end = 0;
  int part = 0;  // current kernel of a launch step
  Phase phase = Phase::kStep;
  double ready_at = 0.0;
  double remaining = 0.0;
  int span = -1;  // the current kernel's entry in Timeline::kernels
};

}  // namespace

// One plan's simulation (simulate() and Simulator run it).
class Simulation {
 public:
  // Sets up `plan` from the start, reusing the buffers of earlier plans.
  void reset(const exec::ExecPlan& plan, const std::vector<std::vector<KernelCost>>& costs,
             const DeviceLimits& limits) {
    plan_ = &plan;
    costs_ = &costs;
    limits_ = &limits;
    IOS_ASSERT(costs.size() == plan.kernels.size(), "{} kernel costs for {} plan launches",
               costs.size(), plan.kernels.size());
    IOS_ASSERT(plan.num_streams >= 1, "a plan needs at least one stream");
    IOS_ASSERT(limits.max_concurrent_kernels >= 1, "max_concurrent_kernels must be >= 1");
    IOS_ASSERT(limits.cache_contention == 0.0 || limits.l2_cache_mb > 0.0,
               "cache contention needs the L2 size");
    streams_.assign(static_cast<size_t>(plan.num_streams), StreamState{});
    // Each stream's steps in issue order, as one array (counting sort by stream).
    std::vector<size_t>& count = count_;
    count.assign(streams_.size() + 1, 0);
    for (const Step& step : plan.steps) {
      IOS_ASSERT(step.stream >= 0 && step.stream < plan.num_streams, "a step is on stream {} of {}",
                 step.stream, plan.num_streams);
      ++count[static_cast<size_t>(step.stream) + 1];
    }
    for (size_t s = 0; s < streams_.size(); ++s) {
      count[s + 1] += count[s];
      streams_[s].pos = count[s];
      streams_[s].end = count[s + 1];
    }
    stream_steps_.resize(plan.steps.size());
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      stream_steps_[count[static_cast<size_t>(plan.steps[i].stream)]++] = static_cast<int>(i);
    }
    queue_.clear();
    queue_.reserve(streams_.size());
    queue_head_ = 0;
    working_ = 0;
    now_ = 0.0;
    timeline_.makespan_us = 0.0;
    timeline_.kernels.clear();
    timeline_.stream_end_us.assign(streams_.size(), 0.0);
    timeline_.launch_begin_us.assign(plan.kernels.size(), 0.0);
    timeline_.launch_end_us.assign(plan.kernels.size(), 0.0);
    timeline_.kernels.reserve(plan.kernels.size());

    // A wait refers to the most recent record of its event issued before it
    // (CUDA semantics); a wait before any record is a no-op.
    std::vector<int>& last_record = last_record_;
    last_record.assign(static_cast<size_t>(plan.num_events), -1);
    bound_record_.assign(plan.steps.size(), -1);
    record_done_.assign(plan.steps.size(), -1.0);
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      const Step& step = plan.steps[i];
      if (step.kind == Step::Kind::kLaunch) {
        IOS_ASSERT(step.kernel >= 0 && static_cast<size_t>(step.kernel) < plan.kernels.size(),
                   "step {} launches kernel {} of {}", i, step.kernel, plan.kernels.size());
      } else if (step.kind == Step::Kind::kSync) {
        IOS_ASSERT(limits.mode == LaunchMode::kPlain,
                   "step {}: a host synchronization in a plan captured as a CUDA graph", i);
      } else {
        IOS_ASSERT(step.event >= 0 && step.event < plan.num_events, "step {} uses event {} of {}",
                   i, step.event, plan.num_events);
        if (step.kind == Step::Kind::kRecord)
          last_record[static_cast<size_t>(step.event)] = static_cast<int>(i);
        if (step.kind == Step::Kind::kWait)
          bound_record_[i] = last_record[static_cast<size_t>(step.event)];
      }
    }
    issued_.assign(plan.steps.size(), kNotIssued);
    host_pos_ = 0;
    host_time_ = 0.0;
    advance_host();
  }

  // Runs the plan given to reset(); the timeline stays here until the next reset.
  const Timeline& run() {
    for (;;) {
      settle();
      const double slowdown = current_slowdown();
      const double next = next_event(slowdown);
      if (next == std::numeric_limits<double>::infinity()) break;
      for (StreamState& st : streams_) {
        if (st.phase != Phase::kWorking) continue;
        // The kernels that define `next` finish exactly then (no rounding
        // residue that could stall the clock on long timelines).
        if (now_ + st.remaining * slowdown <= next) {
          st.remaining = 0.0;
        } else {
          st.remaining -= (next - now_) / slowdown;
        }
      }
      now_ = next;
    }
    for (size_t s = 0; s < streams_.size(); ++s) {
      const StreamState& st = streams_[s];
      IOS_ASSERT(st.phase == Phase::kDone,
                 "the plan deadlocks: stream {} waits forever at step {} (an event wait whose "
                 "record never completes)",
                 s, st.pos < st.end ? stream_steps_[st.pos] : -1);
    }
    IOS_ASSERT(queue_head_ == queue_.size() && working_ == 0,
               "simulation ended with {} queued, {} working kernels", queue_.size() - queue_head_,
               working_);
    IOS_ASSERT(host_pos_ == plan_->steps.size(), "the host stopped at step {} of {}", host_pos_,
               plan_->steps.size());
    timeline_.makespan_us = std::max(
        host_time_, *std::max_element(timeline_.stream_end_us.begin(), timeline_.stream_end_us.end()));
    return timeline_;
  }

  Timeline take() { return std::move(timeline_); }

 private:
  const KernelCost& current_kernel(const StreamState& st) const {
    const Step& step = plan_->steps[static_cast<size_t>(stream_steps_[st.pos])];
    return (*costs_)[static_cast<size_t>(step.kernel)][static_cast<size_t>(st.part)];
  }

  // The host issues steps in plan order: with a CUDA graph all at time 0;
  // with plain launches one call at a time, and at a kSync only once the
  // device has finished every step issued before it. Returns whether it
  // issued any.
  bool advance_host() {
    const size_t start = host_pos_;
    const std::vector<Step>& steps = plan_->steps;
    for (; host_pos_ < steps.size(); ++host_pos_) {
      const Step& step = steps[host_pos_];
      if (limits_->mode == LaunchMode::kGraph) {
        issued_[host_pos_] = 0.0;
        continue;
      }
      if (step.kind == Step::Kind::kSync) {
        if (!device_finished_before(host_pos_)) break;
        host_time_ = std::max(host_time_ + limits_->host_call_us, now_ + limits_->host_sync_us);
        issued_[host_pos_] = host_time_;
        continue;
      }
      const size_t calls =
          step.kind == Step::Kind::kLaunch ? (*costs_)[static_cast<size_t>(step.kernel)].size() : 1;
      issued_[host_pos_] = host_time_ + limits_->host_call_us;  // the step's first call has returned
      host_time_ += static_cast<double>(calls) * limits_->host_call_us;
    }
    return host_pos_ != start;
  }

  // Whether every stream has completed its steps issued before step `i`.
  bool device_finished_before(size_t i) const {
    for (const StreamState& st : streams_) {
      if (st.pos != st.end && static_cast<size_t>(stream_steps_[st.pos]) < i) return false;
    }
    return true;
  }

  // Applies every transition possible at `now_` until none is left: steps
  // that take no time, launches that ended, kernels that finished, the
  // host's synchronizations, and queued kernels admitted to free slots.
  void settle() {
    bool changed = true;
    while (changed) {
      changed = false;
      for (size_t s = 0; s < streams_.size(); ++s) changed |= advance(s);
      changed |= advance_host();
      while (queue_head_ < queue_.size() &&
             working_ < static_cast<size_t>(limits_->max_concurrent_kernels)) {
        StreamState& st = streams_[queue_[queue_head_++]];
        st.phase = Phase::kWorking;
        st.remaining = current_kernel(st).work_us;
        timeline_.kernels[static_cast<size_t>(st.span)].start_us = now_;
        ++working_;
        changed = true;
      }
    }
  }

  // Moves stream `s` forward as far as it can go at `now_`.
  bool advance(size_t s) {
    StreamState& st = streams_[s];
    bool changed = false;
    for (;;) {
      switch (st.phase) {
        case Phase::kDone:
        case Phase::kQueued:
          return changed;
        case Phase::kLaunching:
          if (st.ready_at > now_) return changed;
          st.phase = Phase::kQueued;
          queue_.push_back(s);
          return true;
        case Phase::kWorking: {
          if (st.remaining > kWorkEps) return changed;
          timeline_.kernels[static_cast<size_t>(st.span)].end_us = now_;
          --working_;
          const Step& step = plan_->steps[static_cast<size_t>(stream_steps_[st.pos])];
          if (static_cast<size_t>(++st.part) == (*costs_)[static_cast<size_t>(step.kernel)].size()) {
            timeline_.launch_end_us[static_cast<size_t>(step.kernel)] = now_;
            ++st.pos;
            st.part = 0;
          }
          st.phase = Phase::kStep;
          changed = true;
          continue;
        }
        case Phase::kStep:
          break;
      }
      if (st.ready_at > now_) return changed;
      if (st.pos == st.end) {
        st.phase = Phase::kDone;
        timeline_.stream_end_us[s] = now_;
        return true;
      }
      const size_t i = static_cast<size_t>(stream_steps_[st.pos]);
      const Step& step = plan_->steps[i];
      const bool empty_launch =
          step.kind == Step::Kind::kLaunch && (*costs_)[static_cast<size_t>(step.kernel)].empty();
      if (issued_[i] == kNotIssued && !empty_launch) return changed;  // the host waits at a kSync
      const double issued =
          issued_[i] + (step.kind == Step::Kind::kLaunch && limits_->mode == LaunchMode::kPlain
                            ? st.part * limits_->host_call_us
                            : 0.0);
      if (issued > now_ && !empty_launch) {
        st.ready_at = issued;
        return changed;
      }
      switch (step.kind) {
        case Step::Kind::kSync:  // the host's; nothing to do on the stream
          ++st.pos;
          break;
        case Step::Kind::kRecord:
          record_done_[i] = now_;  // everything before it on this stream is complete
          ++st.pos;
          break;
        case Step::Kind::kWait: {
          const int record = bound_record_[i];
          if (record >= 0) {
            if (record_done_[static_cast<size_t>(record)] < 0.0) return changed;  // blocked
            const bool cross = plan_->steps[static_cast<size_t>(record)].stream != step.stream;
            st.ready_at = std::max(st.ready_at, record_done_[static_cast<size_t>(record)] +
                                                    (cross ? limits_->event_wait_us : 0.0));
          }
          ++st.pos;
          break;
        }
        case Step::Kind::kLaunch: {
          const auto& parts = (*costs_)[static_cast<size_t>(step.kernel)];
          if (st.part == 0) timeline_.launch_begin_us[static_cast<size_t>(step.kernel)] = now_;
          if (parts.empty()) {
            timeline_.launch_end_us[static_cast<size_t>(step.kernel)] = now_;
            ++st.pos;
            break;
          }
          const KernelCost& cost = parts[static_cast<size_t>(st.part)];
          timeline_.kernels.push_back({step.kernel, st.part, step.stream, now_, now_, now_});
          st.span = static_cast<int>(timeline_.kernels.size() - 1);
          st.phase = Phase::kLaunching;
          st.ready_at = now_ + cost.launch_us;
          break;
        }
      }
      changed = true;
    }
  }

  // Every working kernel progresses at 1/slowdown of its solo speed: the
  // device's block slots and bandwidth are shared in proportion to demand,
  // and sharing itself costs `concurrency_interference`. Kernels side by side
  // also evict each other's data from the L2: their DRAM traffic grows by
  // `cache_contention` times the fraction of the L2 their working sets fill
  // together (small kernels keep their data cached; large ones do not),
  // which slows them only where bandwidth, not compute, bounds them.
  double current_slowdown() const {
    double sm = 0.0, bandwidth = 0.0, working_set_mb = 0.0;
    for (const StreamState& st : streams_) {
      if (st.phase != Phase::kWorking) continue;
      sm += current_kernel(st).sm_share;
      bandwidth += current_kernel(st).bandwidth_share;
      working_set_mb += current_kernel(st).working_set_mb;
    }
    if (working_ > 1 && limits_->cache_contention > 0.0) {
      bandwidth *= 1.0 + limits_->cache_contention * std::min(1.0, working_set_mb / limits_->l2_cache_mb);
    }
    double slowdown = std::max({1.0, sm, bandwidth});
    if (working_ > 1) slowdown *= 1.0 + limits_->concurrency_interference;
    return slowdown;
  }

  // The time of the next timed transition; infinity when nothing is timed
  // (every stream done, or the rest blocked forever).
  double next_event(double slowdown) const {
    double next = std::numeric_limits<double>::infinity();
    for (const StreamState& st : streams_) {
      switch (st.phase) {
        case Phase::kStep:
          if (st.ready_at > now_) next = std::min(next, st.ready_at);
          break;
        case Phase::kLaunching:
          next = std::min(next, st.ready_at);
          break;
        case Phase::kWorking:
          next = std::min(next, now_ + st.remaining * slowdown);
          break;
        case Phase::kQueued:
        case Phase::kDone:
          break;
      }
    }
    return next;
  }

  const exec::ExecPlan* plan_ = nullptr;
  const std::vector<std::vector<KernelCost>>* costs_ = nullptr;
  const DeviceLimits* limits_ = nullptr;
  std::vector<StreamState> streams_;
  std::vector<size_t> count_;        // reset()'s counting sort
  std::vector<int> last_record_;     // reset()'s latest record per event
  std::vector<int> stream_steps_;    // step indices grouped by stream, each in issue order
  std::vector<int> bound_record_;    // per wait step: its record step, or -1
  std::vector<double> record_done_;  // per record step: when it completed, -1 before
  std::vector<double> issued_;       // per step: when the host had issued it, or kNotIssued
  size_t host_pos_ = 0;              // the next step the host issues
  double host_time_ = 0.0;           // when the host finished its calls so far (kPlain)
  std::vector<size_t> queue_;        // streams with a queued kernel, first come first served,
  size_t queue_head_ = 0;            // from queue_[queue_head_] on
  size_t working_ = 0;
  double now_ = 0.0;
  Timeline timeline_;
};

Timeline simulate(const exec::ExecPlan& plan, const std::vector<std::vector<KernelCost>>& costs,
                  const DeviceLimits& limits) {
  Simulation simulation;
  simulation.reset(plan, costs, limits);
  simulation.run();
  return simulation.take();
}

Simulator::Simulator() : simulation_(std::make_unique<Simulation>()) {}
Simulator::~Simulator() = default;

const Timeline& Simulator::run(const exec::ExecPlan& plan,
                               const std::vector<std::vector<KernelCost>>& costs,
                               const DeviceLimits& limits) {
  simulation_->reset(plan, costs, limits);
  return simulation_->run();
}

}  // namespace ios::sim
