#include "sched/lios.h"

#include <algorithm>

#include "core/error.h"
#include "sched/builtin_schedulers.h"

namespace ios::sched {

std::vector<ListLaunch> lios_list_schedule(const std::vector<std::vector<int>>& preds,
                                           const std::vector<double>& weight, int streams,
                                           double start_time) {
  const int n = static_cast<int>(preds.size());
  IOS_ASSERT(static_cast<int>(weight.size()) == n, "{} weights for {} units", weight.size(), n);
  IOS_ASSERT(streams >= 1, "LIOS needs at least one stream");
  std::vector<std::vector<int>> succs(static_cast<size_t>(n));
  std::vector<int> waiting(static_cast<size_t>(n), 0);  // unscheduled predecessors
  for (int v = 0; v < n; ++v) {
    for (int u : preds[static_cast<size_t>(v)]) {
      IOS_ASSERT(u >= 0 && u < n && u != v, "bad predecessor {} of {}", u, v);
      succs[static_cast<size_t>(u)].push_back(v);
      ++waiting[static_cast<size_t>(v)];
    }
  }
  for (auto& s : succs) std::sort(s.begin(), s.end());

  std::vector<int> wait_list;  // in the order units became ready
  for (int v = 0; v < n; ++v) {
    if (waiting[static_cast<size_t>(v)] == 0) wait_list.push_back(v);
  }
  std::vector<double> free(static_cast<size_t>(streams), start_time);
  std::vector<double> finish(static_cast<size_t>(n), 0.0);
  std::vector<ListLaunch> launches;
  launches.reserve(static_cast<size_t>(n));
  while (!wait_list.empty()) {
    size_t pick = 0;
    for (size_t i = 1; i < wait_list.size(); ++i) {
      if (weight[static_cast<size_t>(wait_list[i])] > weight[static_cast<size_t>(wait_list[pick])]) {
        pick = i;
      }
    }
    const int v = wait_list[pick];
    wait_list.erase(wait_list.begin() + static_cast<std::ptrdiff_t>(pick));
    double ready = start_time;
    for (int u : preds[static_cast<size_t>(v)]) ready = std::max(ready, finish[static_cast<size_t>(u)]);
    int best = 0;
    double best_finish = 0.0;
    for (int p = 0; p < streams; ++p) {
      const double eft = std::max(free[static_cast<size_t>(p)], ready) + weight[static_cast<size_t>(v)];
      if (p == 0 || eft < best_finish) {
        best = p;
        best_finish = eft;
      }
    }
    ListLaunch launch;
    launch.unit = v;
    launch.stream = best;
    launch.finish = best_finish;
    launch.start = best_finish - weight[static_cast<size_t>(v)];
    launches.push_back(launch);
    finish[static_cast<size_t>(v)] = best_finish;
    free[static_cast<size_t>(best)] = best_finish;
    for (int s : succs[static_cast<size_t>(v)]) {
      if (--waiting[static_cast<size_t>(s)] == 0) wait_list.push_back(s);
    }
  }
  IOS_ASSERT(static_cast<int>(launches.size()) == n, "the unit graph has a cycle");
  return launches;
}

namespace {

class LiosScheduler : public Scheduler {
 public:
  explicit LiosScheduler(Params params) : params_(std::move(params)) {
    streams_ = params_.get_int("streams");
    if (streams_ < 1 || streams_ > 1024) {
      user_error("scheduler 'lios': parameter 'streams' must be between 1 and 1024, not {}", streams_);
    }
  }

  Schedule run(const UnitGraph& graph, sched::CostModel& cost, SearchStats& stats) override {
    Schedule schedule = new_schedule("lios", params_, cost);
    StreamedSchedule streamed;
    streamed.num_streams = 1;
    double now = 0.0;
    schedule_blocks(graph, stats, [&](int b) {
      const Block& block = graph.blocks()[static_cast<size_t>(b)];
      std::vector<std::vector<int>> preds(static_cast<size_t>(block.size()));
      std::vector<double> weight(static_cast<size_t>(block.size()));
      for (UnitId u = block.begin; u < block.end; ++u) {
        const size_t i = static_cast<size_t>(u - block.begin);
        weight[i] = cost.unit_latency(u);
        for (UnitId p : graph.preds(u)) {
          if (p >= block.begin) preds[i].push_back(p - block.begin);
        }
      }
      const double block_start = now;
      for (const ListLaunch& l : lios_list_schedule(preds, weight, static_cast<int>(streams_), now)) {
        streamed.launches.push_back({block.begin + l.unit, l.stream, l.start, l.finish});
        streamed.num_streams = std::max(streamed.num_streams, l.stream + 1);
        now = std::max(now, l.finish);
      }
      return PlainBlock{now - block_start, block.size()};
    });
    schedule.predicted_latency_ms = now;
    schedule.body = std::move(streamed);
    return schedule;
  }

 private:
  Params params_;
  int64_t streams_ = 8;
};

}  // namespace

std::unique_ptr<Scheduler> make_lios_scheduler(const Params& params) {
  return std::make_unique<LiosScheduler>(params);
}

}  // namespace ios::sched
