// The operator suite (op_suite.h) on the CPU backend, and the CPU kernel
// table's coverage of the operator table.
#include <catch2/catch.hpp>

#include <set>

#include <cmath>

#include "cpu/executor.h"
#include "cpu/kernels.h"
#include "ir/element_type.h"
#include "ir/op_info.h"
#include "ir/half_conversion.h"
#include "op_suite.h"

namespace ios::optest {
namespace {

HostMap run_cpu(const sched::UnitGraph& units, const exec::ExecPlan& plan, const HostMap& inputs) {
  cpu::CpuExecutor executor(units, plan);
  return executor.run(inputs);
}

TEST_CASE("every operator of the operator table has a CPU kernel", "[ops][cpu]") {
  for (const ir::OpInfo& info : ir::all_ops()) {
    INFO(info.onnx_name);
    CHECK(cpu::kernel_for(info.kind) != nullptr);
  }
}

TEST_CASE("every operator of the operator table has a case in the operator suite", "[ops]") {
  std::set<ir::OpKind> covered;
  for (const OpCase& c : all_op_cases()) covered.insert(c.op);
  for (const ir::OpInfo& info : ir::all_ops()) {
    INFO(info.onnx_name);
    CHECK(covered.count(info.kind) == 1);
  }
}

TEST_CASE("the operator suite on the CPU backend", "[ops][cpu]") {
  for (const OpCase& c : all_op_cases()) check_case(c, "cpu", run_cpu);
}

// The same cases at float16 and bfloat16 (inputs, weights and outputs
// converted with ir::convert_to_half) against the same float64 truths. A
// 16-bit run differs from the truth by the rounding of its inputs, weights
// and stored outputs: under 2 ulps of 1 (2^-10 for float16, 2^-7 for
// bfloat16) relative to 1 + |e| on every case (0.25 ulp fails 534 of 10532
// checks). The bound is 4 ulps: twice that, far below what a wrong window,
// axis or pad gives.
TEST_CASE("the operator suite on the CPU backend at float16 and bfloat16 against the float64 truth",
          "[ops][cpu][half]") {
  for (const ir::ElementType type : {ir::ElementType::kFloat16, ir::ElementType::kBFloat16}) {
    const double ulp =
        type == ir::ElementType::kFloat16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
    for (OpCase c : all_op_cases()) {
      // The Casts' own cases are typed already; the kept-float32 operators
      // stay float32 and are checked above.
      if (c.op == ir::OpKind::kCast || ir::kept_in_float32(c.op)) continue;
      ir::ConversionOptions options;
      options.type = type;
      options.half_io = true;
      ir::convert_to_half(c.graph, options, c.name);
      c.units = 0;  // the conversion may add Casts
      c.tolerance = std::max(c.tolerance, 4.0 * ulp);
      check_case(c, ir::type_name(type), run_cpu);
    }
  }
}

}  // namespace
}  // namespace ios::optest
