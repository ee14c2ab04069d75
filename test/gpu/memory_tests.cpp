// The CUDA engine's memory comes from the same plan the schedule's reported
// memory does (exec/schedule_memory.h): a host test that the CUDA program's
// buffers are the storage plan's storages (then the lowering's scratch) and
// that its arena is the reported one plus that scratch; on a GPU, the
// engine's allocations against the driver's free-memory figures.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "cost/device_profile.h"
#include "cost/simulated.h"
#include "cuda/engine.h"
#include "cuda/lowering.h"
#include "cuda/program.h"
#include "exec/memory_layout.h"
#include "exec/schedule_memory.h"
#include "exec/storage_plan.h"
#include "onnx/importer.h"
#include "sched/scheduler.h"
#include "test_paths.h"

#if IOS_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace ios {
namespace {

struct Model {
  ir::Graph graph;
  std::unique_ptr<sched::UnitGraph> units;
};

Model load(const std::string& file) {
  const auto path = test::model(file);
  INFO("model " << path.string() << " (made by onnx_models/export_models.py)");
  REQUIRE(std::filesystem::exists(path));
  onnx::ImportOptions options;
  options.batch = 1;
  Model m;
  m.graph = onnx::import_model(path.string(), options).graph;
  m.units = std::make_unique<sched::UnitGraph>(sched::UnitGraph::form(m.graph));
  return m;
}

sched::Schedule schedule_with(const std::string& name, const sched::UnitGraph& units) {
  cost::SimulatedCostModel cost(units, cost::load_device_profile("h100"));
  const sched::SchedulerEntry& entry = sched::find_scheduler(name);
  sched::SearchStats stats;
  return entry.make(sched::Params::parse(entry.name, entry.params, ""))->run(units, cost, stats);
}

}  // namespace

TEST_CASE("the CUDA program's arena is the reported arena plus its scratch", "[host][memory]") {
  for (const std::string file : {"squeezenet1_1-bdyn.onnx", "inception_v3-bdyn.onnx", "googlenet-bdyn.onnx"}) {
    const Model m = load(file);
    for (const std::string scheduler : {"sequential", "greedy", "ios", "lios", "nimble"}) {
      INFO(file << " " << scheduler);
      const exec::ExecPlan plan = exec::lower(*m.units, schedule_with(scheduler, *m.units));
      const exec::StoragePlan storage(*m.units, plan);
      const cuda::Program program = cuda::lower_program(*m.units, plan);
      // The first buffers are the storage plan's storages, in order.
      REQUIRE(program.buffers.size() >= storage.storages().size());
      for (size_t s = 0; s < storage.storages().size(); ++s) {
        CHECK(program.buffers[s].elements == storage.storages()[s].elements);
        CHECK(program.buffers[s].persistent == storage.storages()[s].persistent);
      }
      const exec::HappensBefore order(static_cast<int>(program.launches.size()), std::max(program.num_streams, 1),
                                      program.num_events, program.steps);
      const int64_t cuda_arena = exec::plan_memory(program.memory_requests(), order, cuda::kBufferAlignment).total_bytes;
      const int64_t reported = exec::schedule_memory(*m.units, plan).arena_bytes;
      int64_t scratch = 0;
      for (size_t b = storage.storages().size(); b < program.buffers.size(); ++b) {
        scratch += (program.buffers[b].elements * 4 + cuda::kBufferAlignment - 1) / cuda::kBufferAlignment *
                   cuda::kBufferAlignment;
      }
      if (scratch == 0) {
        CHECK(cuda_arena == reported);
      } else {
        CHECK(cuda_arena >= reported - scratch);
        CHECK(cuda_arena <= reported + scratch);
      }
    }
  }
}

#if IOS_HAVE_CUDA
TEST_CASE("the engine's allocations: reported, and seen by the driver", "[gpu][memory]") {
  const Model m = load("inception_v3-bdyn.onnx");
  for (const std::string scheduler : {"sequential", "ios"}) {
    INFO(scheduler);
    const exec::ExecPlan plan = exec::lower(*m.units, schedule_with(scheduler, *m.units));
    const sched::MemoryInfo reported = exec::schedule_memory(*m.units, plan);
    size_t free_before = 0, free_after = 0, total = 0;
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    REQUIRE(cudaMemGetInfo(&free_before, &total) == cudaSuccess);
    cuda::Engine engine(*m.units, plan);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    REQUIRE(cudaMemGetInfo(&free_after, &total) == cudaSuccess);
    const cuda::EngineInfo& info = engine.info();
    const auto driver = static_cast<int64_t>(free_before) - static_cast<int64_t>(free_after);
    const auto engine_bytes = static_cast<int64_t>(info.arena_bytes + info.weights_bytes + info.workspace_bytes);
    std::cerr << fmt::format("{}: reported peak {} (arena {}, weights {}, workspaces {} predicted); engine arena {}, "
                             "weights {}, workspaces {}; driver {}\n",
                             scheduler, reported.peak_bytes(), reported.arena_bytes, reported.weights_bytes,
                             reported.workspaces_total(), info.arena_bytes, info.weights_bytes, info.workspace_bytes,
                             driver);
    // The arena is the storage plan's (plus the lowering's scratch).
    CHECK(static_cast<int64_t>(info.arena_bytes) >= reported.arena_bytes);
    // The driver saw at least what the engine says it allocated, and not
    // much more (streams, events, cuDNN handles and the CUDA graph: well
    // under 256 MiB; allocations are rounded to 2 MiB pages).
    CHECK(driver >= engine_bytes);
    CHECK(driver <= engine_bytes + (int64_t{256} << 20));
  }
}
#endif

}  // namespace ios
