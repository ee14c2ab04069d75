// The operator suite (test/ops/op_suite.h) on the CUDA backend: every case
// the CPU backend runs, on the GPU in FP32 with and without CUDA graph
// capture. The [host] part checks, without a GPU, that the CUDA backend
// covers the operator table: every operator's math or lowering exists.
#include <catch2/catch.hpp>

#include <set>

#include "cuda/engine.h"
#include "gpu_util.h"
#include "ir/elementwise.h"
#include "ir/op_info.h"
#include "op_suite.h"

#ifdef IOS_HAVE_CUDA
#include "cuda/program.h"
#include "exec/storage_plan.h"
#endif

namespace ios::gputest {
namespace {

TEST_CASE("every element-wise operator of the operator table has CUDA math", "[host][ops]") {
  // The CUDA element-wise kernel runs the functors of ir/elementwise.h; the
  // one element-wise operator without a functor, BatchNormalization, lowers
  // to a per-channel Mul and Add.
  for (const ir::OpInfo& info : ir::all_ops()) {
    INFO(info.onnx_name);
    switch (info.traits.elementwise) {
      case ir::Elementwise::kUnary:
        CHECK((ir::ew::has_unary(info.kind) || info.kind == ir::OpKind::kBatchNorm));
        break;
      case ir::Elementwise::kBinary:
        CHECK(ir::ew::has_binary(info.kind));
        break;
      case ir::Elementwise::kNone:
        CHECK_FALSE(ir::ew::has_unary(info.kind));
        CHECK_FALSE(ir::ew::has_binary(info.kind));
        break;
    }
  }
}

#ifdef IOS_HAVE_CUDA
TEST_CASE("every case of the operator suite lowers for the CUDA backend", "[host][ops]") {
  std::set<ir::OpKind> lowered;
  for (const optest::OpCase& c : optest::all_op_cases()) {
    INFO(c.name);
    const sched::UnitGraph units = sched::UnitGraph::form(c.graph);
    const exec::ExecPlan plan = exec::lower(units, sequential_schedule(units));
    CHECK_NOTHROW(cuda::lower_program(units, plan));
    lowered.insert(c.op);
  }
  for (const ir::OpInfo& info : ir::all_ops()) {
    INFO(info.onnx_name);
    CHECK(lowered.count(info.kind) == 1);
  }
}

// Each operation declares the values it uses (the memory plan's only source
// of a buffer's users, and all that its launch may touch on the device).
// Every case's operations declare what they write, every buffer has a user,
// and the buffers past the storage plan's own are the lowering's scratch:
// requested from the storage plan, non-persistent, used by one launch.
TEST_CASE("every CUDA operation of the operator suite declares its buffers", "[host][ops]") {
  for (const optest::OpCase& c : optest::all_op_cases()) {
    INFO(c.name);
    const sched::UnitGraph units = sched::UnitGraph::form(c.graph);
    const exec::ExecPlan plan = exec::lower(units, sequential_schedule(units));
    const cuda::Program p = cuda::lower_program(units, plan);
    for (const cuda::Launch& launch : p.launches) {
      for (const auto& op : launch.ops) {
        INFO(op->describe(p));
        cuda::Uses uses;
        op->uses(uses);
        CHECK_FALSE(uses.writes.empty());
        for (const std::vector<int>* list : {&uses.reads, &uses.writes}) {
          for (int v : *list) CHECK((v >= 0 && v < static_cast<int>(p.values.size())));
        }
      }
    }
    const size_t planned = exec::StoragePlan(units, plan).storages().size();
    REQUIRE(p.buffers.size() >= planned);
    const std::vector<std::vector<int>> users = p.buffer_users();
    for (size_t b = 0; b < p.buffers.size(); ++b) {
      INFO(p.buffers[b].name);
      CHECK_FALSE(users[b].empty());
      if (b >= planned) {
        CHECK_FALSE(p.buffers[b].persistent);
        CHECK(users[b].size() == 1);
      }
    }
  }
}
#endif

TEST_CASE("the operator suite on the CUDA backend", "[gpu][ops]") {
  for (bool cuda_graph : {false, true}) {
    cuda::EngineOptions options;
    options.precision = cuda::Precision::kFp32;
    options.cuda_graph = cuda_graph;
    const auto run = [&](const sched::UnitGraph& units, const exec::ExecPlan& plan, const optest::HostMap& inputs) {
      return run_gpu(units, plan, inputs, options);
    };
    for (const optest::OpCase& c : optest::all_op_cases()) {
      optest::check_case(c, cuda_graph ? "cuda (graph)" : "cuda", run);
    }
  }
}

}  // namespace
}  // namespace ios::gputest
