#include "exec/compare.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace ios::exec {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<int64_t> coords_of(int64_t index, const ir::Shape& shape) {
  std::vector<int64_t> coords(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] > 0) {
      coords[d] = index % shape[d];
      index /= shape[d];
    }
  }
  return coords;
}

// Ordering of the worst list: failing before passing, then larger absolute
// error, then smaller index (so reports are deterministic).
bool worse(const ElementDiff& a, const ElementDiff& b) {
  if (a.failed != b.failed) return a.failed;
  if (a.abs_error != b.abs_error) return a.abs_error > b.abs_error;
  return a.index < b.index;
}

}  // namespace

ValueStats value_stats(const HostTensor& tensor) {
  ValueStats stats;
  double sum = 0.0, sum_sq = 0.0;
  for (const float v : tensor.data) {
    if (!std::isfinite(v)) {
      ++stats.non_finite;
      continue;
    }
    const double x = v;
    if (stats.finite == 0 || x < stats.min) stats.min = x;
    if (stats.finite == 0 || x > stats.max) stats.max = x;
    stats.max_abs = std::max(stats.max_abs, std::fabs(x));
    sum += x;
    sum_sq += x * x;
    ++stats.finite;
  }
  if (stats.finite > 0) {
    const double n = static_cast<double>(stats.finite);
    stats.mean = sum / n;
    stats.std = std::sqrt(std::max(0.0, sum_sq / n - stats.mean * stats.mean));
  }
  return stats;
}

std::string format_value_stats(std::string_view label, const ValueStats& s) {
  return fmt::format("{} min {:.6g} max {:.6g} mean {:.6g} std {:.6g}{}", label, s.min, s.max, s.mean, s.std,
                     s.non_finite > 0 ? fmt::format(" ({} NaN or infinite values left out)", s.non_finite) : "");
}

CompareResult compare(const HostTensor& actual, const HostTensor& expected, const Tolerance& tolerance,
                      const std::string& name, int worst_k) {
  CompareResult result;
  result.name = name;
  result.shape = expected.shape;
  result.tolerance = tolerance;
  if (actual.shape != expected.shape || actual.size() != expected.size()) {
    result.shape_error = fmt::format("shape {} does not match the reference's {}", ir::to_string(actual.shape),
                                     ir::to_string(expected.shape));
    return result;
  }
  result.count = expected.size();
  result.actual_stats = value_stats(actual);
  result.expected_stats = value_stats(expected);
  double sum_abs = 0.0, sum_sq = 0.0;
  int64_t finite_pairs = 0;
  // A bounded heap of the worst elements: the top is the least bad kept.
  std::vector<ElementDiff> heap;
  const size_t k = static_cast<size_t>(std::max(worst_k, 0));
  for (int64_t i = 0; i < result.count; ++i) {
    const float a = actual.data[static_cast<size_t>(i)];
    const float b = expected.data[static_cast<size_t>(i)];
    double abs_error = 0.0, rel_error = 0.0;
    bool failed = false;
    const bool a_nan = std::isnan(a), b_nan = std::isnan(b);
    if (a_nan || b_nan) {
      if (a_nan != b_nan) {
        failed = true;
        abs_error = rel_error = kInf;
        ++result.num_nan;
      }
    } else if (std::isinf(a) || std::isinf(b)) {
      if (a != b) {
        failed = true;
        abs_error = rel_error = kInf;
      }
    } else {
      abs_error = std::fabs(static_cast<double>(a) - static_cast<double>(b));
      const double mag = std::fabs(static_cast<double>(b));
      rel_error = mag > 0.0 ? abs_error / mag : (abs_error > 0.0 ? kInf : 0.0);
      failed = abs_error > tolerance.atol && abs_error > tolerance.rtol * mag;
      result.max_abs_error = std::max(result.max_abs_error, abs_error);
      if (mag > 0.0) result.max_rel_error = std::max(result.max_rel_error, rel_error);
      sum_abs += abs_error;
      sum_sq += abs_error * abs_error;
      ++finite_pairs;
    }
    if (failed) ++result.num_failed;
    if (k == 0) continue;
    ElementDiff diff{i, {}, a, b, abs_error, rel_error, failed};
    if (heap.size() < k) {
      heap.push_back(std::move(diff));
      std::push_heap(heap.begin(), heap.end(), worse);
    } else if (worse(diff, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), worse);
      heap.back() = std::move(diff);
      std::push_heap(heap.begin(), heap.end(), worse);
    }
  }
  if (finite_pairs > 0) {
    result.mean_abs_error = sum_abs / static_cast<double>(finite_pairs);
    result.rms_error = std::sqrt(sum_sq / static_cast<double>(finite_pairs));
  }
  std::sort(heap.begin(), heap.end(), worse);
  for (auto& diff : heap) diff.coords = coords_of(diff.index, expected.shape);
  result.worst = std::move(heap);
  return result;
}

std::string format_report(const CompareResult& r) {
  const std::string label = r.name.empty() ? "output" : fmt::format("'{}'", r.name);
  if (!r.shape_error.empty()) return fmt::format("{}: FAILED: {}\n", label, r.shape_error);
  std::string out;
  if (r.passed()) {
    out += fmt::format("{} ({}): PASSED: all {} elements within atol {:g} or rtol {:g}\n", label,
                       ir::to_string(r.shape), r.count, r.tolerance.atol, r.tolerance.rtol);
  } else {
    out += fmt::format("{} ({}): FAILED: {} of {} elements ({:.4g}%) exceed both atol {:g} and rtol {:g}\n",
                       label, ir::to_string(r.shape), r.num_failed, r.count,
                       100.0 * static_cast<double>(r.num_failed) / static_cast<double>(std::max<int64_t>(r.count, 1)),
                       r.tolerance.atol, r.tolerance.rtol);
  }
  out += fmt::format("  max abs error {:.6g}, max rel error {:.6g}, mean abs error {:.6g}, rms error {:.6g}", r.max_abs_error,
                     r.max_rel_error, r.mean_abs_error, r.rms_error);
  if (r.num_nan > 0) out += fmt::format(", {} NaN mismatches", r.num_nan);
  out += '\n';
  if (!r.worst.empty() && (!r.passed() || r.max_abs_error > 0.0)) {
    out += fmt::format("  worst elements ({}):\n", r.passed() ? "all within tolerance" : "failing first");
    for (const auto& d : r.worst) {
      out += fmt::format("    [{}] actual {:.9g} expected {:.9g} abs {:.3g} rel {:.3g}{}\n", fmt::join(d.coords, ","),
                         d.actual, d.expected, d.abs_error, d.rel_error, d.failed ? "  FAIL" : "");
    }
  }
  return out;
}

}  // namespace ios::exec
