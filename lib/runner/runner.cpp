#include "runner/runner.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"
#include "core/log.h"
#include "cpu/executor.h"
#include "cuda/engine.h"
#include "exec/compare.h"
#include "exec/npy.h"
#include "exec/plan.h"
#include "exec/report.h"
#include "exec/stats.h"
#include "optimize/optimizer.h"
#include "sched/schedule_io.h"
#include "sched/scheduler.h"
#include "sched/validate.h"

namespace ios::runner {
namespace {

using exec::HostTensor;
using TensorMap = std::map<std::string, HostTensor>;

// One executable schedule on one backend.
class Session {
 public:
  virtual ~Session() = default;
  virtual TensorMap run(const TensorMap& inputs) = 0;
  // Per-iteration latencies (ms) of `iterations` timed runs after `warmup`.
  virtual std::vector<double> time(int warmup, int iterations) = 0;
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
  std::vector<double> time(int warmup, int iterations) override {
    for (int i = 0; i < warmup; ++i) executor_.run(last_inputs_);
    std::vector<double> times;
    for (int i = 0; i < iterations; ++i) {
      const auto start = std::chrono::steady_clock::now();
      executor_.run(last_inputs_);
      times.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    return times;
  }
  cuda::TraceIteration trace(const std::string&) override {
    user_error("--trace records GPU stream activity; it is available with --backend cuda only");
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
  std::vector<double> time(int warmup, int iterations) override {
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
  std::string sha256, model_path;
};

ScheduleHeader peek_header(const nlohmann::json& document) {
  ScheduleHeader header;
  try {
    const auto& model = document.at("model");
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

// Every file ios-run reads: outputs must never replace one of them.
std::vector<std::string> input_files(const RunOptions& options) {
  std::vector<std::string> files = {options.model_path};
  files.insert(files.end(), options.schedule_paths.begin(), options.schedule_paths.end());
  for (const auto* specs : {&options.inputs, &options.references}) {
    for (const std::string& spec : *specs) files.push_back(spec.substr(spec.find('=') + 1));
  }
  return files;
}

void refuse_input_as_output(const std::string& output, std::string_view option,
                            const std::vector<std::string>& inputs) {
  check_output_path(output);
  for (const std::string& input : inputs) {
    if (same_file(output, input)) {
      user_error("{} {} is the input file {}; writing it would destroy it, give another path",
                 option, output, input);
    }
  }
}

std::string safe_file_name(const std::string& name) {
  std::string out;
  for (char c : name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  return out;
}

}  // namespace

int run(const RunOptions& options, std::ostream& out) {
  auto log = logger("cli");
  if (options.verbose) {
    log->debug("model={} schedules={} backend={} dry-run={} batch={} warmup={} iterations={} "
               "duration={}s check={} rtol={} atol={} seed={} cuda-graph={} precision={} threads={}",
               options.model_path, fmt::join(options.schedule_paths, ","), options.backend,
               options.dry_run, options.batch, options.warmup, options.iterations,
               options.duration_s, options.check, options.rtol, options.atol, options.seed,
               options.cuda_graph, options.precision, options.threads);
  }
  const std::vector<std::string> files_read = input_files(options);
  if (!options.export_times.empty()) refuse_input_as_output(options.export_times, "--export-times", files_read);
  if (!options.trace.empty()) refuse_input_as_output(options.trace, "--trace", files_read);
  // Each schedule file is read and parsed once, before the model: a file that
  // is empty, not a schedule or too large is reported as such, and the first
  // one's batch (needed before the model's shapes are known) is checked.
  std::vector<nlohmann::json> documents;
  for (const std::string& path : options.schedule_paths) {
    documents.push_back(sched::read_schedule_document(path));
  }
  int64_t batch = options.batch;
  if (batch == 0 && !documents.empty()) batch = sched::schedule_batch(documents[0], options.schedule_paths[0]);
  auto prepared = optimize::prepare_model(options.model_path, batch, options.input_shapes);
  const sched::UnitGraph& units = *prepared->units;
  const sched::ModelInfo model = prepared->info();

  std::vector<LoadedSchedule> schedules;
  for (size_t i = 0; i < options.schedule_paths.size(); ++i) {
    const std::string& path = options.schedule_paths[i];
    LoadedSchedule loaded;
    loaded.path = path;
    loaded.name = std::filesystem::path(path).filename().string();
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
    struct ZeroCost : cost::CostModel {  // sequential needs no latencies
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
  const bool on_cpu = options.backend == "cpu";
  if (on_cpu && !options.trace.empty()) {
    user_error("--trace records GPU stream activity; it is available with --backend cuda only");
  }
  std::string device_name = "CPU reference";
  if (!on_cpu) {
    const auto device = cuda::probe_device();
    if (!device) {
      throw NoDeviceError(
          "no CUDA device: ios-run needs an NVIDIA GPU to execute schedules; use --dry-run to "
          "validate and print the plans, or --backend cpu to run the CPU reference");
    }
    device_name = device->name;
  }
  const int warmup = options.warmup >= 0 ? options.warmup : (on_cpu ? 1 : 20);
  const int iterations = options.iterations > 0 ? options.iterations : (on_cpu ? 5 : 200);
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
  auto open_session = [&](const exec::ExecPlan& plan) -> std::unique_ptr<Session> {
    if (on_cpu) return std::make_unique<CpuSession>(units, plan, options.threads);
    auto s = std::make_unique<CudaSession>(units, plan, engine_options);
    s->set_output_shapes(output_shapes);
    return s;
  };

  // Inputs: files or seeded random values.
  TensorMap inputs;
  const auto input_files = parse_named_files(options.inputs, input_names, "--input");
  for (size_t i = 0; i < model.inputs.size(); ++i) {
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
    // Schedules differ from the sequential one in summation order only where
    // merges or other convolution algorithms change it; on the GPU cuDNN
    // picks algorithms per launch shape, and TF32 rounds inputs to 10 bits.
    const double default_tol = options.precision == "fp32" ? 1e-3 : 5e-2;  // cuda
    const exec::Tolerance tol{
        options.atol >= 0 ? options.atol : (on_cpu ? 1e-5 : default_tol),
        options.rtol >= 0 ? options.rtol : (on_cpu ? 1e-4 : default_tol)};
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
        out << fmt::format("check {} vs sequential, output '{}': {}\n", schedules[i].name, name,
                           result.passed() ? "PASSED" : "FAILED");
        if (!result.passed() || options.verbose) out << exec::format_report(result);
        mismatch |= !result.passed();
      }
    }
    for (const auto& [name, file] : parse_named_files(options.references, output_names, "--reference")) {
      const HostTensor expected = exec::read_npy(file);
      for (size_t i = 0; i < schedules.size(); ++i) {
        const auto result = exec::compare(outputs[i].at(name), expected, tol, name);
        out << fmt::format("check {} vs {}, output '{}': {}\n", schedules[i].name, file, name,
                           result.passed() ? "PASSED" : "FAILED");
        if (!result.passed() || options.verbose) out << exec::format_report(result);
        mismatch |= !result.passed();
      }
    }
  }
  if (!options.output_dir.empty()) {
    for (const auto& [name, tensor] : outputs[0]) {
      const auto file = std::filesystem::path(options.output_dir) / (safe_file_name(name) + ".npy");
      refuse_input_as_output(file.string(), "--output-dir", files_read);
      create_parent_folder(file);
      exec::write_npy(file, tensor);
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
    sessions[i]->time(warmup, 0);
  }
  const int rounds = std::max(1, std::min(iterations, 10));
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < rounds || std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
                                    options.duration_s;
       ++r) {
    const int chunk = r < rounds ? iterations / rounds + (r < iterations % rounds ? 1 : 0)
                                 : std::max(1, iterations / rounds);
    for (size_t i = 0; i < schedules.size(); ++i) {
      const auto times = sessions[i]->time(0, chunk);
      runs[i].latencies_ms.insert(runs[i].latencies_ms.end(), times.begin(), times.end());
    }
  }

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
    cuda::write_chrome_trace(options.trace, traces);
  }
  if (mismatch) {
    out << "FAILED: outputs differ beyond tolerance (see the reports above)\n";
    return static_cast<int>(ExitCode::kMismatch);
  }
  return 0;
}

}  // namespace ios::runner
