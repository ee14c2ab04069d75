// The CUDA engine's memory comes from the same plan the schedule's reported
// memory does (exec/schedule_memory.h): a host test that the CUDA program's
// buffers are the storage plan's storages (then the lowering's scratch) and
// that its arena is the reported one plus that scratch; on a GPU, the
// engine's allocations against the driver's figure for this process (NVML's
// per-process memory, so that other processes on the GPU do not count; where
// NVML cannot name this process, the free-memory difference, which the kit
// then measures with this case alone on the GPU).
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <optional>
#include <vector>

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
#include <dlfcn.h>
#include <unistd.h>
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
// The device memory the driver attributes to this process, from NVML
// (libnvidia-ml.so.1 ships with the driver; its header is not installed
// here, so the four entry points are declared by their documented ABI:
// nvmlProcessInfo_v2_t is {pid, usedGpuMemory, gpuInstanceId,
// computeInstanceId}). Empty when NVML is missing or does not list this
// process (a container whose process ids differ from the driver's).
class ProcessDeviceMemory {
 public:
  ProcessDeviceMemory() {
    lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib_ == nullptr) return;
    init_ = reinterpret_cast<int (*)()>(dlsym(lib_, "nvmlInit_v2"));
    by_bus_ = reinterpret_cast<int (*)(const char*, void**)>(dlsym(lib_, "nvmlDeviceGetHandleByPciBusId_v2"));
    processes_ = reinterpret_cast<int (*)(void*, unsigned*, ProcessInfo*)>(
        dlsym(lib_, "nvmlDeviceGetComputeRunningProcesses_v2"));
    shutdown_ = reinterpret_cast<int (*)()>(dlsym(lib_, "nvmlShutdown"));
    char bus[32] = {};
    int device = 0;
    if (init_ == nullptr || by_bus_ == nullptr || processes_ == nullptr || shutdown_ == nullptr ||
        cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetPCIBusId(bus, sizeof bus, device) != cudaSuccess ||
        init_() != 0) {
      return;
    }
    initialized_ = true;
    if (by_bus_(bus, &device_) != 0) device_ = nullptr;
  }
  ~ProcessDeviceMemory() {
    if (initialized_) shutdown_();
    if (lib_ != nullptr) dlclose(lib_);
  }
  ProcessDeviceMemory(const ProcessDeviceMemory&) = delete;
  ProcessDeviceMemory& operator=(const ProcessDeviceMemory&) = delete;

  std::optional<int64_t> bytes() const {
    if (device_ == nullptr) return std::nullopt;
    std::vector<ProcessInfo> list(256);
    auto count = static_cast<unsigned>(list.size());
    if (processes_(device_, &count, list.data()) != 0) return std::nullopt;
    for (unsigned i = 0; i < count && i < list.size(); ++i) {
      if (list[i].pid == static_cast<unsigned>(getpid())) return static_cast<int64_t>(list[i].used_bytes);
    }
    return std::nullopt;
  }

 private:
  struct ProcessInfo {
    unsigned pid;
    unsigned long long used_bytes;
    unsigned gpu_instance;
    unsigned compute_instance;
  };
  void* lib_ = nullptr;
  void* device_ = nullptr;
  bool initialized_ = false;
  int (*init_)() = nullptr;
  int (*by_bus_)(const char*, void**) = nullptr;
  int (*processes_)(void*, unsigned*, ProcessInfo*) = nullptr;
  int (*shutdown_)() = nullptr;
};

// What the driver says this process holds: NVML's per-process figure, else
// the device's used memory (total - free), which counts other processes too.
struct DriverFigure {
  int64_t bytes = 0;
  bool per_process = false;
};

DriverFigure driver_figure(const ProcessDeviceMemory& nvml) {
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  if (const std::optional<int64_t> b = nvml.bytes()) return {*b, true};
  size_t free = 0, total = 0;
  REQUIRE(cudaMemGetInfo(&free, &total) == cudaSuccess);
  return {static_cast<int64_t>(total) - static_cast<int64_t>(free), false};
}

TEST_CASE("the engine's allocations: reported, and seen by the driver", "[gpu][memory]") {
  const Model m = load("inception_v3-bdyn.onnx");
  for (const std::string scheduler : {"sequential", "ios"}) {
    INFO(scheduler);
    const exec::ExecPlan plan = exec::lower(*m.units, schedule_with(scheduler, *m.units));
    const sched::MemoryInfo reported = exec::schedule_memory(*m.units, plan);
    REQUIRE(cudaFree(nullptr) == cudaSuccess);  // the context exists before the first figure
    const ProcessDeviceMemory nvml;
    const DriverFigure before = driver_figure(nvml);
    cuda::Engine engine(*m.units, plan);
    const DriverFigure after = driver_figure(nvml);
    REQUIRE(before.per_process == after.per_process);
    const cuda::EngineInfo& info = engine.info();
    const int64_t driver = after.bytes - before.bytes;
    std::cerr << "driver figure: " << (after.per_process ? "NVML, this process" : "device used memory (all processes)")
              << "\n";
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
