// Helpers shared by the CPU backend tests.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "exec/compare.h"
#include "exec/npy.h"

namespace ios::test {

inline std::vector<float> random_values(int64_t count, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  return exec::random_tensor({count}, seed, lo, hi).data;
}

// Element-wise closeness with the suite's tolerance (Polygraphy's rule), with
// the comparison report as the failure message.
inline void require_close(const exec::HostTensor& actual, const exec::HostTensor& expected, double rtol = 1e-4,
                          double atol = 1e-5, const std::string& what = "") {
  const auto result = exec::compare(actual, expected, exec::Tolerance{atol, rtol}, what, 5);
  INFO(exec::format_report(result));
  REQUIRE(result.passed());
}

inline void require_close(const std::vector<float>& actual, const std::vector<float>& expected, double rtol = 1e-4,
                          double atol = 1e-5) {
  REQUIRE(actual.size() == expected.size());
  const auto n = static_cast<int64_t>(actual.size());
  require_close(exec::HostTensor({n}, actual), exec::HostTensor({n}, expected), rtol, atol);
}

}  // namespace ios::test
