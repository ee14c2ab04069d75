// A minimal parallel loop over std::thread, for the few kernels where it pays
// (convolution GEMMs, depthwise convolutions). Threads are started per call:
// a few tens of microseconds, negligible against the kernels that use it, and
// no pool to manage. Small work runs inline.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

namespace ios::cpu {

// Below this much work (in multiply-adds or element operations) a kernel
// runs on the calling thread only.
inline constexpr int64_t kParallelMinWork = int64_t{1} << 18;

// Calls fn(begin, end) on `threads` disjoint contiguous ranges covering
// [0, n), rounded to multiples of `grain` (except the last). Exceptions from
// workers are rethrown on the calling thread.
template <typename Fn>
void parallel_for(int64_t n, int threads, int64_t grain, Fn&& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t chunks = (n + grain - 1) / grain;
  const int t = static_cast<int>(std::min<int64_t>(std::max(threads, 1), chunks));
  if (t <= 1) {
    fn(int64_t{0}, n);
    return;
  }
  std::vector<std::thread> workers;
  std::vector<std::exception_ptr> errors(static_cast<size_t>(t));
  workers.reserve(static_cast<size_t>(t - 1));
  auto range = [&](int i) {
    const int64_t begin = std::min(n, chunks * i / t * grain);
    const int64_t end = std::min(n, chunks * (i + 1) / t * grain);
    return std::pair{begin, end};
  };
  auto run = [&](int i) {
    try {
      auto [b, e] = range(i);
      if (b < e) fn(b, e);
    } catch (...) {
      errors[static_cast<size_t>(i)] = std::current_exception();
    }
  };
  // Ranges whose thread the system refuses (ulimit -u, address space) run
  // on the calling thread: fewer threads, the same result. Left to
  // propagate, the error would destroy the running workers unjoined, which
  // aborts the process.
  int started = 1;
  for (; started < t; ++started) {
    try {
      workers.emplace_back(run, started);
    } catch (const std::system_error&) {
      break;
    }
  }
  run(0);
  for (int i = started; i < t; ++i) run(i);
  for (auto& w : workers) w.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// How many threads a piece of work deserves.
inline int threads_for(int64_t work, int threads) { return work < kParallelMinWork ? 1 : threads; }

}  // namespace ios::cpu
