// ios as a library: find a schedule for an ONNX CNN (Schedule::optimize),
// and run a model with a schedule from an application (Engine,
// ExecutionContext).
//
//   ios::Schedule s = ios::Schedule::optimize("resnet18.onnx", {.batch = 1});
//   ios::Engine engine("resnet18.onnx", s, {.backend = "cuda"});
//   auto context = engine.create_context();          // one per thread
//   context->enqueue(inputs, outputs, stream);       // caller's stream and buffers
//
// The shape of TensorRT's runtime (engine -> execution context ->
// enqueueV3(stream)) and ONNX Runtime's session with a user compute stream:
// an Engine is immutable after construction and shared by every thread; an
// ExecutionContext belongs to one thread at a time. Errors are exceptions
// (ios/error.h) carrying the one-line messages ios-optimize and ios-run
// print; no call writes to standard output (warnings go to standard error
// through the "ios" loggers, as the programs' do).
//
// The whole reference, with each call's errors and its threading and stream
// rules: docs/api.md. Link the CMake target ios::engine
// (find_package(ios)); this header and ios/error.h are the public API, the
// other installed headers are ios's own modules and may change.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ios/error.h"

namespace ios {

// Element types of inputs and outputs: float32, or the 16-bit type of a
// schedule made with --half-io (or of a model whose inputs are typed so).
enum class DataType { kFloat32, kFloat16, kBFloat16 };
// "float32", "float16", "bfloat16"
std::string to_string(DataType type);
// Bytes per element: 4, 2, 2.
size_t element_size(DataType type);

enum class DeviceKind { kCpu, kCuda };
// "cpu", "cuda"
std::string to_string(DeviceKind device);

// A model input or output as the engine runs it: static shape, element type
// (the type its graph takes or gives: float16 or bfloat16 for a schedule
// made with --half-io, float32 otherwise).
struct TensorDesc {
  std::string name;
  std::vector<int64_t> shape;
  DataType type = DataType::kFloat32;
  int64_t elements() const;
};

// A dense row-major float32 tensor on the host, owned. For an engine with
// 16-bit inputs its values are rounded to that type; 16-bit outputs come
// back widened to float32.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
};
using TensorMap = std::map<std::string, Tensor>;

// Caller-owned memory, dense row-major: no copy is kept, nothing is freed.
// For enqueue(), `device` is kCuda and `data` a device pointer of the
// engine's GPU (inputs are only read). `type` is kFloat32 (converted where
// the engine's I/O is 16-bit) or the TensorDesc's own 16-bit type (copied as
// is; element i is the IEEE binary16 or bfloat16 bit pattern, 2 bytes);
// another 16-bit type is refused (UserError naming the tensor).
struct TensorView {
  void* data = nullptr;
  std::vector<int64_t> shape;
  DataType type = DataType::kFloat32;
  DeviceKind device = DeviceKind::kCuda;
};
using TensorViewMap = std::map<std::string, TensorView>;

// ---------------------------------------------------------------------------
// Optimizing: the whole of ios-optimize as a call.

// ios-optimize's search options (docs/cli.md has each one's meaning and
// range); the defaults are the program's. A new option of ios-optimize is a
// field here, its line in lib/engine/schedule.cpp (pipeline_options) and
// its keyword in python/ios_module.cpp.
struct OptimizeOptions {
  int64_t batch = 0;                      // --batch; 0: the model's own (must be static)
  bool rewrite_batch = false;             // --rewrite-batch
  std::vector<std::string> input_shapes;  // --input-shape NAME:1x3x224x224
  std::string scheduler = "ios";          // --scheduler
  std::string scheduler_params;           // --params k=v,k=v
  std::string cost = "auto";              // --cost auto | simulated | measured
  // --device-profile: h100, h200, a100, v100, k80 or a profile file; unset:
  // h100 for the simulator, the GPU's own profile for a measured search.
  std::optional<std::string> device_profile;
  std::string profile_db;          // --profile-db; empty: ~/.cache/ios/profile.sqlite
  std::string conv_kernels;        // --conv-kernels legacy | graph (measured costs); empty: legacy
  std::string profile_budget;      // --profile-budget; empty: the program's default
  // --precision tf32 | fp32 (a float32 model's math) | fp16 | bf16
  // (converted, or a typed model's own); empty: tf32, or a typed model's
  // own 16-bit type.
  std::string precision;
  std::vector<std::string>
      keep_fp32;                   // --keep-fp32: nodes or operator types kept float32 (fp16/bf16)
  bool half_io = false;            // --half-io: inputs and outputs in the 16-bit type too
  int max_block_units = 40;        // --max-block-units
  double max_block_bound = 9.0;    // --max-block-bound
  // --time-limit in seconds (0: none); unset: the program's default (none
  // for a measured search, which its profile budget bounds).
  std::optional<double> time_limit_s;
  int threads = 0;               // --threads; 0: one per core
  std::string form = "staged";   // --form staged | streamed | best
  std::string launch = "graph";  // --launch graph | plain | synced
  // --memory-limit: the most device memory the schedule's peak may take,
  // bytes or a number with B, KiB, MiB or GiB ("512MiB"); empty: no limit.
  std::string memory_limit;
  int max_streams = 0;  // --max-streams (1-1024); 0: no bound
};

// One stage of a staged schedule: "concurrent" groups (each a chain of
// units run in order on its own stream) or one "merge" group.
struct ScheduleStage {
  std::string strategy;                          // "concurrent" | "merge"
  std::vector<std::vector<std::string>> groups;  // unit ids (ONNX output names)
};

// A schedule: the document ios-optimize writes (docs/schedule-format.md),
// with what ios-optimize printed about it when it was found here. Cheap to
// copy (shared, immutable).
class Schedule {
 public:
  // A schedule file; UserError for a file that is not one (it is validated
  // against a model when an Engine loads it).
  static Schedule load(const std::string& path);
  // The same, from the file's text; `source` names it in messages.
  static Schedule from_json(const std::string& text, const std::string& source = "<schedule>");
  // ios-optimize MODEL with `options`, as a call: import, cost model,
  // search, report. Writes no file. UserError / NoDeviceError as the
  // program's. (A static member rather than ios::optimize(): the name
  // ios::optimize is the namespace of ios-optimize's pipeline.)
  static Schedule optimize(const std::string& model_path, const OptimizeOptions& options = {});

  // Writes the file atomically (a temporary file, then a rename), creating
  // its folder. An existing file is replaced when it is an ios schedule, any
  // other only with `force`, as ios-optimize -o replaces it only with
  // --force (UserError otherwise, and for a path that cannot be written).
  void save(const std::string& path, bool force = false) const;
  const std::string& json() const;

  std::string scheduler() const;        // registry name, e.g. "ios"
  double predicted_latency_ms() const;  // as predicted or measured when it was found
  int64_t batch() const;
  std::string launch() const;                 // graph | plain | synced: what it was planned for
  // tf32 | fp32 | fp16 | bf16: what it was found for (docs/cli.md,
  // *Precision*); empty for a file that records none (a float32 schedule).
  std::string precision() const;
  bool staged() const;                        // staged (stages) or streamed (LIOS, Nimble)
  std::vector<ScheduleStage> stages() const;  // empty for a streamed schedule
  // The schedule's peak device memory in bytes as recorded in it
  // (memory.peak_bytes: activations, weights, workspaces); none in files
  // written before it was recorded.
  std::optional<int64_t> peak_memory_bytes() const;
  // ios-optimize's summary (text) and --report-json (JSON) of the search;
  // empty for a loaded schedule.
  const std::string& report() const;
  const std::string& report_json() const;

  struct Impl;
  explicit Schedule(std::shared_ptr<const Impl> impl);

 private:
  friend class Engine;
  std::shared_ptr<const Impl> impl_;
};

// ---------------------------------------------------------------------------
// Running.

// ios-run's options that change how a model runs (docs/cli.md). A new one
// is a field here, its use in lib/engine/engine.cpp (load_engine) and its
// keyword in python/ios_module.cpp.
struct EngineOptions {
  std::string backend = "cpu";  // cpu | cuda | sim (ios-run --backend)
  // Input shapes (ios-run --batch, --rewrite-batch, --input-shape); none:
  // those the schedule was made for.
  int64_t batch = 0;
  bool rewrite_batch = false;
  std::vector<std::string> input_shapes;
  bool force = false;     // accept a schedule made for another model file (--force)
  bool retarget =
      false;  // run a schedule made for another batch, or 16-bit type, at this one (--retarget)
  // graph | plain | synced (ios-run --launch); empty: what the schedule was
  // planned for, else graph. cuda only.
  std::string launch;
  // tf32 | fp32 | fp16 | bf16; empty: the precision the schedule records
  // (tf32 without one). tf32 and fp32 change a float32 graph's math (cuda);
  // fp16 and bf16 must match a half-precision schedule, or name the other
  // 16-bit type with `retarget`.
  std::string precision;
  int threads = 0;                 // cpu: threads per context, 0: all cores
  std::string device_profile;      // sim: a profile; empty: the schedule's device, else h100
  // cuda: how convolutions run (ios-run --conv-kernels): "legacy" (cuDNN's
  // legacy calls; empty means it too) or "graph" (cuDNN's graph-API plans,
  // timed, the fastest kept; the legacy call where no plan builds).
  std::string conv_kernels;
  // cuda, conv_kernels "graph": the plan cache file (ios-run --plan-cache);
  // empty: plans.sqlite beside the profile database. (The profile database
  // itself is a search option, OptimizeOptions::profile_db: an engine
  // measures no stages and reads none.)
  std::string plan_cache;
  // cuda: the CUDA device ordinal the engine and its contexts run on (as
  // cudaSetDevice counts them, after CUDA_VISIBLE_DEVICES). Every call that
  // uses the GPU makes it the calling thread's current device and restores
  // the caller's before returning. UserError when negative, or other than 0
  // with another backend; NoDeviceError when there is no such device.
  int device = 0;
};

// What the sim backend predicts for one iteration (it computes no outputs).
struct Prediction {
  double latency_ms = 0.0;
  std::string device;  // the device profile's name
  std::string note;    // what the number is
};

// Synchronization (cuda): the Engine's constructor and create_context()
// block the calling thread until the work they queue has run (the
// constructor: the weights uploaded, algorithms chosen to size the
// activations; create_context: one validating run of the plan per batch
// size) and allocate device memory
// (cudaMalloc), which serializes with other work on the device. Destroying
// an ExecutionContext, or the Engine once its contexts are gone, waits for
// the work its streams hold and frees device memory (cudaFree), which
// synchronizes the device. run() waits for its own work (with launch
// "synced", for the whole device after each stage); enqueue() never waits
// for the device. Other calls do not touch it.
//
// Errors (ios/error.h): UserError for what the caller gave (a tensor that
// does not fit, a buffer or stream of another device); NoDeviceError
// without the GPU; DeviceError when a CUDA, cuDNN or cuBLAS call fails, an
// OutOfMemoryError (with the bytes asked, where known) when an allocation
// does. After a sticky DeviceError (DeviceError::sticky(): the process's
// CUDA context is lost) every later call of the engine and its contexts
// throws a sticky DeviceError saying the engine is unusable.

// Per execution context on the GPU: caller-provided activation memory (as
// TensorRT's setDeviceMemory), at least Engine::device_memory_size() bytes,
// aligned to 256 bytes, on the engine's device, owned by the caller and
// kept alive (and used by nothing else) while the context lives. Null: the
// context allocates its own. Smaller, misaligned, host or another device's
// memory (where CUDA can tell) is a UserError.
struct ContextOptions {
  void* device_memory = nullptr;
  size_t device_memory_bytes = 0;
};

class Engine;

// What an engine and its contexts hold, by kind (Engine::allocations()):
// the live allocations the backend made and their bytes.
struct AllocationCount {
  int64_t allocations = 0;
  int64_t bytes = 0;
};
struct Allocations {
  // The model's weights: once per engine, whatever the number of contexts
  // and batch sizes (cuda: device memory, one buffer; cpu: the imported
  // host tensors, one allocation counted for them all). cpu also counts
  // here the weights a merged convolution assembles, once per context.
  AllocationCount weights;
  // Activation arenas: one per context and batch size (cuda: made by
  // create_context, or in the caller's ContextOptions memory, which is not
  // counted; cpu: made by the first run at that batch size).
  AllocationCount activations;
  // cuDNN and cuBLASLt workspaces (cuda), per context.
  AllocationCount workspaces;
};

// What one thread runs an engine with: its own activations, streams and
// (on the GPU) algorithm choices, made when it is created; the engine's
// weights are shared. Not to be used by two threads at once.
class ExecutionContext {
 public:
  ~ExecutionContext();
  ExecutionContext(const ExecutionContext&) = delete;
  ExecutionContext& operator=(const ExecutionContext&) = delete;

  // Runs once on host tensors, every input by name; returns every output.
  // cpu and cuda (which copies in and out and waits for the GPU); sim
  // computes no outputs (UserError: use predict()).
  TensorMap run(const TensorMap& inputs);
  // The same on caller-owned host memory (TensorView with kCpu), writing
  // the outputs into the caller's buffers.
  void run(const TensorViewMap& inputs, const TensorViewMap& outputs);

  // cuda: queues one inference on `cuda_stream` (a cudaStream_t; null: the
  // legacy default stream) reading the caller's device inputs and writing
  // the caller's device outputs, without a host synchronization: the work
  // starts after what the stream holds and the stream's later work starts
  // after it. Capturable into the caller's CUDA graph (stream capture).
  // The buffers must stay valid until the work has run. UserError for a
  // schedule planned for synced launches, for tensors that do not fit, and
  // where CUDA can tell, for buffers that are host memory CUDA does not
  // know or memory of another device, and for a stream of another device.
  void enqueue(const TensorViewMap& inputs, const TensorViewMap& outputs, void* cuda_stream);

  // sim: the predicted latency of one iteration.
  Prediction predict();

 private:
  friend class Engine;
  struct Impl;
  explicit ExecutionContext(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A model and a schedule, validated against each other as ios-run validates
// them (the model's hash, every unit once, dependencies; another batch only
// with `retarget`), lowered once for the backend. Immutable afterwards:
// every const call may be made from any thread.
//
// Several batch sizes: an engine of several schedules of one model, each
// made for its own batch, holds the weights once for all of them; each
// context runs every batch size, run() and enqueue() choosing the schedule
// by the batch of the inputs (the first dimension of the model's first
// input). docs/api.md, *Several batch sizes*.
class Engine {
 public:
  Engine(const std::string& model_path, const Schedule& schedule,
         const EngineOptions& options = {});
  // One schedule per batch size (each run at the batch it was made for, so
  // options.batch and options.input_shapes must be unset when there are
  // several); the other options apply to every schedule. UserError for an
  // empty list and for two schedules of the same batch.
  Engine(const std::string& model_path, const std::vector<Schedule>& schedules,
         const EngineOptions& options = {});
  // The sequential schedule (one unit after the other), as ios-run without
  // a schedule file.
  explicit Engine(const std::string& model_path, const EngineOptions& options = {});
  ~Engine();
  Engine(Engine&&) noexcept;
  Engine& operator=(Engine&&) noexcept;

  // The first schedule's inputs and outputs; those of another batch size
  // by its batch (UserError for a batch the engine does not hold).
  const std::vector<TensorDesc>& inputs() const;
  const std::vector<TensorDesc>& outputs() const;
  const std::vector<TensorDesc>& inputs(int64_t batch) const;
  const std::vector<TensorDesc>& outputs(int64_t batch) const;
  // The batch sizes it holds, one per schedule, in the order given.
  std::vector<int64_t> batch_sizes() const;
  const std::string& backend() const;
  // Whether run() computes outputs (cpu, cuda) or the backend only predicts (sim).
  bool computes_outputs() const;
  // cuda: the activation memory one context needs (ContextOptions), every
  // batch size's, each from a 256-byte boundary; 0 elsewhere.
  size_t device_memory_size() const;
  // What the engine and its living contexts hold now, by kind.
  Allocations allocations() const;
  // The CUDA device ordinal it runs on (EngineOptions::device; 0 for cpu and sim).
  int device() const;

  // A context for one thread (cuda: chooses algorithms, sizes workspaces,
  // captures its CUDA graph; synchronizes the device, as the constructor
  // does: see Synchronization above).
  std::unique_ptr<ExecutionContext> create_context(const ContextOptions& options = {}) const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;  // shared with its contexts, which may outlive the Engine object
};

}  // namespace ios
