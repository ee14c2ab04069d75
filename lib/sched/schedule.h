// A schedule: pure data, produced by a scheduler, written to and read from a
// versioned JSON file (schedule_io.h), lowered to an ExecPlan (lib/exec).
//
// Two forms, both lowering to the same per-stream plan:
//  - staged (IOS, greedy, sequential, DOS): stages run one after another; a
//    stage is either concurrent groups (groups run on their own streams, the
//    units of a group in order) or one operator merge (convolutions reading
//    the same tensor computed as one convolution).
//  - streamed (LIOS, Nimble): each unit on a stream, in a global issue order;
//    cross-stream dependencies become event waits.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "ir/graph.h"
#include "ir/precision.h"
#include "sched/unit_graph.h"

namespace ios::sched {

enum class Strategy { kConcurrent, kMerge };
std::string_view strategy_name(Strategy strategy);  // "concurrent" / "merge"

struct Stage {
  Strategy strategy = Strategy::kConcurrent;
  // kConcurrent: each group runs on its own stream, its units in order.
  // kMerge: exactly one group, its convolutions (or matrix products) merged into one.
  std::vector<std::vector<UnitId>> groups;
  double predicted_ms = 0.0;  // the cost model's latency for this stage
};

// What separates a staged schedule's stages when it runs. kStages: a barrier
// (every stream joins, then forks), as IOS describes. kDependencies: only the
// true dependencies between units (event waits, as a streamed schedule has),
// so a stage's stragglers overlap the next stage's work; the stages then
// only fix each unit's stream and the issue order (ios-optimize --form).
enum class Barriers { kStages, kDependencies };
std::string_view barriers_name(Barriers barriers);  // "stages" / "dependencies"

struct StagedSchedule {
  std::vector<Stage> stages;
  Barriers barriers = Barriers::kStages;
};

struct StreamedSchedule {
  struct Launch {
    UnitId unit = 0;
    int stream = 0;
    double predicted_start_ms = 0.0;
    double predicted_finish_ms = 0.0;
  };
  int num_streams = 1;
  std::vector<Launch> launches;  // issue order (a topological order of units)
};

// Where and for what a schedule was made. Checked when a schedule is loaded.
struct ModelInfo {
  std::string path;      // as given to ios-optimize
  std::string sha256;    // of the ONNX file's bytes
  int64_t batch = 1;
  std::vector<std::pair<std::string, ir::Shape>> inputs;  // name, static shape
};

struct DeviceInfo {
  std::string name;                // "NVIDIA H100 80GB HBM3" or a profile name
  std::string compute_capability;  // "9.0"; empty for a simulated profile
  std::string driver;              // empty when not measured
  std::string cudnn;               // empty when not measured
};

struct SchedulerInfo {
  std::string name;                                         // registry name, e.g. "ios"
  std::vector<std::pair<std::string, std::string>> params;  // effective parameters, sorted
  std::string cost_model;                                   // "simulated" / "measured"
  // How the cost model assumed the schedule runs: "graph" (a captured CUDA
  // graph), "plain" (launches issued one by one from the host, ios-run
  // --no-cuda-graph) or "synced" (plain, and the host synchronizes the
  // device after each stage: ios-run --launch synced); empty in files
  // written before it was recorded.
  std::string launch;
};

// The launch modes a schedule is planned for (ios-optimize --launch), run
// under (ios-run --launch) and recorded with (scheduler.launch).
inline const std::vector<std::string> kLaunchModes = {"graph", "plain", "synced"};

// A launch mode in words, for reports and warnings.
inline std::string_view launch_words(std::string_view launch) {
  if (launch == "synced") return "plain launches with a device synchronization after each stage";
  return launch == "plain" ? "plain launches" : "a CUDA graph";
}

// A schedule's peak device memory, in bytes (exec/schedule_memory.h computes
// it, docs/schedule-format.md describes the fields). Absent from files
// written before it was recorded.
struct MemoryInfo {
  int64_t arena_bytes = 0;      // activations placed in one arena (inputs and outputs included)
  int64_t inputs_bytes = 0;     // the graph inputs in it
  int64_t outputs_bytes = 0;    // the graph outputs in it
  int64_t live_peak_bytes = 0;  // the most activation bytes live during one launch (no placement)
  int64_t weights_bytes = 0;    // constants, merged weights included
  int64_t merged_weights_bytes = 0;  // the concatenated weights of merged kernels
  std::vector<int64_t> workspace_bytes;  // per stream in use
  bool workspaces_predicted = true;      // estimated without a GPU (exec/schedule_memory.h)
  int64_t limit_bytes = 0;               // ios-optimize --memory-limit; 0: none

  int64_t workspaces_total() const {
    int64_t sum = 0;
    for (int64_t w : workspace_bytes) sum += w;
    return sum;
  }
  // What the device holds at the schedule's peak: arena, weights, workspaces.
  int64_t peak_bytes() const { return arena_bytes + weights_bytes + workspaces_total(); }
  bool operator==(const MemoryInfo&) const = default;
};

// The element types a schedule was found for (docs/schedule-format.md,
// "precision"). Files written before it was recorded lack it: they are
// float32 schedules, TF32 or FP32 as ios-run is told.
struct PrecisionInfo {
  ir::Precision value;                 // tf32, fp32 (a float32 graph's math), fp16, bf16
  bool converted = false;              // ios converted a float32 model; else the file's own types
  bool half_io = false;                // converted with inputs and outputs in the 16-bit type
  std::vector<std::string> keep_fp32;  // converted with these nodes or operator types kept float32
  // Tensors of the graph by type, in ElementType order (float32, float16, bfloat16).
  std::array<int64_t, ir::kNumElementTypes> tensors{};

  bool is_half() const { return value.is_half(); }
  const char* name() const { return value.name(); }
  // Whether two records describe the same graph (tf32 and fp32 do: they
  // differ only in the math of float32 convolutions).
  bool same_graph(const PrecisionInfo& o) const {
    return is_half() == o.is_half() && (!is_half() || value == o.value) && converted == o.converted &&
           half_io == o.half_io && keep_fp32 == o.keep_fp32;
  }
};

struct Schedule {
  ModelInfo model;
  std::optional<PrecisionInfo> precision;  // set by ios-optimize; optional in files
  DeviceInfo device;
  SchedulerInfo scheduler;
  double predicted_latency_ms = 0.0;
  std::variant<StagedSchedule, StreamedSchedule> body;
  std::optional<MemoryInfo> memory;  // set by ios-optimize; optional in files

  bool is_staged() const { return std::holds_alternative<StagedSchedule>(body); }
  const StagedSchedule& staged() const { return std::get<StagedSchedule>(body); }
  const StreamedSchedule& streamed() const { return std::get<StreamedSchedule>(body); }
};

// The schedule's form in words, for reports and pictures: "staged", "staged
// without stage barriers" or "streamed".
std::string_view form_description(const Schedule& schedule);

}  // namespace ios::sched
