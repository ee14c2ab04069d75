// Lowering of both schedule forms to one ExecPlan (see plan.h for the rules).
#include <algorithm>
#include <array>
#include <map>
#include <sstream>

#include "core/error.h"
#include "exec/plan.h"

namespace ios::exec {
namespace {

using sched::Stage;
using sched::Strategy;
using sched::UnitId;

// Appends steps to `plan`, which it empties first; the plan's kernels keep
// their buffers, so that lowering many small plans into one ExecPlan does
// not allocate once warm (lower_stage).
class PlanBuilder {
 public:
  PlanBuilder(ExecPlan& plan, int num_streams) : plan_(plan) {
    plan_.num_streams = num_streams;
    plan_.num_events = 0;
    plan_.steps.clear();
  }
  ~PlanBuilder() { plan_.kernels.resize(used_); }
  PlanBuilder(const PlanBuilder&) = delete;
  PlanBuilder& operator=(const PlanBuilder&) = delete;

  template <typename Units>
  void launch(int stream, const Units& units, bool merged) {
    if (used_ < plan_.kernels.size()) {
      plan_.kernels[used_].units.assign(std::begin(units), std::end(units));
      plan_.kernels[used_].merged = merged;
    } else {
      plan_.kernels.push_back({std::vector<UnitId>(std::begin(units), std::end(units)), merged});
    }
    plan_.steps.push_back({Step::Kind::kLaunch, stream, static_cast<int>(used_++), -1});
  }
  int record(int stream) {
    const int event = plan_.num_events++;
    plan_.steps.push_back({Step::Kind::kRecord, stream, -1, event});
    return event;
  }
  void wait(int stream, int event) { plan_.steps.push_back({Step::Kind::kWait, stream, -1, event}); }
  void sync() { plan_.steps.push_back({Step::Kind::kSync, 0, -1, -1}); }

 private:
  ExecPlan& plan_;
  size_t used_ = 0;  // kernels written so far
};

// One stage: group i on stream i, or a merge on stream 0; with kEvents a
// concurrent stage of several groups forks from stream 0 and joins back into
// it. With kDeviceSync the host synchronized the device before it (or it
// follows a single-group stage on stream 0), so it needs neither.
void add_stage(PlanBuilder& builder, const Stage& stage, StageJoin join) {
  if (stage.strategy == Strategy::kMerge) {
    builder.launch(0, stage.groups.at(0), /*merged=*/true);
    return;
  }
  const int streams = static_cast<int>(stage.groups.size());
  if (join == StageJoin::kDeviceSync) {
    for (int s = 0; s < streams; ++s) {
      for (UnitId u : stage.groups[static_cast<size_t>(s)]) builder.launch(s, std::array<UnitId, 1>{u}, false);
    }
    return;
  }
  if (streams > 1) {
    // Fork: the other streams start after everything stream 0 has issued.
    const int fork = builder.record(0);
    for (int s = 1; s < streams; ++s) builder.wait(s, fork);
  }
  for (int s = 0; s < streams; ++s) {
    for (UnitId u : stage.groups[static_cast<size_t>(s)]) builder.launch(s, std::array<UnitId, 1>{u}, false);
  }
  // Join: the stage ends when every stream it used is done.
  for (int s = 1; s < streams; ++s) builder.wait(0, builder.record(s));
}

ExecPlan lower_staged(const sched::StagedSchedule& staged, StageJoin join) {
  size_t widest = 1;
  for (const Stage& stage : staged.stages) widest = std::max(widest, stage.groups.size());
  ExecPlan plan;
  {
    PlanBuilder builder(plan, static_cast<int>(widest));
    const size_t n = staged.stages.size();
    for (size_t i = 0; i < n; ++i) {
      const Stage& stage = staged.stages[i];
      add_stage(builder, stage, join);
      // The IOS paper's engine: no synchronization between two single-group
      // stages (both on stream 0, in order). After the last stage only when
      // it has several groups: the iteration ends with stream 0 after all.
      const bool next_single = i + 1 == n || staged.stages[i + 1].groups.size() == 1;
      if (join == StageJoin::kDeviceSync && !(stage.groups.size() == 1 && next_single)) {
        builder.sync();
      }
    }
  }
  return plan;
}

// One launch of a dependency-ordered plan: its units (several when merged)
// on one stream.
struct KernelLaunch {
  int stream = 0;
  std::vector<UnitId> units;
  bool merged = false;
};

// Launches in issue order (a topological order of kernels) with an event
// wait for each cross-stream dependency that no earlier wait implies.
ExecPlan lower_by_dependencies(const sched::UnitGraph& graph, int num_streams,
                               const std::vector<KernelLaunch>& launches) {
  ExecPlan plan;
  PlanBuilder builder(plan, num_streams);
  std::vector<int> kernel_of(static_cast<size_t>(graph.size()), -1);
  for (size_t k = 0; k < launches.size(); ++k) {
    for (UnitId u : launches[k].units) kernel_of[static_cast<size_t>(u)] = static_cast<int>(k);
  }
  auto stream_of = [&](UnitId u) {
    return launches[static_cast<size_t>(kernel_of[static_cast<size_t>(u)])].stream;
  };

  // Vector clocks: known[s][t] = launches of stream t that stream s is known
  // to wait for. A dependency already implied by an earlier wait (directly or
  // transitively) needs no new wait.
  using Clock = std::vector<int>;
  std::vector<Clock> known(static_cast<size_t>(num_streams), Clock(static_cast<size_t>(num_streams), 0));
  std::vector<int> launched(static_cast<size_t>(num_streams), 0);
  struct Recorded {
    int event = -1;
    Clock clock;  // the producer stream's clock right after the producer
  };
  std::map<int, Recorded> recorded;  // by kernel

  auto needs_event = [&](const KernelLaunch& launch) {
    for (UnitId u : launch.units) {
      for (UnitId s : graph.succs(u)) {
        if (stream_of(s) != launch.stream) return true;
      }
    }
    return false;
  };

  for (size_t k = 0; k < launches.size(); ++k) {
    const KernelLaunch& launch = launches[k];
    const int s = launch.stream;
    Clock& mine = known[static_cast<size_t>(s)];
    for (UnitId u : launch.units) {
      for (UnitId p : graph.preds(u)) {
        const int t = stream_of(p);
        if (t == s) continue;
        const Recorded& r = recorded.at(kernel_of[static_cast<size_t>(p)]);
        if (mine[static_cast<size_t>(t)] >= r.clock[static_cast<size_t>(t)]) continue;
        builder.wait(s, r.event);
        for (size_t c = 0; c < mine.size(); ++c) mine[c] = std::max(mine[c], r.clock[c]);
      }
    }
    builder.launch(s, launch.units, launch.merged);
    mine[static_cast<size_t>(s)] = ++launched[static_cast<size_t>(s)];
    if (needs_event(launch)) recorded[static_cast<int>(k)] = {builder.record(s), mine};
  }
  // Join every stream into stream 0 at the end.
  for (int t = 1; t < num_streams; ++t) {
    if (known[0][static_cast<size_t>(t)] < launched[static_cast<size_t>(t)]) {
      builder.wait(0, builder.record(t));
    }
  }
  return plan;
}

ExecPlan lower_streamed(const sched::UnitGraph& graph, const sched::StreamedSchedule& streamed) {
  std::vector<KernelLaunch> launches;
  launches.reserve(streamed.launches.size());
  for (const auto& launch : streamed.launches) launches.push_back({launch.stream, {launch.unit}, false});
  return lower_by_dependencies(graph, streamed.num_streams, launches);
}

// The staged schedule's launches in its issue order, without the barriers.
// Each group (or merge) continues on the stream of its first unit's latest
// producer where no other group of the stage took that stream, so that a
// chain stays on one stream and needs no event (Nimble's reasoning); else it
// takes the lowest free stream. A stage of k groups uses k streams.
ExecPlan lower_staged_by_dependencies(const sched::UnitGraph& graph,
                                      const sched::StagedSchedule& staged) {
  size_t widest = 1;
  for (const Stage& stage : staged.stages) widest = std::max(widest, stage.groups.size());
  std::vector<int> stream_of(static_cast<size_t>(graph.size()), -1);
  std::vector<int> order_of(static_cast<size_t>(graph.size()), -1);  // issue position
  std::vector<KernelLaunch> launches;
  std::vector<bool> taken(widest);
  for (const Stage& stage : staged.stages) {
    std::fill(taken.begin(), taken.end(), false);
    for (const auto& group : stage.groups) {
      // The producer issued last among the group's first unit's inputs.
      int stream = -1, latest = -1;
      for (UnitId p : graph.preds(group.front())) {
        const int s = stream_of[static_cast<size_t>(p)];
        if (s >= 0 && !taken[static_cast<size_t>(s)] && order_of[static_cast<size_t>(p)] > latest) {
          latest = order_of[static_cast<size_t>(p)];
          stream = s;
        }
      }
      if (stream < 0) {
        stream = static_cast<int>(std::find(taken.begin(), taken.end(), false) - taken.begin());
      }
      taken[static_cast<size_t>(stream)] = true;
      const bool merged = stage.strategy == Strategy::kMerge;
      if (merged) {
        launches.push_back({stream, group, true});
      } else {
        for (UnitId u : group) launches.push_back({stream, {u}, false});
      }
      for (UnitId u : group) {
        stream_of[static_cast<size_t>(u)] = stream;
        order_of[static_cast<size_t>(u)] = static_cast<int>(launches.size());
      }
    }
  }
  return lower_by_dependencies(graph, static_cast<int>(widest), launches);
}

}  // namespace

int ExecPlan::count(Step::Kind kind) const {
  return static_cast<int>(
      std::count_if(steps.begin(), steps.end(), [&](const Step& s) { return s.kind == kind; }));
}

void lower_stage(const sched::Stage& stage, ExecPlan& plan, StageJoin join) {
  PlanBuilder builder(plan, std::max(1, static_cast<int>(stage.groups.size())));
  add_stage(builder, stage, join);
  if (join == StageJoin::kDeviceSync && stage.groups.size() > 1) builder.sync();
}

ExecPlan lower(const sched::UnitGraph& graph, const sched::Schedule& schedule, StageJoin join) {
  if (!schedule.is_staged()) return lower_streamed(graph, schedule.streamed());
  const sched::StagedSchedule& staged = schedule.staged();
  return staged.barriers == sched::Barriers::kStages ? lower_staged(staged, join)
                                                     : lower_staged_by_dependencies(graph, staged);
}

std::string describe(const sched::UnitGraph& graph, const ExecPlan& plan) {
  std::ostringstream out;
  out << "Plan: " << plan.num_streams << " stream(s), " << plan.count(Step::Kind::kLaunch)
      << " launches (" << std::count_if(plan.kernels.begin(), plan.kernels.end(),
                                        [](const Kernel& k) { return k.merged; })
      << " merged), " << plan.count(Step::Kind::kRecord) << " event records, "
      << plan.count(Step::Kind::kWait) << " waits";
  if (const int syncs = plan.count(Step::Kind::kSync)) out << ", " << syncs << " device synchronizations";
  out << '\n';
  for (int s = 0; s < plan.num_streams; ++s) {
    out << "stream " << s << ":\n";
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      const Step& step = plan.steps[i];
      if (step.stream != s) continue;
      out << "  #" << i << ' ';
      switch (step.kind) {
        case Step::Kind::kLaunch: {
          const Kernel& k = plan.kernels[static_cast<size_t>(step.kernel)];
          out << (k.merged ? "launch merged(" : "launch ");
          for (size_t j = 0; j < k.units.size(); ++j) {
            const sched::Unit& unit = graph.unit(k.units[j]);
            out << (j ? ", " : "") << unit.id << " [" << sched::unit_kind_name(unit.kind) << ']';
          }
          out << (k.merged ? ")\n" : "\n");
          break;
        }
        case Step::Kind::kRecord: out << "record e" << step.event << '\n'; break;
        case Step::Kind::kWait: out << "wait   e" << step.event << '\n'; break;
        case Step::Kind::kSync: out << "host synchronizes the device\n"; break;
      }
    }
  }
  return out.str();
}

}  // namespace ios::exec
