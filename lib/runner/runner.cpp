#include "runner/runner.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.h"
#include "core/file_io.h"
#include "core/output_files.h"
#include "core/log.h"
#include "core/sha256.h"
#include "cost/device_profile.h"
#include "cost/simulated.h"
#include "cpu/executor.h"
#include "cuda/engine.h"
#include "exec/compare.h"
#include "exec/npy.h"
#include "exec/plan.h"
#include "exec/report.h"
#include "exec/stats.h"
#include "exec/trace.h"
#include "model/prepared_model.h"
#include "runner/schedule_labels.h"
#include "sched/schedule_dot.h"
#include "sched/schedule_io.h"
#include "sched/scheduler.h"
#include "sched/validate.h"
#include "sim/simulator.h"

namespace ios::runner {
namespace {

using exec::HostTensor;
using TensorMap = std::map<std::string, HostTensor>;

// One executable schedule on one backend.
class Session {
 public:
  virtual ~Session() = default;
  virtual TensorMap run(const TensorMap& inputs) = 0;
  // `iterations` timed runs after `warmup`: the latency schedules are compared
  // by (GPU compute time on CUDA, wall time on the CPU) and, where the
  // backend measures it, end-to-end latency.
  virtual cuda::TimingSamples time(int warmup, int iterations) = 0;
  // One traced iteration (per stream: what ran when), for --trace.
  virtual cuda::TraceIteration trace(const std::string& label) = 0;
};

class CpuSession : public Session {
 public:
  CpuSession(const sched::UnitGraph& units, const exec::ExecPlan& plan, int threads)
      : executor_(units, plan, cpu::ExecutorOptions{threads}) {}
  TensorMap run(const TensorMap& inputs) override {
    last_inputs_ = inputs;
    return executor_.run(inputs);
  }
  cuda::TimingSamples time(int warmup, int iterations) override {
    for (int i = 0; i < warmup; ++i) executor_.run(last_inputs_);
    cuda::TimingSamples times;
    for (int i = 0; i < iterations; ++i) {
      const auto start = std::chrono::steady_clock::now();
      executor_.run(last_inputs_);
      times.gpu_compute_ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    return times;
  }
  cuda::TraceIteration trace(const std::string&) override {
    user_error("--trace records GPU stream activity; it is available with --backend cuda or sim");
  }

 private:
  cpu::CpuExecutor executor_;
  TensorMap last_inputs_;
};

class CudaSession : public Session {
 public:
  CudaSession(const sched::UnitGraph& units, const exec::ExecPlan& plan, const cuda::EngineOptions& o)
      : engine_(units, plan, o) {}
  TensorMap run(const TensorMap& inputs) override {
    cuda::TensorMap flat;
    for (const auto& [name, t] : inputs) flat[name] = t.data;
    const cuda::TensorMap out = engine_.run(flat);
    TensorMap result;
    for (const auto& [name, data] : out) result[name] = HostTensor(output_shape(name), data);
    return result;
  }
  cuda::TimingSamples time(int warmup, int iterations) override {
    cuda::TimingOptions t;
    t.warmup_iterations = warmup;
    t.iterations = iterations;
    return engine_.time(t);
  }
  cuda::TraceIteration trace(const std::string& label) override {
    cuda::TraceIteration iteration = engine_.trace();
    iteration.label = label;
    return iteration;
  }
  void set_output_shapes(std::map<std::string, ir::Shape> shapes) { output_shapes_ = std::move(shapes); }

 private:
  ir::Shape output_shape(const std::string& name) const { return output_shapes_.at(name); }
  cuda::Engine engine_;
  std::map<std::string, ir::Shape> output_shapes_;
};

// The GPU simulator as a backend: predicts the plan's timeline once; computes
// no outputs (--check and friends are refused before a session is opened).
class SimSession : public Session {
 public:
  SimSession(const cost::SimulatedCostModel& model, const exec::ExecPlan& plan, bool cuda_graph,
             std::string label_suffix)
      : plan_(plan),
        timeline_(model.simulate(plan, cuda_graph ? sim::LaunchMode::kGraph : sim::LaunchMode::kPlain)),
        label_suffix_(std::move(label_suffix)) {
    for (const exec::Kernel& kernel : plan.kernels) {
      std::string name;
      for (sched::UnitId u : kernel.units) name += (name.empty() ? "" : "+") + model.graph().unit(u).id;
      names_.push_back(std::move(name));
    }
  }
  TensorMap run(const TensorMap&) override { return {}; }
  cuda::TimingSamples time(int, int iterations) override {
    cuda::TimingSamples times;  // deterministic: every iteration is the same prediction
    times.gpu_compute_ms.assign(static_cast<size_t>(iterations), timeline_.makespan_us / 1000.0);
    return times;
  }
  cuda::TraceIteration trace(const std::string& label) override {
    exec::TraceIteration iteration;
    iteration.label = label + label_suffix_;
    iteration.num_streams = plan_.num_streams;
    iteration.total_us = timeline_.makespan_us;
    for (const sim::KernelSpan& span : timeline_.kernels) {
      const size_t launch = static_cast<size_t>(span.launch);
      exec::TraceEvent event;
      event.name = names_[launch];
      event.stream = span.stream;
      event.start_us = span.begin_us;
      event.duration_us = span.end_us - span.begin_us;
      event.args = {{"launch_us", fmt::format("{:.3f}", span.start_us - span.begin_us)},
                    {"work_us", fmt::format("{:.3f}", span.end_us - span.start_us)},
                    {"kernel", fmt::format("{}", span.part)}};
      iteration.events.push_back(std::move(event));
    }
    return iteration;
  }

 private:
  exec::ExecPlan plan_;
  sim::Timeline timeline_;
  std::vector<std::string> names_;  // per plan launch: its unit ids
  std::string label_suffix_;
};

struct LoadedSchedule {
  std::string name;  // shown in tables: the file name, or "sequential"
  std::string path;  // empty for the built-in sequential schedule
  sched::Schedule schedule;
  exec::ExecPlan plan;
};

// What a schedule document says about its model, read before the model is
// imported: a hash mismatch explains a schedule for another model better
// than the unit ids that do not resolve. Missing or malformed fields are left
// to the full parse, which names them.
struct ScheduleHeader {
  int64_t batch = 0;
  std::vector<std::pair<std::string, ir::Shape>> inputs;  // the recorded input shapes
  std::string sha256, model_path;
};

ScheduleHeader peek_header(const nlohmann::json& document) {
  ScheduleHeader header;
  try {
    const auto& model = document.at("model");
    const int64_t batch = model.at("batch").get<int64_t>();
    if (batch >= 1 && batch <= sched::kMaxBatch) header.batch = batch;
    std::vector<std::pair<std::string, ir::Shape>> inputs;
    for (const auto& input : model.at("inputs")) {
      inputs.emplace_back(input.at("name").get<std::string>(), input.at("shape").get<ir::Shape>());
    }
    header.inputs = std::move(inputs);
    header.sha256 = model.at("sha256").get<std::string>();
    header.model_path = model.at("path").get<std::string>();
  } catch (const std::exception&) {
  }
  return header;
}

// "NAME=file" or "file" (only for a single name); returns name -> file.
std::map<std::string, std::string> parse_named_files(const std::vector<std::string>& specs,
                                                     const std::vector<std::string>& names,
                                                     const std::string& option) {
  std::map<std::string, std::string> files;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    std::string name, file;
    if (eq == std::string::npos) {
      if (names.size() != 1) {
        user_error("{} '{}': the model has {} of these; write NAME=file.npy (names: {})", option, spec,
                   names.size(), fmt::join(names, ", "));
      }
      name = names[0];
      file = spec;
    } else {
      name = spec.substr(0, eq);
      file = spec.substr(eq + 1);
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        user_error("{} '{}': the model has no '{}' (names: {})", option, spec, name, fmt::join(names, ", "));
      }
    }
    files[name] = file;
  }
  return files;
}

// The check tolerances in effect: the options', else the backend's defaults.
exec::Tolerance effective_tolerance(const RunOptions& options, bool on_cpu) {
  // Schedules differ from the sequential one in summation order only where
  // merges or other convolution algorithms change it; on the GPU cuDNN
  // picks algorithms per launch shape, and TF32 rounds inputs to 10 bits.
  const double default_tol = options.precision == "fp32" ? 1e-3 : 5e-2;  // cuda
  return {options.atol >= 0 ? options.atol : (on_cpu ? 1e-5 : default_tol),
          options.rtol >= 0 ? options.rtol : (on_cpu ? 1e-4 : default_tol)};
}

// One --check comparison: the verdict line, the per-output statistics of
// both sides (as Polygraphy prints them), the full report on failure or -v,
// and a warning when the reference is too small for atol to test anything.
bool report_check(const exec::CompareResult& result, const std::string& what, bool verbose, std::ostream& out) {
  out << fmt::format("check {}, output '{}': {}\n", what, result.name, result.passed() ? "PASSED" : "FAILED");
  if (result.shape_error.empty()) {
    out << "  " << exec::format_value_stats("actual  ", result.actual_stats) << "\n";
    out << "  " << exec::format_value_stats("expected", result.expected_stats) << "\n";
  }
  if (!result.passed() || verbose) out << exec::format_report(result);
  if (result.expected_below_atol()) {
    logger("cli")->warn(
        "check {}, output '{}': every expected value is below atol {:g} in magnitude (largest {:g}), so "
        "any output within atol of zero passes and this check proves little; lower --atol",
        what, result.name, result.tolerance.atol, result.expected_stats.max_abs);
  }
  return result.passed();
}

// Every file ios-run reads: outputs must never replace one of them.
std::vector<InputFile> input_files(const RunOptions& options, const std::vector<LabeledPath>& schedules) {
  std::vector<InputFile> files = {{options.model_path, "the input model"}};
  for (const LabeledPath& s : schedules) files.push_back({s.path, "the schedule file"});
  for (const std::string& spec : options.inputs) {
    files.push_back({spec.substr(spec.find('=') + 1), "the --input file"});
  }
  for (const std::string& spec : options.references) {
    files.push_back({spec.substr(spec.find('=') + 1), "the --reference file"});
  }
  std::error_code ec;
  if (std::filesystem::is_regular_file(options.device_profile, ec)) {
    files.push_back({options.device_profile, "the device profile"});
  }
  return files;
}

// Declares and checks the outputs known before the model is read
// (core/output_files.h); --output-dir's files follow once the outputs'
// names are known, still before anything runs.
void declare_outputs(OutputFiles& outputs, const RunOptions& options) {
  if (!options.export_times.empty()) outputs.add("--export-times", options.export_times, OutputKind::kTimes);
  if (!options.trace.empty()) outputs.add("--trace", options.trace, OutputKind::kTrace);
  if (!options.dot_path.empty()) {
    const bool svg = std::filesystem::path(options.dot_path).extension() == ".svg";
    outputs.add("--dot", options.dot_path, svg ? OutputKind::kSvg : OutputKind::kDot);
  }
  if (!options.output_dir.empty()) outputs.add_folder("--output-dir", options.output_dir);
}

// The simulated device of --backend sim: --device-profile, else the device
// the first schedule was optimized for when that is a shipped profile (a
// schedule made with --cost simulated names its profile), else h100.
std::unique_ptr<cost::SimulatedCostModel> make_simulated_device(const sched::UnitGraph& units,
                                                                const RunOptions& options,
                                                                const std::vector<LoadedSchedule>& schedules) {
  std::string profile = options.device_profile;
  if (profile.empty()) {
    profile = "h100";
    const std::vector<std::string> shipped = cost::shipped_device_profiles();
    if (!schedules.empty() && !schedules[0].path.empty() &&
        std::find(shipped.begin(), shipped.end(), schedules[0].schedule.device.name) != shipped.end()) {
      profile = schedules[0].schedule.device.name;
    }
  }
  cost::SimulatedOptions simulated;
  simulated.precision = options.precision == "fp32" ? cost::Precision::kFp32 : cost::Precision::kTf32;
  return std::make_unique<cost::SimulatedCostModel>(units, cost::load_device_profile(profile), simulated);
}

}  // namespace

int run(const RunOptions& options, std::ostream& out) {
  auto log = logger("cli");
  const std::vector<LabeledPath> schedule_files = label_schedule_paths(options.schedule_paths);
  if (!options.dot_path.empty() && schedule_files.size() > 1) {
    user_error("--dot draws one schedule but {} are given; run once per schedule", schedule_files.size());
  }
  OutputFiles output_paths(input_files(options, schedule_files), options.force);
  declare_outputs(output_paths, options);
  // Each schedule file is read and parsed once, before the model: a file that
  // is empty, not a schedule or too large is reported as such, and the first
  // one's batch and input shapes (needed before the model's shapes are known)
  // are checked.
  std::vector<nlohmann::json> documents;
  for (const LabeledPath& file : schedule_files) documents.push_back(sched::read_schedule_document(file.path));
  onnx::ImportOptions import_options =
      model::shape_options(options.batch, options.rewrite_batch, options.input_shapes);
  if (options.batch == 0 && options.input_shapes.empty() && !documents.empty()) {
    // Reproduce the input shapes the first schedule was made for; the
    // importer refuses them where the model's static dimensions disagree.
    // A schedule for another model file is reported as such after the
    // import (check_model_hash), not as shapes that do not fit.
    import_options.batch = sched::schedule_batch(documents[0], schedule_files[0].path);
    const ScheduleHeader header = peek_header(documents[0]);
    const bool readable = std::filesystem::is_regular_file(options.model_path);
    if (options.force || header.sha256.empty() ||
        (readable && header.sha256 == sha256_file(options.model_path))) {
      import_options.recorded_inputs = header.inputs;
      import_options.recorded_source = schedule_files[0].path;
    }
  }
  auto prepared = model::prepare_model(options.model_path, import_options);
  const sched::UnitGraph& units = *prepared->units;
  const sched::ModelInfo model = prepared->info();
  if (!options.dot_path.empty()) sched::check_picture_size("--dot", options.dot_path, units.size());

  std::vector<LoadedSchedule> schedules;
  for (size_t i = 0; i < schedule_files.size(); ++i) {
    const std::string& path = schedule_files[i].path;
    LoadedSchedule loaded;
    loaded.path = path;
    loaded.name = schedule_files[i].label;
    const ScheduleHeader header = peek_header(documents[i]);
    if (!header.sha256.empty()) {
      sched::check_model_hash(header.sha256, header.model_path, model, path, options.force);
    }
    loaded.schedule = sched::schedule_from_document(documents[i], path, units);
    sched::check_schedule_matches_model(loaded.schedule, model, path, options.force);
    schedules.push_back(std::move(loaded));
  }
  // The sequential schedule: run when no file is given, and the reference of --check.
  auto make_sequential = [&]() {
    LoadedSchedule seq;
    seq.name = "sequential (built-in)";
    const auto& entry = sched::find_scheduler("sequential");
    struct ZeroCost : sched::CostModel {  // sequential needs no latencies
      std::string name() const override { return "none"; }
      double stage_latency(const sched::Stage&) override { return 0.0; }
    } zero;
    sched::SearchStats stats;
    seq.schedule = entry.make(sched::Params::parse(entry.name, entry.params, ""))->run(units, zero, stats);
    seq.schedule.model = model;
    return seq;
  };
  if (schedules.empty()) schedules.push_back(make_sequential());
  for (auto& s : schedules) s.plan = exec::lower(units, s.schedule);
  if (!options.dot_path.empty()) {
    sched::write_schedule_picture(options.dot_path, schedules[0].schedule, units, schedules[0].name);
  }
  const bool on_cpu = options.backend == "cpu";
  const bool on_sim = options.backend == "sim";
  const int warmup = options.warmup >= 0 ? options.warmup : (on_sim ? 0 : on_cpu ? 1 : 20);
  const int iterations = options.iterations > 0 ? options.iterations : (on_sim ? 1 : on_cpu ? 5 : 200);
  const double duration_s = on_sim ? 0.0 : options.duration_s;  // predictions do not vary
  const exec::Tolerance tol = effective_tolerance(options, on_cpu);
  if (options.verbose) {
    // The values in effect, defaults resolved (the model's batch, the backend's counts).
    std::vector<std::string> labels;
    for (const auto& s : schedules) labels.push_back(s.path.empty() ? s.name : s.name + "=" + s.path);
    log->debug("effective options: model={} batch={} rewrite-batch={} schedules=[{}] dry-run={}",
               options.model_path, model.batch, options.rewrite_batch, fmt::join(labels, ", "),
               options.dry_run);
    if (!options.dry_run) {
      log->debug("effective options: backend={} warmup={} iterations={} duration={}s check={} rtol={:g} "
                 "atol={:g} seed={} cuda-graph={} precision={} threads={}",
                 options.backend, warmup, iterations, duration_s,
                 options.check || !options.references.empty(), tol.rtol, tol.atol, options.seed,
                 on_cpu ? "n/a (cpu)" : (options.cuda_graph ? "on" : "off"),
                 on_cpu ? "fp32 (cpu)" : options.precision,
                 on_cpu ? fmt::format("{}", options.threads > 0 ? options.threads
                                                                : static_cast<int>(std::thread::hardware_concurrency()))
                        : std::string(on_sim ? "n/a (sim)" : "n/a (cuda)"));
    }
  }

  if (options.dry_run) {
    for (const auto& s : schedules) {
      out << fmt::format("=== {} ({} schedule by {}, {} units) ===\n", s.name,
                         s.schedule.is_staged() ? "staged" : "streamed", s.schedule.scheduler.name,
                         units.size());
      out << exec::describe(units, s.plan) << "\n";
    }
    out << fmt::format("{} schedule(s) valid for {} (batch {}); nothing executed (--dry-run)\n",
                       schedules.size(), model.path, model.batch);
    return 0;
  }

  // Backend.
  if (on_cpu && !options.trace.empty()) {
    user_error("--trace records GPU stream activity; it is available with --backend cuda or sim");
  }
  if (on_sim) {
    const std::pair<bool, const char*> needs_outputs[] = {
        {options.check, "--check"}, {!options.references.empty(), "--reference"},
        {!options.output_dir.empty(), "--output-dir"}, {!options.inputs.empty(), "--input"}};
    for (const auto& [given, option] : needs_outputs) {
      if (given) {
        user_error("{} needs computed outputs, and --backend sim only predicts timing; use --backend "
                   "cuda or cpu for it", option);
      }
    }
  }
  std::string device_name = "CPU reference";
  std::unique_ptr<cost::SimulatedCostModel> simulated;
  std::string sim_note;  // what the predictions are, printed with them
  if (on_sim) {
    simulated = make_simulated_device(units, options, schedules);
    device_name = fmt::format("'{}' device profile (simulated, {})", simulated->profile().name,
                              options.cuda_graph ? "CUDA graph" : "plain launches");
    sim_note = fmt::format("predicted by the GPU simulator, '{}' device profile, {}",
                           simulated->profile().name,
                           options.cuda_graph ? "CUDA graph" : "plain launches");
  } else if (!on_cpu) {
    const auto device = cuda::probe_device();
    if (!device) {
      throw NoDeviceError(
          "no CUDA device: ios-run needs an NVIDIA GPU to execute schedules; use --dry-run to "
          "validate and print the plans, or --backend cpu to run the CPU reference");
    }
    device_name = device->name;
  }
  cuda::EngineOptions engine_options;
  engine_options.cuda_graph = options.cuda_graph;
  engine_options.precision = cuda::parse_precision(options.precision);
  std::map<std::string, ir::Shape> output_shapes;
  std::vector<std::string> output_names, input_names;
  for (ir::TensorId t : prepared->model.graph.outputs()) {
    output_names.push_back(prepared->model.graph.tensor(t).name);
    output_shapes[output_names.back()] = prepared->model.graph.tensor(t).shape;
  }
  for (const auto& [name, shape] : model.inputs) input_names.push_back(name);
  // --output-dir: one file per output, names made unique, checked now.
  std::vector<std::pair<std::string, std::string>> output_dir_files;  // output name, file
  if (!options.output_dir.empty()) {
    for (const std::string& name : output_names) {
      output_dir_files.emplace_back(name, output_paths.add_in_folder("--output-dir", options.output_dir,
                                                                     name, ".npy", OutputKind::kNpy));
    }
  }
  auto open_session = [&](const exec::ExecPlan& plan) -> std::unique_ptr<Session> {
    if (on_cpu) return std::make_unique<CpuSession>(units, plan, options.threads);
    if (on_sim) return std::make_unique<SimSession>(*simulated, plan, options.cuda_graph, " (" + sim_note + ")");
    auto s = std::make_unique<CudaSession>(units, plan, engine_options);
    s->set_output_shapes(output_shapes);
    return s;
  };

  // Inputs: files or seeded random values.
  TensorMap inputs;
  const auto input_files = parse_named_files(options.inputs, input_names, "--input");
  for (size_t i = 0; i < model.inputs.size() && !on_sim; ++i) {
    const auto& [name, shape] = model.inputs[i];
    auto file = input_files.find(name);
    if (file != input_files.end()) {
      HostTensor t = exec::read_npy(file->second);
      if (t.shape != shape) {
        user_error("{}: input '{}' has shape {} but the model needs {}", file->second, name,
                   ir::to_string(t.shape), ir::to_string(shape));
      }
      inputs[name] = std::move(t);
    } else {
      inputs[name] = exec::random_tensor(shape, options.seed + i);
    }
  }

  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<TensorMap> outputs;
  for (const auto& s : schedules) {
    sessions.push_back(open_session(s.plan));
    outputs.push_back(sessions.back()->run(inputs));
  }

  // --check: every schedule against the sequential one, and against references.
  bool mismatch = false;
  if (options.check || !options.references.empty()) {  // --reference implies --check
    TensorMap reference;
    const bool first_is_sequential = schedules[0].path.empty();
    if (first_is_sequential) {
      reference = outputs[0];
    } else {
      const LoadedSchedule seq = make_sequential();
      reference = open_session(exec::lower(units, seq.schedule))->run(inputs);
    }
    for (size_t i = 0; i < schedules.size(); ++i) {
      for (const std::string& name : output_names) {
        const auto result = exec::compare(outputs[i].at(name), reference.at(name), tol, name);
        mismatch |= !report_check(result, schedules[i].name + " vs sequential", options.verbose, out);
      }
    }
    for (const auto& [name, file] : parse_named_files(options.references, output_names, "--reference")) {
      const HostTensor expected = exec::read_npy(file);
      // A reference of another shape is a wrong file (exit 2), not a numerical mismatch.
      if (const ir::Shape& shape = outputs[0].at(name).shape; expected.shape != shape) {
        user_error("{}: --reference for output '{}' has shape {}, the output has shape {}; give "
                   "a .npy of the output's shape", file, name, ir::to_string(expected.shape),
                   ir::to_string(shape));
      }
      for (size_t i = 0; i < schedules.size(); ++i) {
        const auto result = exec::compare(outputs[i].at(name), expected, tol, name);
        mismatch |= !report_check(result, schedules[i].name + " vs " + file, options.verbose, out);
      }
    }
  }
  for (const auto& [name, file] : output_dir_files) {
    create_parent_folder(file);
    exec::write_npy(file, outputs[0].at(name));
    // A name that is not a file name as it stands is said, so that the user
    // can find its file.
    if (std::filesystem::path(file).filename().string() != name + ".npy") {
      log->info("output '{}' written to {}", name, file);
    }
  }

  // Timing, interleaved: rounds of a few iterations per schedule in turn, so
  // that clock and thermal drift affect every schedule alike.
  std::vector<exec::TimedRun> runs(schedules.size());
  for (size_t i = 0; i < schedules.size(); ++i) {
    runs[i].name = schedules[i].name;
    runs[i].schedule_file = schedules[i].path;
    runs[i].backend = options.backend;
    runs[i].device = device_name;
    runs[i].batch = model.batch;
    runs[i].warmup_iterations = warmup;
    runs[i].gpu_compute = !on_cpu;
    runs[i].predicted = on_sim;
    sessions[i]->time(warmup, 0);
  }
  const int rounds = std::max(1, std::min(iterations, 10));
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < rounds || std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
                                    duration_s;
       ++r) {
    const int chunk = r < rounds ? iterations / rounds + (r < iterations % rounds ? 1 : 0)
                                 : std::max(1, iterations / rounds);
    for (size_t i = 0; i < schedules.size(); ++i) {
      const cuda::TimingSamples times = sessions[i]->time(0, chunk);
      runs[i].latencies_ms.insert(runs[i].latencies_ms.end(), times.gpu_compute_ms.begin(),
                                  times.gpu_compute_ms.end());
      runs[i].end_to_end_ms.insert(runs[i].end_to_end_ms.end(), times.end_to_end_ms.begin(),
                                   times.end_to_end_ms.end());
    }
  }

  if (on_sim && !options.quiet) out << "Not measured: " << sim_note << "; nothing was executed\n\n";
  if (!options.quiet) {
    for (const auto& run : runs) {
      out << exec::format_summary(run, exec::compute_stats(run.latencies_ms, run.batch)) << "\n";
    }
  }
  out << exec::format_comparison(runs);  // the verdict, printed even with --quiet
  if (!options.export_times.empty()) exec::export_times(options.export_times, runs);
  if (!options.trace.empty()) {
    // One trace process per schedule, one track per stream.
    std::vector<cuda::TraceIteration> traces;
    for (size_t i = 0; i < schedules.size(); ++i) traces.push_back(sessions[i]->trace(schedules[i].name));
    std::map<std::string, std::string> about = {{"backend", options.backend}, {"device", device_name}};
    if (on_sim) about["source"] = "not measured: " + sim_note;
    exec::write_chrome_trace(options.trace, traces, about);
  }
  if (mismatch) {
    out << "FAILED: outputs differ beyond tolerance (see the reports above)\n";
    return static_cast<int>(ExitCode::kMismatch);
  }
  return 0;
}

}  // namespace ios::runner
