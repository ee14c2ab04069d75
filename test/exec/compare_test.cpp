// Output comparison: Polygraphy's rule (an element fails only when it
// exceeds both the absolute and the relative tolerance), NaN handling, the
// statistics and the worst-element report.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "exec/compare.h"

namespace ios::exec {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

CompareResult compare1(float actual, float expected, Tolerance tol = {}) {
  return compare(HostTensor({1}, {actual}), HostTensor({1}, {expected}), tol);
}

TEST_CASE("compare: an element fails only when it exceeds both tolerances", "[exec][compare]") {
  const Tolerance tol{1e-5, 1e-4};
  // abs 5e-5 > atol, but rel 5e-5 <= rtol: passes.
  CHECK(compare1(1.00005f, 1.0f, tol).passed());
  // abs 1e-6 <= atol, rel infinite (expected 0): passes.
  CHECK(compare1(1e-6f, 0.0f, tol).passed());
  // abs 1e-4 > atol and rel inf > rtol: fails.
  CHECK_FALSE(compare1(1e-4f, 0.0f, tol).passed());
  // abs 2e-3 > atol and rel 2e-4 > rtol: fails; the reference is the second argument.
  CHECK_FALSE(compare1(10.002f, 10.0f, tol).passed());
  // The relative error is taken against the reference (second argument).
  CHECK_FALSE(compare1(1.0002f, 1.0f, {1e-5, 1.9e-4}).passed());
  CHECK(compare1(1.0f, 1.0002f, {1e-5, 2.1e-4}).passed());
  // Exact equality passes with zero tolerances.
  CHECK(compare1(3.5f, 3.5f, {0.0, 0.0}).passed());
  CHECK_FALSE(compare1(3.5f, std::nextafter(3.5f, 4.0f), {0.0, 0.0}).passed());
}

TEST_CASE("compare: NaN and infinities", "[exec][compare]") {
  CHECK(compare1(kNaN, kNaN).passed());
  const auto nan_vs_number = compare1(kNaN, 1.0f);
  CHECK_FALSE(nan_vs_number.passed());
  CHECK(nan_vs_number.num_nan == 1);
  CHECK_FALSE(compare1(1.0f, kNaN).passed());
  CHECK(compare1(kInf, kInf).passed());
  CHECK(compare1(-kInf, -kInf).passed());
  CHECK_FALSE(compare1(kInf, -kInf).passed());
  CHECK_FALSE(compare1(kInf, 1e30f).passed());
  // Non-finite pairs stay out of the finite error statistics.
  const auto r = compare(HostTensor({3}, {kNaN, 1.0f, 2.0f}), HostTensor({3}, {kNaN, 1.5f, 2.0f}), {});
  CHECK(r.max_abs_error == Approx(0.5));
  CHECK(r.mean_abs_error == Approx(0.25));
}

TEST_CASE("compare: statistics, worst elements with coordinates, and the report", "[exec][compare]") {
  // [1, 2, 2, 3]: two elements off, one by a lot.
  HostTensor expected({1, 2, 2, 3});
  for (size_t i = 0; i < expected.data.size(); ++i) expected.data[i] = static_cast<float>(i) + 1.0f;
  HostTensor actual = expected;
  actual.data[7] += 0.5f;        // (0, 1, 0, 1): 8 -> 8.5
  actual.data[2] += 1e-6f * 3;   // (0, 0, 0, 2): within tolerance
  actual.data[11] -= 2.0f;       // (0, 1, 1, 2): 12 -> 10
  const auto r = compare(actual, expected, {1e-5, 1e-4}, "logits", 2);
  CHECK_FALSE(r.passed());
  CHECK(r.count == 12);
  CHECK(r.num_failed == 2);
  CHECK(r.max_abs_error == Approx(2.0));
  CHECK(r.max_rel_error == Approx(2.0 / 12.0));
  CHECK(r.mean_abs_error == Approx((2.5 + 3e-6) / 12).epsilon(1e-3));
  REQUIRE(r.worst.size() == 2);
  CHECK(r.worst[0].coords == std::vector<int64_t>{0, 1, 1, 2});
  CHECK(r.worst[0].actual == 10.0f);
  CHECK(r.worst[0].expected == 12.0f);
  CHECK(r.worst[0].failed);
  CHECK(r.worst[1].coords == std::vector<int64_t>{0, 1, 0, 1});
  const std::string report = format_report(r);
  CHECK_THAT(report, Catch::Contains("'logits'") && Catch::Contains("FAILED") && Catch::Contains("2 of 12") &&
                         Catch::Contains("[0,1,1,2]") && Catch::Contains("actual 10 expected 12"));

  // With generous tolerances the same data passes and the report says so.
  const auto ok = compare(actual, expected, {2.5, 0.0});
  CHECK(ok.passed());
  CHECK_THAT(format_report(ok), Catch::Contains("PASSED"));
}

TEST_CASE("compare: shapes must match", "[exec][compare]") {
  const auto r = compare(HostTensor({2, 3}), HostTensor({3, 2}), {});
  CHECK_FALSE(r.passed());
  CHECK_THAT(r.shape_error, Catch::Contains("2x3") && Catch::Contains("3x2"));
  CHECK_THAT(format_report(r), Catch::Contains("FAILED"));
}

TEST_CASE("compare: value statistics of both sides, against direct sums", "[exec][compare]") {
  const std::vector<float> values = {-2.0f, 0.5f, 1.0f, 4.0f, kNaN, 3.5f, kInf};
  const ValueStats s = value_stats(HostTensor({7}, values));
  double sum = 0.0, sum_sq = 0.0;
  for (float v : {-2.0f, 0.5f, 1.0f, 4.0f, 3.5f}) {
    sum += v;
    sum_sq += static_cast<double>(v) * v;
  }
  CHECK(s.finite == 5);
  CHECK(s.non_finite == 2);
  CHECK(s.min == -2.0);
  CHECK(s.max == 4.0);
  CHECK(s.max_abs == 4.0);
  CHECK(s.mean == Approx(sum / 5));
  CHECK(s.std == Approx(std::sqrt(sum_sq / 5 - (sum / 5) * (sum / 5))));
  const std::string text = format_value_stats("actual", s);
  CHECK(text.find("actual min -2 max 4 mean") == 0);
  CHECK(text.find("2 NaN or infinite values left out") != std::string::npos);

  const CompareResult r = compare(HostTensor({2}, {1.0f, 2.0f}), HostTensor({2}, {1.0f, -3.0f}), {1e-5, 1e-4});
  CHECK(r.actual_stats.max == 2.0);
  CHECK(r.expected_stats.min == -3.0);
}

TEST_CASE("compare: a reference entirely within atol of zero is flagged", "[exec][compare]") {
  const HostTensor tiny({3}, {1e-9f, -2e-9f, 0.0f});
  // Zeros pass against it: the comparison cannot tell them from the real output.
  const CompareResult zeros = compare(HostTensor({3}, {0.0f, 0.0f, 0.0f}), tiny, {1e-5, 1e-4});
  CHECK(zeros.passed());
  CHECK(zeros.expected_below_atol());
  // One expected value beyond atol: the check means something again.
  const HostTensor real({3}, {1e-9f, -2e-9f, 0.5f});
  CHECK_FALSE(compare(real, real, {1e-5, 1e-4}).expected_below_atol());
  CHECK_FALSE(compare(tiny, tiny, {1e-10, 1e-4}).expected_below_atol());
}

}  // namespace
}  // namespace ios::exec
