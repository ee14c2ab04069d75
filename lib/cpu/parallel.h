// A minimal parallel loop over std::thread, for the few kernels where it pays
// (convolution GEMMs, depthwise convolutions). Threads are started per call:
// a few tens of microseconds, negligible against the kernels that use it, and
// no pool to manage. Small work runs inline.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
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
  for (int i = 1; i < t; ++i) {
    workers.emplace_back([&, i] {
      try {
        auto [b, e] = range(i);
        if (b < e) fn(b, e);
      } catch (...) {
        errors[static_cast<size_t>(i)] = std::current_exception();
      }
    });
  }
  try {
    auto [b, e] = range(0);
    if (b < e) fn(b, e);
  } catch (...) {
    errors[0] = std::current_exception();
  }
  for (auto& w : workers) w.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// How many threads a piece of work deserves.
inline int threads_for(int64_t work, int threads) { return work < kParallelMinWork ? 1 : threads; }

}  // namespace ios::cpu
