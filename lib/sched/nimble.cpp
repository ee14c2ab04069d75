#include "sched/nimble.h"

#include <algorithm>

#include "core/error.h"
#include "sched/builtin_schedulers.h"

namespace ios::sched {

NimbleAssignment nimble_assign(const BlockDag& dag) {
  const int n = dag.n;
  NimbleAssignment out;
  // Transitive reduction: drop u -> v when v is reachable through another
  // direct successor of u.
  std::array<uint64_t, kMaxBlockUnits> reduced{};
  for (int u = 0; u < n; ++u) {
    uint64_t through = 0;
    for (uint64_t s = dag.succ[static_cast<size_t>(u)]; s; s &= s - 1) {
      through |= dag.desc[static_cast<size_t>(lowest(s))];
    }
    reduced[static_cast<size_t>(u)] = dag.succ[static_cast<size_t>(u)] & ~through;
    for (uint64_t s = reduced[static_cast<size_t>(u)]; s; s &= s - 1) {
      out.reduced_edges.emplace_back(u, lowest(s));
    }
  }

  // Maximum matching x_u -> y_v over the reduced edges.
  std::vector<int> match_left(static_cast<size_t>(n), -1);   // u -> v
  std::vector<int> match_right(static_cast<size_t>(n), -1);  // v -> u
  uint64_t seen = 0;
  auto augment = [&](auto&& self, int u) -> bool {
    for (uint64_t r = reduced[static_cast<size_t>(u)]; r; r &= r - 1) {
      const int v = lowest(r);
      if (seen & bit(v)) continue;
      seen |= bit(v);
      if (match_right[static_cast<size_t>(v)] < 0 || self(self, match_right[static_cast<size_t>(v)])) {
        match_right[static_cast<size_t>(v)] = u;
        match_left[static_cast<size_t>(u)] = v;
        return true;
      }
    }
    return false;
  };
  for (int u = 0; u < n; ++u) {
    seen = 0;
    augment(augment, u);
  }
  for (int u = 0; u < n; ++u) {
    if (match_left[static_cast<size_t>(u)] >= 0) out.matching.emplace_back(u, match_left[static_cast<size_t>(u)]);
  }

  // Chains: start at units with no matched predecessor.
  out.stream.assign(static_cast<size_t>(n), -1);
  for (int u = 0; u < n; ++u) {
    if (match_right[static_cast<size_t>(u)] >= 0) continue;
    for (int v = u; v >= 0; v = match_left[static_cast<size_t>(v)]) {
      out.stream[static_cast<size_t>(v)] = out.num_streams;
    }
    ++out.num_streams;
  }
  for (int u = 0; u < n; ++u) IOS_ASSERT(out.stream[static_cast<size_t>(u)] >= 0, "unit {} has no stream", u);
  for (auto [u, v] : out.reduced_edges) {
    if (out.stream[static_cast<size_t>(u)] != out.stream[static_cast<size_t>(v)]) ++out.synchronizations;
  }
  return out;
}

namespace {

// Issue order: UnitId order. Predicted times: each unit starts when its
// stream is free and its predecessors are done, taking its latency alone.
class NimbleScheduler : public Scheduler {
 public:
  explicit NimbleScheduler(Params params) : params_(std::move(params)) {}

  Schedule run(const UnitGraph& graph, sched::CostModel& cost, SearchStats& stats) override {
    Schedule schedule = new_schedule("nimble", params_, cost);
    StreamedSchedule streamed;
    streamed.num_streams = 1;
    double now = 0.0;
    schedule_blocks(graph, stats, [&](int b) {
      const Block& block = graph.blocks()[static_cast<size_t>(b)];
      const BlockDag dag = BlockDag::from_block(graph, block);
      const NimbleAssignment assignment = nimble_assign(dag);
      streamed.num_streams = std::max(streamed.num_streams, assignment.num_streams);
      std::vector<double> free(static_cast<size_t>(assignment.num_streams), now);
      std::vector<double> finish(static_cast<size_t>(dag.n), now);
      const double block_start = now;
      for (int i = 0; i < dag.n; ++i) {
        const int stream = assignment.stream[static_cast<size_t>(i)];
        double begin = free[static_cast<size_t>(stream)];
        for (uint64_t p = dag.pred[static_cast<size_t>(i)]; p; p &= p - 1) {
          begin = std::max(begin, finish[static_cast<size_t>(lowest(p))]);
        }
        const double end = begin + cost.unit_latency(dag.units[static_cast<size_t>(i)]);
        finish[static_cast<size_t>(i)] = end;
        free[static_cast<size_t>(stream)] = end;
        streamed.launches.push_back({dag.units[static_cast<size_t>(i)], stream, begin, end});
        now = std::max(now, end);
      }
      return PlainBlock{now - block_start, dag.n};
    });
    schedule.predicted_latency_ms = now;
    schedule.body = std::move(streamed);
    return schedule;
  }

 private:
  Params params_;
};

}  // namespace

std::unique_ptr<Scheduler> make_nimble_scheduler(const Params& params) {
  return std::make_unique<NimbleScheduler>(params);
}

}  // namespace ios::sched
