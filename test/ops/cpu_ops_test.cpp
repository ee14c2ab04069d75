// The operator suite (op_suite.h) on the CPU backend, and the CPU kernel
// table's coverage of the operator table.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "cpu/executor.h"
#include "cpu/kernels.h"
#include "exec/plan.h"
#include "ir/element_type.h"
#include "ir/half_conversion.h"
#include "ir/op_info.h"
#include "op_suite.h"
#include "sched/unit_graph.h"

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
// The operators docs/cli.md says stay float32 at half precision, written out
// (not ir::kept_in_float32) so that the 16-bit suite below does not follow a
// change of that list silently.
const std::set<ir::OpKind> kKeptFloat32 = {ir::OpKind::kLayerNorm,
                                           ir::OpKind::kBatchNorm,
                                           ir::OpKind::kSoftmax,
                                           ir::OpKind::kLogSoftmax,
                                           ir::OpKind::kReduceMean,
                                           ir::OpKind::kReduceSum,
                                           ir::OpKind::kReduceProd,
                                           ir::OpKind::kReduceL1,
                                           ir::OpKind::kReduceL2,
                                           ir::OpKind::kReduceSumSquare,
                                           ir::OpKind::kReduceLogSumExp,
                                           ir::OpKind::kExp,
                                           ir::OpKind::kPow};

TEST_CASE("the operator suite on the CPU backend at float16 and bfloat16 against the float64 truth",
          "[ops][cpu][half]") {
  for (const ir::ElementType type : {ir::ElementType::kFloat16, ir::ElementType::kBFloat16}) {
    const double ulp =
        type == ir::ElementType::kFloat16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
    for (OpCase c : all_op_cases()) {
      // The Casts' own cases are typed already; the operators kept in
      // float32 (the list test/ir/precision_test.cpp pins) stay float32 and
      // are checked above.
      if (c.op == ir::OpKind::kCast || kKeptFloat32.count(c.op) != 0) continue;
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

// Exp in a converted graph: x -> Abs -> Exp -> y with |x| up to 15. e^11.1
// is beyond float16's largest value (65504), so an Exp computed or stored in
// float16 gives inf, and one in bfloat16 is off by up to 2^-9 relative:
// kept in float32 (float32 graph input and output), Exp gives e^|x| to
// float32's accuracy, finite, with Abs in the 16-bit type before it.
TEST_CASE("Exp at float16 and bfloat16 stays float32: e^|x| beyond 65504 without inf",
          "[ops][cpu][half]") {
  // Multiples of 1/8 below 16: exact in float16 and bfloat16, so the 16-bit
  // Abs before Exp rounds nothing.
  const std::vector<float> x = {-15.0f, -13.75f, -12.5f,  -11.25f, -3.0f, 0.0f,
                                0.5f,   2.0f,    11.125f, 11.5f,   12.0f, 15.0f};
  const ir::Shape shape{1, 12};
  for (const ir::ElementType type : {ir::ElementType::kFloat16, ir::ElementType::kBFloat16}) {
    INFO(ir::type_name(type));
    ir::Graph g;
    auto tensor = [&g, &shape](const std::string& name) {
      ir::Tensor t;
      t.name = name;
      t.shape = shape;
      return g.add_tensor(std::move(t));
    };
    auto node = [&g](ir::OpKind op, const std::string& name, ir::TensorId in, ir::TensorId out) {
      ir::Node n;
      n.name = name;
      n.op = op;
      n.inputs = {in};
      n.outputs = {out};
      g.add_node(std::move(n));
    };
    const ir::TensorId in = tensor("x"), a = tensor("a"), y = tensor("y");
    g.inputs().push_back(in);
    node(ir::OpKind::kAbs, "abs", in, a);
    node(ir::OpKind::kExp, "exp", a, y);
    g.outputs().push_back(y);
    ir::ConversionOptions options;
    options.type = type;  // float32 inputs and outputs
    ir::convert_to_half(g, options, "exp.onnx");
    int half_nodes = 0;
    for (const ir::Node& n : g.nodes())
      half_nodes += n.op == ir::OpKind::kAbs && g.tensor(n.outputs[0]).type == type;
    CHECK(half_nodes == 1);  // the graph around Exp is in the 16-bit type
    const sched::UnitGraph units = sched::UnitGraph::form(g);
    const exec::ExecPlan plan = exec::lower(units, sequential_schedule(units));
    const HostMap out = run_cpu(units, plan, {{"x", exec::HostTensor(shape, x)}});
    REQUIRE(out.count("y") == 1);
    const std::vector<float>& got = out.at("y").data;
    REQUIRE(got.size() == x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const double expected = std::exp(std::fabs(static_cast<double>(x[i])));
      INFO("x = " << x[i] << ": e^|x| = " << expected << ", got " << got[i]);
      CHECK(std::isfinite(got[i]));
      CHECK(std::fabs(static_cast<double>(got[i]) - expected) <= 1e-6 * (1.0 + expected));
    }
  }
}

}  // namespace
}  // namespace ios::optest
