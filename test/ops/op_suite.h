// The backend-independent operator test suite (ONNX Runtime's OpTester idea):
// each operator case is written once, as a one-node IR graph with small
// inputs and expected outputs computed in float64 by the case itself, and
// runs on every backend present: the CPU executor (test/ops, ctest label
// `ops`) and the CUDA engine (test/gpu, reported skipped without a GPU).
//
// Every case runs through the real pipeline: unit formation, a sequential
// schedule, lowering to an ExecPlan, the backend. A unary element-wise case
// also runs fused, as the epilogue of an identity 1x1 convolution, so the
// backends' fused paths are tested with the same expected values.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "exec/npy.h"
#include "exec/plan.h"
#include "ir/graph.h"
#include "sched/schedule.h"
#include "sched/unit_graph.h"

namespace ios::optest {

using HostMap = std::map<std::string, exec::HostTensor>;

struct OpCase {
  std::string name;  // e.g. "Tanh" or "Tanh fused after a convolution"
  ir::OpKind op = ir::OpKind::kRelu;
  ir::Graph graph;
  HostMap inputs;
  std::map<std::string, std::vector<double>> expected;  // by output name
  double tolerance = 1e-5;                              // |y - e| <= tol * (1 + |e|)
  int units = 0;  // when > 0, the schedule units the graph must form (1: the fused variants)
};

// Every case of the suite (fused variants included), in OpKind order.
std::vector<OpCase> all_op_cases();

// One unit per stage, in UnitId order (a topological order); the GPU tests use it too.
sched::Schedule sequential_schedule(const sched::UnitGraph& units);

// Runs a lowered plan on one backend and returns every graph output.
using Backend = std::function<HostMap(const sched::UnitGraph&, const exec::ExecPlan&, const HostMap&)>;

// Runs `op_case` on `backend` and CHECKs every output against its expected
// values (Catch2 assertions, naming the case and the backend).
void check_case(const OpCase& op_case, const std::string& backend_name, const Backend& backend);

}  // namespace ios::optest
