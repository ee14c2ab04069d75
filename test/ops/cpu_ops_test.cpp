// The operator suite (op_suite.h) on the CPU backend, and the CPU kernel
// table's coverage of the operator table.
#include <catch2/catch.hpp>

#include <set>

#include "cpu/executor.h"
#include "cpu/kernels.h"
#include "ir/op_info.h"
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

}  // namespace
}  // namespace ios::optest
