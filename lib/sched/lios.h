// LIOS (Latency-oriented Inter-Operator Scheduling, IEEE TSC 2024,
// Algorithm 1): a list scheduler. Among the ready units it takes the one with
// the highest priority, Rank(v) = v's latency alone (ties: the one that became
// ready first, then the lower index), and puts it on the stream where it
// finishes earliest (ties: the lowest stream):
//   EST(v, p) = max(free(p), max over predecessors u of FT(u)),
//   EFT(v, p) = EST(v, p) + w(v).
// A stream runs its units in the order they were put on it; free(p) is the
// finish time of its last unit (no back-filling of idle gaps, as in the
// paper's Table III).
#pragma once

#include <vector>

namespace ios::sched {

struct ListLaunch {
  int unit = 0;
  int stream = 0;
  double start = 0.0;
  double finish = 0.0;
};

// LIOS on a DAG of preds.size() units (preds[v]: v's predecessors) with
// latencies `weight` on `streams` streams, all streams free at `start_time`.
// Returns the launches in scheduling order (a topological order).
std::vector<ListLaunch> lios_list_schedule(const std::vector<std::vector<int>>& preds,
                                           const std::vector<double>& weight, int streams,
                                           double start_time = 0.0);

}  // namespace ios::sched
