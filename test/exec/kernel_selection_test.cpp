// The kernel selection: parsed once where it enters, and the version that
// profile rows and plan-cache entries carry.
#include "exec/kernel_selection.h"

#include <catch2/catch.hpp>

#include "core/error.h"

using ios::exec::ConvKernels;

TEST_CASE("conv kernels: names round-trip, others are refused by name", "[exec]") {
  for (ConvKernels k : {ConvKernels::kLegacy, ConvKernels::kGraph}) {
    CHECK(ios::exec::parse_conv_kernels(ios::exec::conv_kernels_name(k)) == k);
  }
  CHECK_FALSE(ios::exec::parse_conv_kernels("cudnn").has_value());
  CHECK_THROWS_WITH(ios::exec::parse_conv_kernels("Graph", "conv_kernels"),
                    "conv_kernels 'Graph': expected legacy or graph");
  // Each way has its own version: a stage measured one way is not reused by the other.
  CHECK(ios::exec::kernel_selection(ConvKernels::kLegacy) == "legacy-1");
  CHECK(ios::exec::kernel_selection(ConvKernels::kGraph) == "graph-1");
}
