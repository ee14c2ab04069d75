// Lowering of both schedule forms to one ExecPlan (see plan.h for the rules).
#include <algorithm>
#include <map>
#include <sstream>

#include "core/error.h"
#include "exec/plan.h"

namespace ios::exec {
namespace {

using sched::Stage;
using sched::Strategy;
using sched::UnitId;

class PlanBuilder {
 public:
  explicit PlanBuilder(int num_streams) { plan_.num_streams = num_streams; }

  void launch(int stream, std::vector<UnitId> units, bool merged) {
    plan_.kernels.push_back({std::move(units), merged});
    plan_.steps.push_back({Step::Kind::kLaunch, stream, static_cast<int>(plan_.kernels.size() - 1), -1});
  }
  int record(int stream) {
    const int event = plan_.num_events++;
    plan_.steps.push_back({Step::Kind::kRecord, stream, -1, event});
    return event;
  }
  void wait(int stream, int event) { plan_.steps.push_back({Step::Kind::kWait, stream, -1, event}); }
  ExecPlan take() { return std::move(plan_); }

 private:
  ExecPlan plan_;
};

ExecPlan lower_staged(const sched::StagedSchedule& staged) {
  size_t widest = 1;
  for (const Stage& stage : staged.stages) widest = std::max(widest, stage.groups.size());
  PlanBuilder builder(static_cast<int>(widest));
  for (const Stage& stage : staged.stages) {
    if (stage.strategy == Strategy::kMerge) {
      builder.launch(0, stage.groups.at(0), /*merged=*/true);
      continue;
    }
    const int streams = static_cast<int>(stage.groups.size());
    if (streams > 1) {
      // Fork: the other streams start after everything stream 0 has issued.
      const int fork = builder.record(0);
      for (int s = 1; s < streams; ++s) builder.wait(s, fork);
    }
    for (int s = 0; s < streams; ++s) {
      for (UnitId u : stage.groups[static_cast<size_t>(s)]) builder.launch(s, {u}, false);
    }
    // Join: the stage ends when every stream it used is done.
    for (int s = 1; s < streams; ++s) builder.wait(0, builder.record(s));
  }
  return builder.take();
}

ExecPlan lower_streamed(const sched::UnitGraph& graph, const sched::StreamedSchedule& streamed) {
  const int num_streams = streamed.num_streams;
  PlanBuilder builder(num_streams);
  std::vector<int> stream_of(static_cast<size_t>(graph.size()), -1);
  for (const auto& launch : streamed.launches) stream_of[static_cast<size_t>(launch.unit)] = launch.stream;

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
  std::map<UnitId, Recorded> recorded;

  auto needs_event = [&](UnitId u) {
    for (UnitId s : graph.succs(u)) {
      if (stream_of[static_cast<size_t>(s)] != stream_of[static_cast<size_t>(u)]) return true;
    }
    return false;
  };

  for (const auto& launch : streamed.launches) {
    const int s = launch.stream;
    Clock& mine = known[static_cast<size_t>(s)];
    for (UnitId p : graph.preds(launch.unit)) {
      const int t = stream_of[static_cast<size_t>(p)];
      if (t == s) continue;
      const Recorded& r = recorded.at(p);
      if (mine[static_cast<size_t>(t)] >= r.clock[static_cast<size_t>(t)]) continue;
      builder.wait(s, r.event);
      for (size_t k = 0; k < mine.size(); ++k) mine[k] = std::max(mine[k], r.clock[k]);
    }
    builder.launch(s, {launch.unit}, false);
    mine[static_cast<size_t>(s)] = ++launched[static_cast<size_t>(s)];
    if (needs_event(launch.unit)) {
      recorded[launch.unit] = {builder.record(s), mine};
    }
  }
  // Join every stream into stream 0 at the end.
  for (int t = 1; t < num_streams; ++t) {
    if (known[0][static_cast<size_t>(t)] < launched[static_cast<size_t>(t)]) {
      builder.wait(0, builder.record(t));
    }
  }
  return builder.take();
}

}  // namespace

int ExecPlan::count(Step::Kind kind) const {
  return static_cast<int>(
      std::count_if(steps.begin(), steps.end(), [&](const Step& s) { return s.kind == kind; }));
}

ExecPlan lower(const sched::UnitGraph& graph, const sched::Schedule& schedule) {
  return schedule.is_staged() ? lower_staged(schedule.staged())
                              : lower_streamed(graph, schedule.streamed());
}

std::string describe(const sched::UnitGraph& graph, const ExecPlan& plan) {
  std::ostringstream out;
  out << "Plan: " << plan.num_streams << " stream(s), " << plan.count(Step::Kind::kLaunch)
      << " launches (" << std::count_if(plan.kernels.begin(), plan.kernels.end(),
                                        [](const Kernel& k) { return k.merged; })
      << " merged), " << plan.count(Step::Kind::kRecord) << " event records, "
      << plan.count(Step::Kind::kWait) << " waits\n";
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
      }
    }
  }
  return out.str();
}

}  // namespace ios::exec
