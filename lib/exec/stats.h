// Latency statistics over timed iterations, defined as trtexec defines them so
// that numbers can be compared with it:
//  - percentile(p): nearest rank, the smallest sample with at least p% of the
//    samples <= it: sorted[ceil(p/100 * n) - 1] (sorted[0] for p = 0);
//  - median: the mean of the two middle samples when n is even;
//  - stddev: population standard deviation (divides by n);
//  - cv: stddev / mean (a fraction, printed as a percentage);
//  - throughput: batch * 1000 / mean inferences per second.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ios::exec {

struct LatencyStats {
  size_t count = 0;
  double min = 0.0, max = 0.0, mean = 0.0, median = 0.0;
  double p90 = 0.0, p95 = 0.0, p99 = 0.0;
  double stddev = 0.0;
  double cv = 0.0;          // coefficient of variation, stddev / mean
  double throughput = 0.0;  // inferences per second
};

// Nearest-rank percentile of ascending `sorted` samples, p in [0, 100].
double percentile(std::span<const double> sorted, double p);

// Statistics of per-iteration latencies in ms (any order). Throws UserError
// when there are no samples or a sample is negative or not finite; batch >= 1.
LatencyStats compute_stats(std::span<const double> latencies_ms, int64_t batch);

}  // namespace ios::exec
