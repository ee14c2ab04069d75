// Output comparison for ios-run --check and the test suite.
//
// The rule is Polygraphy's: an element fails only when its absolute error
// exceeds atol AND its relative error exceeds rtol, i.e.
//     |a - b| > atol  and  |a - b| > rtol * |b|,
// where b is the reference (expected) value. NaN equals NaN; NaN against a
// number fails; an infinity equals only the same infinity.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "exec/npy.h"

namespace ios::exec {

struct Tolerance {
  double atol = 1e-5;
  double rtol = 1e-4;
};

struct ElementDiff {
  int64_t index = 0;                // flat, row-major
  std::vector<int64_t> coords;      // one per dimension (N, C, H, W for activations)
  float actual = 0.0f;
  float expected = 0.0f;
  double abs_error = 0.0;           // +inf when exactly one side is NaN or the infinities differ
  double rel_error = 0.0;           // abs_error / |expected|; +inf when expected is 0 and they differ
  bool failed = false;
};

// Statistics of one tensor's values (finite values only), as Polygraphy
// prints them next to a comparison: they show at a glance whether both sides
// are in the same range, and whether the tolerances can tell them apart.
struct ValueStats {
  int64_t finite = 0;      // values counted
  int64_t non_finite = 0;  // NaN and infinities, left out of the statistics
  double min = 0.0, max = 0.0, mean = 0.0, std = 0.0;
  double max_abs = 0.0;    // the largest |value|
};
ValueStats value_stats(const HostTensor& tensor);
// "LABEL min -1.2 max 3.4 mean 0.01 std 0.9" (with the non-finite count when any).
std::string format_value_stats(std::string_view label, const ValueStats& stats);

struct CompareResult {
  std::string name;            // the tensor compared (an ONNX output name), for reports
  ir::Shape shape;             // of the expected tensor
  std::string shape_error;     // non-empty when the shapes differ (then nothing else is compared)
  Tolerance tolerance;
  int64_t count = 0;           // elements compared
  int64_t num_failed = 0;
  int64_t num_nan = 0;         // elements where one side is NaN and the other is not
  double max_abs_error = 0.0;  // over finite pairs
  double max_rel_error = 0.0;  // over finite pairs with expected != 0
  double mean_abs_error = 0.0;
  double rms_error = 0.0;
  std::vector<ElementDiff> worst;  // failing elements first, then by absolute error
  ValueStats actual_stats, expected_stats;

  bool passed() const { return shape_error.empty() && num_failed == 0; }
  // Every expected value is within atol of zero: then an output of zeros (or
  // anything that small) passes too, and the comparison proves little.
  bool expected_below_atol() const {
    return shape_error.empty() && count > 0 && expected_stats.max_abs <= tolerance.atol;
  }
};

// Compares `actual` against the reference `expected`; keeps the `worst_k`
// worst elements.
CompareResult compare(const HostTensor& actual, const HostTensor& expected, const Tolerance& tolerance,
                      const std::string& name = "", int worst_k = 10);

// A multi-line human-readable report: the verdict, the error statistics and
// the worst elements with their coordinates and both values.
std::string format_report(const CompareResult& result);

}  // namespace ios::exec
