#include "runner/runner.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "backends/registry.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/json_limits.h"
#include "core/log.h"
#include "core/output_files.h"
#include "engine/loading.h"
#include "exec/backend.h"
#include "exec/compare.h"
#include "exec/npy.h"
#include "exec/plan.h"
#include "exec/report.h"
#include "exec/schedule_memory.h"
#include "exec/stats.h"
#include "exec/trace.h"
#include "model/prepared_model.h"
#include "runner/schedule_labels.h"
#include "sched/schedule_dot.h"
#include "sched/schedule_io.h"

namespace ios::runner {
namespace {

using exec::HostTensor;
using exec::TensorMap;

struct LoadedSchedule {
  std::string name;  // shown in tables: the file name, or "sequential"
  std::string path;  // empty for the built-in sequential schedule
  sched::Schedule schedule;
  exec::ExecPlan plan;
  std::vector<std::string> warnings;  // made for another batch, device or launch mode
};

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
    // Two files for one name: which one counts would be a guess.
    if (auto [it, fresh] = files.emplace(name, file); !fresh) {
      user_error("{} is given twice for '{}' ({} and {}); give each name once", option, name,
                 quote_excerpt(it->second), quote_excerpt(file));
    }
  }
  return files;
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

// What the options say on their own, before any file is read. The command
// line's validators say the same; this holds for every caller of run().
void check_options(const RunOptions& o) {
  const std::pair<double, const char*> tolerances[] = {{o.rtol, "--rtol"}, {o.atol, "--atol"}};
  for (const auto& [value, option] : tolerances) {
    // -1 (kBackendTolerance) asks for the backend's; any other negative or
    // NaN value is a mistake, not a request for the default.
    if (value == kBackendTolerance) continue;
    if (!std::isfinite(value) || value < 0.0) {
      user_error("{} {}: expected a finite number >= 0", option, value);
    }
  }
  engine::reject_retarget_without_effect(
      {o.batch, o.rewrite_batch, o.input_shapes, o.force, o.precision, o.retarget},
      o.schedule_paths.size());
}

// The state of one ios-run, filled phase by phase (run() lists the phases).
struct RunState {
  RunState(const RunOptions& o, std::ostream& os) : options(o), out(os) {}
  const RunOptions& options;
  std::ostream& out;
  std::vector<LabeledPath> files;              // the schedule files, labelled
  std::unique_ptr<OutputFiles> outputs;        // every output, checked before any work
  std::vector<nlohmann::json> documents;       // each schedule file, parsed once
  std::unique_ptr<model::PreparedModel> prepared;
  std::vector<LoadedSchedule> schedules;       // validated and lowered
  const exec::BackendEntry* backend_entry = nullptr;
  std::unique_ptr<exec::Backend> backend;
  int warmup = 0, iterations = 0;
  double duration_s = 0.0;
  exec::Tolerance tolerance;
  std::vector<std::string> input_names, output_names;
  std::vector<std::pair<std::string, std::string>> output_dir_files;  // output name, file
  TensorMap inputs;
  std::vector<std::unique_ptr<exec::Session>> sessions;  // one per schedule
  std::vector<TensorMap> results;                        // the first run of each session
  std::vector<exec::TimedRun> timed;

  const sched::UnitGraph& units() const { return *prepared->units; }
  const exec::BackendTraits& traits() const { return backend_entry->traits; }
  // The precision the run computes at: --precision, else the model's as
  // prepared for the first schedule (what it records, or tf32).
  ir::Precision precision() const { return options.precision.value_or(prepared->precision.value); }
};

// How the options run a staged schedule's stages.
exec::StageJoin stage_join(const RunOptions& o) { return engine::stage_join(o.launch); }

// The sequential schedule: run when no file is given, and the reference of --check.
LoadedSchedule sequential_schedule(const RunState& r) {
  LoadedSchedule seq;
  seq.name = "sequential (built-in)";
  seq.schedule = engine::sequential_schedule(*r.prepared);
  seq.plan = exec::lower(r.units(), seq.schedule, stage_join(r.options));
  // Its peak, as ios-optimize would record it (the comparison table's column).
  seq.schedule.memory = exec::schedule_memory(r.units(), seq.plan);
  return seq;
}

// Phase 1: label the schedule files, declare and check every output, and
// parse each schedule file once, before the model: a file that is empty, not
// a schedule or too large is reported as such.
void read_schedule_files(RunState& r) {
  const RunOptions& o = r.options;
  r.files = label_schedule_paths(o.schedule_paths);
  if (!o.dot_path.empty() && r.files.size() > 1) {
    user_error("--dot draws one schedule but {} are given; run once per schedule", r.files.size());
  }
  r.outputs = std::make_unique<OutputFiles>(input_files(o, r.files), o.force);
  declare_outputs(*r.outputs, o);
  for (const LabeledPath& file : r.files) r.documents.push_back(sched::read_schedule_document(file.path));
  // --retarget with --precision and neither --batch nor --input-shape runs a
  // schedule at another 16-bit type: where every schedule was made for the
  // precision asked, it does nothing (as a plain --retarget, check_options).
  if (o.retarget && o.batch == 0 && o.input_shapes.empty() && o.precision) {
    bool changes = false;
    for (size_t i = 0; i < r.files.size(); ++i) {
      const auto recorded = sched::schedule_precision(r.documents[i], r.files[i].path);
      changes = changes || !recorded || recorded->value != *o.precision;
    }
    if (!changes) {
      user_error(
          "--retarget has no effect: {} made for precision {}, the precision --precision asks, "
          "and for its own batch; give --batch or --input-shape to run at another batch, or drop "
          "--retarget",
          r.files.size() == 1 ? r.files[0].path + " was" : "every schedule was", o.precision->name());
    }
  }
}

// Phase 2: import the model at the input shapes the options give, else
// those the first schedule was made for (the importer refuses them where the
// model's static dimensions disagree). A schedule for another model file is
// reported as such later (check_model_hash), not as shapes that do not fit.
void import_model(RunState& r) {
  const RunOptions& o = r.options;
  const engine::ShapeRequest request{o.batch, o.rewrite_batch, o.input_shapes,
                                     o.force, o.precision,     o.retarget};
  r.prepared = engine::import_for_schedule(o.model_path, request,
                                           r.documents.empty() ? nullptr : &r.documents[0],
                                           r.files.empty() ? std::string() : r.files[0].path);
  if (!o.dot_path.empty()) sched::check_picture_size("--dot", o.dot_path, r.units().size());
  const ir::Graph& graph = r.prepared->model.graph;
  for (ir::TensorId t : graph.outputs()) r.output_names.push_back(graph.tensor(t).name);
  for (const auto& [name, shape] : r.prepared->info().inputs) r.input_names.push_back(name);
}

// Phase 3: each schedule validated against the model and lowered; the
// sequential schedule when none is given; --dot drawn.
void load_schedules(RunState& r) {
  const sched::ModelInfo model = r.prepared->info();
  for (size_t i = 0; i < r.files.size(); ++i) {
    const std::string& path = r.files[i].path;
    LoadedSchedule loaded;
    loaded.path = path;
    loaded.name = r.files[i].label;
    loaded.schedule = engine::load_schedule(*r.prepared, r.documents[i], path, r.options.force,
                                            r.options.retarget);
    loaded.plan = exec::lower(r.units(), loaded.schedule, stage_join(r.options));
    r.schedules.push_back(std::move(loaded));
  }
  r.documents.clear();
  if (r.schedules.empty()) r.schedules.push_back(sequential_schedule(r));
  if (!r.options.dot_path.empty()) {
    sched::write_schedule_picture(r.options.dot_path, r.schedules[0].schedule, r.units(),
                                  r.schedules[0].name);
  }
  if (r.options.verbose) {
    std::vector<std::string> labels;
    for (const auto& s : r.schedules) labels.push_back(s.path.empty() ? s.name : s.name + "=" + s.path);
    logger("cli")->debug("effective options: model={} batch={} rewrite-batch={} schedules=[{}] dry-run={}",
                         r.options.model_path, model.batch, r.options.rewrite_batch,
                         fmt::join(labels, ", "), r.options.dry_run);
  }
}

// A name read from a schedule file, as the excerpt rule (core/json_limits.h)
// shows it, without quotes when it needs none: "ios" stays ios.
std::string echoed(const std::string& name) {
  const std::string quoted = quote_excerpt(name);
  const bool plain = quoted.size() == name.size() + 2 && quoted.compare(1, name.size(), name) == 0 &&
                     name.find_first_of(" '") == std::string::npos;
  return plain && !name.empty() ? name : quoted;
}

// --dry-run: each lowered plan, per stream, in global issue order.
int print_plans(RunState& r) {
  for (const auto& s : r.schedules) {
    // The scheduler's name is the file's word, echoed as an excerpt: a
    // newline or an escape sequence in it must not forge lines of output.
    r.out << fmt::format("=== {} ({} schedule by {}, {} units) ===\n", s.name,
                         sched::form_description(s.schedule), echoed(s.schedule.scheduler.name),
                         r.units().size());
    r.out << exec::describe(r.units(), s.plan) << "\n";
  }
  r.out << fmt::format("{} schedule(s) valid for {} (batch {}); nothing executed (--dry-run)\n",
                       r.schedules.size(), r.prepared->model.path, r.prepared->model.batch);
  return 0;
}


// What a schedule was made for and how it runs here differ: another batch
// (--retarget), another device, or the other launch mode. Each becomes a
// warning on stderr and a [W] line of its report.
void warn_about_target(const RunState& r, LoadedSchedule& s) {
  if (s.path.empty()) return;  // the built-in sequential schedule is made here
  const sched::Schedule& made = s.schedule;
  const int64_t batch = r.prepared->model.batch;
  if (made.model.batch != batch) {
    s.warnings.push_back(fmt::format("{} was made for batch {} and runs at batch {} (--retarget)",
                                     s.name, made.model.batch, batch));
  }
  const std::string device = r.backend->schedule_device_name();
  if (!device.empty() && !made.device.name.empty() && made.device.name != device) {
    s.warnings.push_back(fmt::format("{} was made for device {} and runs on {}", s.name,
                                     quote_excerpt(made.device.name), quote_excerpt(device)));
  }
  if (r.traits().uses_cuda_graph && !made.scheduler.launch.empty()) {
    const std::string& launch = r.options.launch;
    if (made.scheduler.launch != launch) {
      s.warnings.push_back(fmt::format("{} was planned for {} and runs with {} (--launch {}); pass "
                                       "--launch {} to run it as planned",
                                       s.name, sched::launch_words(made.scheduler.launch),
                                       sched::launch_words(launch), launch, made.scheduler.launch));
    }
  }
  for (const std::string& w : s.warnings) logger("cli")->warn("{}", w);
}

// Phase 4: the backend, and what its traits make of the options.
void open_backend(RunState& r) {
  const RunOptions& o = r.options;
  r.backend_entry = o.backend.empty() ? &backends::all().front() : &backends::find(o.backend);
  const exec::BackendTraits& traits = r.traits();
  const std::string& name = r.backend_entry->name;
  if (!traits.traces && !o.trace.empty()) {
    user_error("--trace has no effect with --backend {}: it records no stream activity; drop it or "
               "use a backend that does", name);
  }
  if (!traits.computes_outputs) {
    const std::pair<bool, const char*> needs_outputs[] = {
        {o.check, "--check"}, {!o.references.empty(), "--reference"},
        {!o.output_dir.empty(), "--output-dir"}, {!o.inputs.empty(), "--input"}};
    for (const auto& [given, option] : needs_outputs) {
      if (given) {
        user_error("{} needs computed outputs, and --backend {} computes none ({}); use a backend "
                   "that runs the model for it",
                   option, name, traits.description);
      }
    }
  }
  exec::BackendOptions backend_options;
  backend_options.launch = o.launch;
  backend_options.precision = r.precision();
  backend_options.threads = o.threads;
  backend_options.device_profile = o.device_profile;
  backend_options.conv_kernels = o.conv_kernels;
  backend_options.plan_cache = o.plan_cache;
  if (!r.schedules[0].path.empty()) backend_options.schedule_device = r.schedules[0].schedule.device.name;
  r.backend = r.backend_entry->make(r.units(), backend_options);
  for (LoadedSchedule& s : r.schedules) warn_about_target(r, s);
  r.warmup = o.warmup >= 0 ? o.warmup : traits.default_warmup;
  r.iterations = o.iterations > 0 ? o.iterations : traits.default_iterations;
  r.duration_s = traits.measured ? o.duration_s : 0.0;  // predictions do not vary
  const exec::Tolerance defaults = r.backend->default_tolerance();
  r.tolerance = {o.atol >= 0 ? o.atol : defaults.atol, o.rtol >= 0 ? o.rtol : defaults.rtol};
  if (r.prepared->precision.is_half()) {
    // Two schedules of a half-precision graph may round one value to
    // neighbouring 16-bit numbers (another summation order in a merged
    // kernel): the defaults allow two units in the last place of the type.
    const double ulps = 2.0 * ir::epsilon(r.prepared->precision.value.storage());
    if (o.atol < 0) r.tolerance.atol = std::max(r.tolerance.atol, ulps);
    if (o.rtol < 0) r.tolerance.rtol = std::max(r.tolerance.rtol, ulps);
  }
  if (o.verbose) {
    const int threads = o.threads > 0 ? o.threads : static_cast<int>(std::thread::hardware_concurrency());
    logger("cli")->debug(
        "effective options: backend={} warmup={} iterations={} duration={}s check={} rtol={:g} "
        "atol={:g} seed={} launch={} precision={} threads={}",
        name, r.warmup, r.iterations, r.duration_s, o.check || !o.references.empty(),
        r.tolerance.rtol, r.tolerance.atol, o.seed, traits.uses_cuda_graph ? o.launch : "n/a",
        traits.uses_precision ? r.precision().name() : "n/a",
        traits.uses_threads ? fmt::format("{}", threads) : "n/a");
  }
}

// Phase 5: --output-dir's files, named now that the outputs are known, and
// the inputs: files, or seeded random values.
void prepare_inputs(RunState& r) {
  const RunOptions& o = r.options;
  if (!o.output_dir.empty()) {
    for (const std::string& name : r.output_names) {
      r.output_dir_files.emplace_back(
          name, r.outputs->add_in_folder("--output-dir", o.output_dir, name, ".npy", OutputKind::kNpy));
    }
  }
  if (!r.traits().computes_outputs) return;
  parse_named_files(o.references, r.output_names, "--reference");  // refused before anything runs
  const auto files = parse_named_files(o.inputs, r.input_names, "--input");
  const auto& model_inputs = r.prepared->info().inputs;
  for (size_t i = 0; i < model_inputs.size(); ++i) {
    const auto& [name, shape] = model_inputs[i];
    auto file = files.find(name);
    if (file == files.end()) {
      r.inputs[name] = exec::random_tensor(shape, o.seed + i);
      continue;
    }
    HostTensor t = exec::read_npy(file->second);
    if (t.shape != shape) {
      user_error("{}: input '{}' has shape {} but the model needs {}", file->second, name,
                 ir::to_string(t.shape), ir::to_string(shape));
    }
    r.inputs[name] = std::move(t);
  }
}

// Phase 6: a session per schedule, each run once (its outputs kept).
void run_once(RunState& r) {
  for (const auto& s : r.schedules) {
    r.sessions.push_back(r.backend->open(s.plan));
    r.results.push_back(r.sessions.back()->run(r.inputs));
  }
}

// Phase 7 (--check, --reference): every schedule's outputs against the
// sequential schedule's and the references. True when all pass.
bool check_outputs(RunState& r) {
  const RunOptions& o = r.options;
  if (!o.check && o.references.empty()) return true;  // --reference implies --check
  const TensorMap reference =
      r.schedules[0].path.empty() ? r.results[0] : r.backend->open(sequential_schedule(r).plan)->run(r.inputs);
  bool passed = true;
  for (size_t i = 0; i < r.schedules.size(); ++i) {
    for (const std::string& name : r.output_names) {
      const auto result = exec::compare(r.results[i].at(name), reference.at(name), r.tolerance, name);
      passed &= report_check(result, r.schedules[i].name + " vs sequential", o.verbose, r.out);
    }
  }
  for (const auto& [name, file] : parse_named_files(o.references, r.output_names, "--reference")) {
    const HostTensor expected = exec::read_npy(file);
    // A reference of another shape is a wrong file (exit 2), not a numerical mismatch.
    if (const ir::Shape& shape = r.results[0].at(name).shape; expected.shape != shape) {
      user_error("{}: --reference for output '{}' has shape {}, the output has shape {}; give "
                 "a .npy of the output's shape", file, name, ir::to_string(expected.shape),
                 ir::to_string(shape));
    }
    for (size_t i = 0; i < r.schedules.size(); ++i) {
      const auto result = exec::compare(r.results[i].at(name), expected, r.tolerance, name);
      passed &= report_check(result, r.schedules[i].name + " vs " + file, o.verbose, r.out);
    }
  }
  return passed;
}

// Phase 8 (--output-dir): the first schedule's outputs.
void write_output_files(RunState& r) {
  for (const auto& [name, file] : r.output_dir_files) {
    create_parent_folder(file);
    exec::write_npy(file, r.results[0].at(name));
    // A name that is not a file name as it stands is said, so that the user
    // can find its file.
    if (std::filesystem::path(file).filename().string() != name + ".npy") {
      logger("cli")->info("output '{}' written to {}", name, file);
    }
  }
}

// Phase 9: timing, interleaved: rounds of a few iterations per schedule in
// turn, so that clock and thermal drift affect every schedule alike.
void time_interleaved(RunState& r) {
  r.timed.resize(r.schedules.size());
  for (size_t i = 0; i < r.schedules.size(); ++i) {
    exec::TimedRun& run = r.timed[i];
    run.name = r.schedules[i].name;
    run.schedule_file = r.schedules[i].path;
    run.backend = r.backend_entry->name;
    run.device = r.backend->device_name();
    run.batch = r.prepared->model.batch;
    run.precision = r.precision();
    run.warmup_iterations = r.warmup;
    run.gpu_compute = r.traits().gpu_compute_time;
    run.predicted = !r.traits().measured;
    run.warnings = r.schedules[i].warnings;
    const exec::AllocatedMemory allocated = r.sessions[i]->allocated();
    run.allocated_activation_bytes = allocated.activations;
    if (allocated.activations >= 0 && allocated.weights >= 0 && allocated.workspaces >= 0) {
      run.allocated_total_bytes = allocated.activations + allocated.weights + allocated.workspaces;
    }
    if (r.schedules[i].schedule.memory) run.schedule_peak_bytes = r.schedules[i].schedule.memory->peak_bytes();
    r.sessions[i]->time(r.warmup, 0);
  }
  const int rounds = std::max(1, std::min(r.iterations, 10));
  const auto start = std::chrono::steady_clock::now();
  auto elapsed_s = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  for (int round = 0; round < rounds || elapsed_s() < r.duration_s; ++round) {
    const int chunk = round < rounds ? r.iterations / rounds + (round < r.iterations % rounds ? 1 : 0)
                                     : std::max(1, r.iterations / rounds);
    for (size_t i = 0; i < r.schedules.size(); ++i) {
      const exec::TimingSamples times = r.sessions[i]->time(0, chunk);
      exec::TimedRun& run = r.timed[i];
      run.latencies_ms.insert(run.latencies_ms.end(), times.latency_ms.begin(), times.latency_ms.end());
      run.end_to_end_ms.insert(run.end_to_end_ms.end(), times.end_to_end_ms.begin(), times.end_to_end_ms.end());
    }
  }
}

// Phase 10: the summaries and the comparison with its verdict (printed even
// with --quiet).
void report(RunState& r) {
  const std::string note = r.backend->prediction_note();
  if (!note.empty() && !r.options.quiet) r.out << "Not measured: " << note << "; nothing was executed\n\n";
  if (!r.options.quiet) {
    for (const auto& run : r.timed) {
      r.out << exec::format_summary(run, exec::compute_stats(run.latencies_ms, run.batch)) << "\n";
    }
  }
  r.out << exec::format_comparison(r.timed);
}

// Phase 11: --export-times and --trace (one trace process per schedule, one
// track per stream).
void write_exports(RunState& r) {
  const RunOptions& o = r.options;
  if (!o.export_times.empty()) exec::export_times(o.export_times, r.timed);
  if (o.trace.empty()) return;
  std::vector<exec::TraceIteration> traces;
  for (size_t i = 0; i < r.schedules.size(); ++i) traces.push_back(r.sessions[i]->trace(r.schedules[i].name));
  std::map<std::string, std::string> about = {{"backend", r.backend_entry->name},
                                              {"device", r.backend->device_name()}};
  const std::string note = r.backend->prediction_note();
  if (!note.empty()) about["source"] = "not measured: " + note;
  exec::write_chrome_trace(o.trace, traces, about);
}

}  // namespace

int run(const RunOptions& options, std::ostream& out) {
  check_options(options);
  RunState r(options, out);
  read_schedule_files(r);
  import_model(r);
  load_schedules(r);
  if (options.dry_run) return print_plans(r);
  open_backend(r);
  prepare_inputs(r);
  run_once(r);
  const bool passed = check_outputs(r);
  write_output_files(r);
  time_interleaved(r);
  report(r);
  write_exports(r);
  if (!passed) {
    out << "FAILED: outputs differ beyond tolerance (see the reports above)\n";
    return static_cast<int>(ExitCode::kMismatch);
  }
  return 0;
}

}  // namespace ios::runner
