#include "exec/stats.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"

namespace ios::exec {

double percentile(std::span<const double> sorted, double p) {
  IOS_ASSERT(!sorted.empty(), "percentile of no samples");
  IOS_ASSERT(p >= 0.0 && p <= 100.0, "percentile {} is outside [0, 100]", p);
  const auto n = static_cast<double>(sorted.size());
  // The small slack keeps p * n / 100 that is an integer in exact arithmetic
  // (90% of 100 samples) from rounding up to the next rank.
  const double rank = std::ceil(p * n / 100.0 - 1e-9);
  const auto index = static_cast<size_t>(std::clamp(rank, 1.0, n)) - 1;
  return sorted[index];
}

LatencyStats compute_stats(std::span<const double> latencies_ms, int64_t batch) {
  if (latencies_ms.empty())
    user_error("no timed iterations to report on (--iterations must be >= 1)");
  IOS_ASSERT(batch >= 1, "batch {} < 1", batch);
  std::vector<double> sorted(latencies_ms.begin(), latencies_ms.end());
  for (double x : sorted) {
    if (!std::isfinite(x) || x < 0.0) user_error("invalid iteration latency {} ms", x);
  }
  std::sort(sorted.begin(), sorted.end());

  LatencyStats s;
  s.count = sorted.size();
  s.min = sorted.front();
  s.max = sorted.back();
  double sum = 0.0;
  for (double x : sorted) sum += x;
  s.mean = sum / static_cast<double>(s.count);
  const size_t mid = s.count / 2;
  s.median = s.count % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2.0;
  s.p90 = percentile(sorted, 90.0);
  s.p95 = percentile(sorted, 95.0);
  s.p99 = percentile(sorted, 99.0);
  double squares = 0.0;
  for (double x : sorted) squares += (x - s.mean) * (x - s.mean);
  s.stddev = std::sqrt(squares / static_cast<double>(s.count));
  s.cv = s.mean > 0.0 ? s.stddev / s.mean : 0.0;
  s.throughput = s.mean > 0.0 ? static_cast<double>(batch) * 1000.0 / s.mean : 0.0;
  return s;
}

}  // namespace ios::exec
