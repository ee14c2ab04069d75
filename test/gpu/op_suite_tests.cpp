// The operator suite (test/ops/op_suite.h) on the CUDA backend: every case
// the CPU backend runs, on the GPU in FP32 with and without CUDA graph
// capture, and converted to float16 and bfloat16 (ir::convert_to_half with
// 16-bit inputs and outputs) against the CPU executor on the same converted
// graph. The [host] part checks, without a GPU, that the CUDA backend covers
// the operator table (every operator's math or lowering exists) and that
// the converted cases lower with buffers of their types.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>

#include "cuda/engine.h"
#include "gpu_util.h"
#include "ir/elementwise.h"
#include "cpu/executor.h"
#include "ir/op_info.h"
#include "ir/half_conversion.h"
#include "op_suite.h"

#ifdef IOS_HAVE_CUDA
#include "cuda/operations.h"
#include "cuda/program.h"
#include "exec/storage_plan.h"
#endif

namespace ios::gputest {
namespace {

constexpr ir::ElementType kHalfTypes[] = {ir::ElementType::kFloat16, ir::ElementType::kBFloat16};

bool all_float32(const ir::Graph& g) {
  for (size_t t = 0; t < g.num_tensors(); ++t) {
    if (g.tensor(static_cast<ir::TensorId>(t)).type != ir::ElementType::kFloat32) return false;
  }
  return true;
}

// A case's graph converted to `type`, inputs and outputs included (a copy;
// the case is left as it is). The cases that are typed already (the Casts
// between float types) are taken as they are.
ir::Graph converted(const optest::OpCase& c, ir::ElementType type) {
  ir::Graph g = c.graph;
  if (!all_float32(g)) return g;
  ir::ConversionOptions options;
  options.type = type;
  options.half_io = true;
  ir::convert_to_half(g, options, c.name);
  return g;
}

// The case's inputs rounded to `type` (what a 16-bit input holds; both
// backends would round them the same way on upload).
optest::HostMap rounded_inputs(const optest::HostMap& inputs, ir::ElementType type) {
  optest::HostMap out = inputs;
  for (auto& [name, tensor] : out) {
    for (float& v : tensor.data) v = ir::round_to(v, type);
  }
  return out;
}

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

// Every case converted to float16 and bfloat16: it lowers, every buffer has
// the type of the storage the storage plan gave it and is sized in bytes of
// that type, every value has its buffer's type, and every constant its
// tensor's type; the element-wise operations read and write the types of
// their values (a type-changing Cast reads one and writes the other).
TEST_CASE("every case of the operator suite converted to float16 and bfloat16 lowers with typed buffers",
          "[host][ops]") {
  int half_buffers = 0, casts = 0;
  for (const ir::ElementType type : kHalfTypes) {
    for (const optest::OpCase& c : optest::all_op_cases()) {
      INFO(c.name << " in " << ir::type_name(type));
      ir::Graph g;
      REQUIRE_NOTHROW(g = converted(c, type));
      const sched::UnitGraph units = sched::UnitGraph::form(g);
      const exec::ExecPlan plan = exec::lower(units, sequential_schedule(units));
      cuda::Program p;
      REQUIRE_NOTHROW(p = cuda::lower_program(units, plan));
      const exec::StoragePlan storage(units, plan);
      for (size_t b = 0; b < storage.storages().size(); ++b) {
        CHECK(p.buffers[b].type == storage.storages()[b].type);
        CHECK(p.buffers[b].bytes() == storage.storages()[b].bytes());
      }
      const std::vector<exec::MemoryRequest> requests = p.memory_requests();
      for (size_t b = 0; b < p.buffers.size(); ++b) {
        CHECK(requests[b].bytes == p.buffers[b].elements * ir::bytes_of(p.buffers[b].type));
        half_buffers += p.buffers[b].type == type ? 1 : 0;
      }
      for (const cuda::Value& v : p.values) CHECK(v.type == p.buffers.at(static_cast<size_t>(v.buffer)).type);
      for (const cuda::Constant& k : p.constants) {
        if (const auto t = g.find_tensor(k.name)) CHECK(k.type == g.tensor(*t).type);
      }
      // Graph inputs and outputs are 16-bit tensors (half_io), in buffers of the type.
      for (const auto& io : {p.inputs, p.outputs}) {
        if (!all_float32(c.graph)) break;  // a typed case keeps its own
        for (const auto& [name, v] : io) {
          INFO(name);
          CHECK(p.values.at(static_cast<size_t>(v)).type == type);
        }
      }
      for (const cuda::Launch& launch : p.launches) {
        for (const auto& op : launch.ops) {
          const auto* ew = dynamic_cast<const cuda::EwOp*>(op.get());
          if (ew == nullptr) continue;
          const bool is_cast = std::any_of(ew->steps.begin(), ew->steps.end(),
                                           [](const cuda::EwStep& s) { return s.kind == ir::OpKind::kCast; });
          const ir::ElementType to = p.values.at(static_cast<size_t>(ew->y)).type;
          const ir::ElementType from = ew->x.is_value() ? p.values.at(static_cast<size_t>(ew->x.index)).type
                                                        : p.constants.at(static_cast<size_t>(ew->x.index)).type;
          if (from != to) {
            CHECK(is_cast);  // only a Cast changes the type
            CHECK(ew->describe(p).find(std::string("(") + ir::type_name(from) + " -> " + ir::type_name(to) + ")") !=
                  std::string::npos);
            ++casts;
          }
        }
      }
    }
  }
  CHECK(half_buffers > 0);
  CHECK(casts > 0);  // the sensitive operators stay float32 between Casts
}
#endif

// Each case converted to float16 and bfloat16 on the GPU against the CPU
// executor on the same converted graph and plan (the CPU reference rounds
// wherever the GPU stores, so it computes what the GPU should): each element
// within 4 ulps of the type times 1 + |expected| (half_bound; the GPU's own
// summation order, its fused epilogues rounding once where the CPU rounds
// the same, and its float math functions differ by less than that).
TEST_CASE("the operator suite in float16 and bfloat16 on the CUDA backend", "[gpu][ops]") {
  for (const ir::ElementType type : kHalfTypes) {
    for (const optest::OpCase& c : optest::all_op_cases()) {
      const std::string what = c.name + " in " + ir::type_name(type);
      INFO(what);
      const ir::Graph g = converted(c, type);
      const sched::UnitGraph units = sched::UnitGraph::form(g);
      const exec::ExecPlan plan = exec::lower(units, sequential_schedule(units));
      const optest::HostMap inputs = all_float32(c.graph) ? rounded_inputs(c.inputs, type) : c.inputs;
      cpu::CpuExecutor cpu(units, plan, cpu::ExecutorOptions{1});
      const optest::HostMap expected = cpu.run(inputs);
      // With the CUDA graph only (the float32 suite covers plain launches;
      // the capture does not depend on the types), to keep the kit's time.
      check_half_outputs(run_gpu(units, plan, inputs, cuda::EngineOptions{}), expected, type);
    }
  }
}

TEST_CASE("the operator suite on the CUDA backend", "[gpu][ops]") {
  for (bool cuda_graph : {false, true}) {
    cuda::EngineOptions options;
    options.math = ir::MathMode::kFp32;
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
