// ios-optimize: ONNX model in, schedule file out. Parses options and calls
// the library (lib/optimize/optimizer.h does the work).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>
#include <new>

#include "cli/help_text.h"
#include "cli/option_rules.h"
#include "cli/parse_error.h"
#include "cli/version_text.h"
#include "core/error.h"
#include "core/log.h"
#include "optimize/optimizer.h"

namespace {

constexpr const char* kProgram = "ios-optimize";

// The scheduler list comes from the registry, so --help cannot fall behind it.
std::string description() {
  return fmt::format(R"(ios-optimize - find a fast inter-operator schedule for a CNN

Reads an ONNX model, forms schedule units and blocks, obtains stage latencies
(measured on the GPU, or predicted by the analytical model without one), runs
a scheduler and writes the schedule as a versioned JSON file that ios-run
executes. The default scheduler is ios, the IOS dynamic program of Ding et
al. (MLSys 2021). Schedulers: {}.

Exit codes: 0 ok, 1 internal error, 2 usage or input error, 3 no usable GPU
(--cost measured without one), 5 a CUDA or cuDNN call failed, 6 out of
device memory.

Examples:
  ios-optimize model.onnx                          # IOS, writes model.ios.schedule.json
  ios-optimize model.onnx -o s.json --scheduler greedy
  ios-optimize model.onnx --scheduler ios --params r=2,s=8,strategy=parallel
  ios-optimize model.onnx --batch 8 --cost simulated --device-profile h200
  ios-optimize model.onnx --analyze                # per-block statistics only
  ios-optimize model.onnx --dot s.svg              # also draw the schedule (Graphviz)
  ios-optimize model.onnx --html report.html       # summary, picture and block table
  ios-optimize model.onnx --calibrate profile.sqlite --device-profile h100 -o h100-fit.json
  ios-optimize a.onnx --calibrate a.sqlite --calibrate-model b.onnx --calibrate-db b.sqlite -o fit.json
)",
                     ios::cli::scheduler_names());
}

// Options that would do nothing with the rest of the command line: the
// library's rule (ios::Schedule::optimize applies the same).
void reject_useless_options(const CLI::App& app, const ios::optimize::OptimizeOptions& o) {
  ios::optimize::reject_options_without_effect(
      o, [&app](const std::string& option) { return ios::cli::given(app, option); });
}

}  // namespace

int main(int argc, char** argv) {
  ios::optimize::OptimizeOptions options;
  CLI::App app{description(), kProgram};
  app.get_formatter()->column_width(34);
  bool verbose = false, quiet = false, list = false;

  app.add_option("model", options.model_path, "ONNX model file");
  app.add_option(
      "-o,--output", options.output_path,
      "schedule file to write, - for stdout (default: MODEL without .onnx + .SCHEDULER.schedule.json)");
  app.add_option("-s,--scheduler", options.scheduler,
                 "scheduler: " + ios::cli::scheduler_names() + " (see --list-schedulers)")
      ->capture_default_str();
  app.add_option("-p,--params", options.scheduler_params,
                 "scheduler parameters as key=value[,key=value...], e.g. r=3,s=8");
  app.add_option("-b,--batch", options.batch,
                 "batch size; needed when the model's batch dimension is symbolic")
      ->check(CLI::Range(1, 1 << 20));
  app.add_flag("--rewrite-batch", options.rewrite_batch,
               "with --batch: replace dimension 0 of every input, even a static one");
  app.add_option("--input-shape", options.input_shapes,
                 "static shape of an input, NAME:1x3x224x224 (repeatable)");
  app.add_option("--cost", options.cost,
                 "latency source: auto (GPU if present, else predicted), simulated, measured")
      ->check(CLI::IsMember({"auto", "simulated", "measured"}))
      ->capture_default_str();
  app.add_option("--device-profile", options.device_profile,
                 "simulated device: h100, h200, a100, v100, k80 or a profile JSON file")
      ->capture_default_str();
  app.add_option("--profile-db", options.profile_db,
                 "measured latencies cache (default: ~/.cache/ios/profile.sqlite)");
  std::string conv_kernels = "legacy";
  app.add_option("--conv-kernels", conv_kernels,
                 "with measured costs: the convolutions' kernels, legacy (cuDNN's legacy calls) or "
                 "graph (cuDNN graph-API plans, timed; unmeasured so far)")
      ->check(CLI::IsMember({"legacy", "graph"}))
      ->capture_default_str();
  app.add_option("--profile-budget", options.profile_budget,
                 "with measured costs: stages (N) or seconds (Ns) of GPU measuring a searching "
                 "scheduler may use on the contenders the simulator ranks; all = measure every "
                 "stage considered")
      ->capture_default_str();
  ios::cli::add_precision_option(
      app, options.precision,
      "tf32 or fp32: a float32 model's convolution and matrix-product math (default "
      "tf32); fp16 or bf16: "
      "convert a float32 model to half precision (default for a model typed in one)");
  // Split by ios::cli::keep_fp32_names, not by CLI11's delimiter: that drops
  // empty entries ("--keep-fp32 ," then took the next argument as its value)
  // and has no way to write a comma inside a node name.
  std::vector<std::string> keep_fp32;
  app.add_option("--keep-fp32", keep_fp32,
                 "with --precision fp16|bf16: node names or operator types kept in float32 "
                 "(comma-separated; a comma in a name as \\, a backslash as \\\\)")
      ->type_name("TEXT")
      ->take_all()
      ->expected(1)
      ->allow_extra_args(false);  // one list an occurrence: the model may follow
  app.add_option(
      "--write-onnx", options.write_onnx,
      "with --precision fp16|bf16: also write the converted graph as ONNX, for other runtimes");
  app.add_flag("--half-io", options.half_io,
               "with --precision fp16|bf16: the graph's inputs and outputs in the 16-bit type too "
               "(default float32)");
  app.add_option("--max-block-units", options.max_block_units,
                 "split regions larger than this into parts (1-64)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--max-block-bound", options.max_block_log10_bound,
                 "split blocks whose IOS search bound C(n/d+2,2)^d exceeds 10^X")
      ->check(ios::cli::finite_range(1.0, 30.0))
      ->capture_default_str();
  app.add_option("--time-limit", options.time_limit_s,
                 "seconds the search may take (ios, ios-parallel, ios-merge, dos); then the best "
                 "schedule found is written; 0 = no limit")
      ->check(ios::cli::finite_range(0.0, 1e6))
      ->capture_default_str();
  app.add_option("--memory-limit", options.memory_limit,
                 "peak device memory the schedule may take (activations, weights, workspaces): bytes, or "
                 "a number with KiB, MiB or GiB, e.g. 512MiB; the fastest schedule within it is written");
  app.add_option("--max-streams", options.max_streams,
                 "most streams a schedule may use (1-1024); the smaller of this and the scheduler's s "
                 "(ios, dos) or streams (lios) wins")
      ->check(CLI::Range(1, 1024));
  app.add_option("--threads", options.threads,
                 "threads of the search (blocks in parallel, simulated costs); 0 = one per core; "
                 "the schedule does not depend on it")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  app.add_option("--form", options.form,
                 "how a staged schedule's stages are separated when it runs: staged (barriers), "
                 "streamed (only true dependencies, as event waits) or best (the faster by the "
                 "simulator)")
      ->check(CLI::IsMember({"staged", "streamed", "best"}))
      ->capture_default_str();
  app.add_option("--launch", options.launch,
                 "how the schedule will run, planned for and recorded in it: graph (a captured "
                 "CUDA graph, as ios-run runs by default), plain (host launches, ios-run "
                 "--no-cuda-graph) or synced (host launches and a device synchronization after "
                 "each stage, the IOS paper's engine)")
      ->check(CLI::IsMember(ios::sched::kLaunchModes))
      ->capture_default_str();
  app.add_option(
      "--report-json", options.report_json,
      "also write the summary and per-block statistics as JSON (for scripts), - for stdout");
  app.add_flag("--force", options.force,
               "replace an existing file that is not of the kind the output writes (never an input)");
  app.add_option("--dot", options.dot_path,
                 "also draw the schedule: Graphviz DOT, or SVG when FILE ends in .svg (needs dot)");
  app.add_option("--html", options.html_path,
                 "also write an HTML page: summary, the schedule's picture, per-block table (needs dot)");
  app.add_option("--calibrate", options.calibrate_db,
                 "fit --device-profile's knobs to this profile database's measured stages of the "
                 "model; writes the profile to -o (no schedule)");
  app.add_option(
         "--calibrate-db", options.calibrate_dbs,
         "with --calibrate: another profile database to read (repeatable; a stage in several "
         "counts once, the first's)")
      ->take_all()
      ->expected(1)
      ->allow_extra_args(false);  // one file an occurrence: the model may follow
  app.add_option(
         "--calibrate-model", options.calibrate_models,
         "with --calibrate: another model whose measured stages join the one fit (repeatable; "
         "same --batch and --precision)")
      ->take_all()
      ->expected(1)
      ->allow_extra_args(false);  // one file an occurrence: the model may follow
  app.add_flag("--analyze", options.analyze,
               "print per-block structure and search statistics; write no schedule");
  app.add_flag("--list-schedulers", list, "list the schedulers and their parameters, then exit");
  app.add_flag("-v,--verbose", verbose, "print the effective options and per-block progress");
  app.add_flag("-q,--quiet", quiet, "print errors only");
  app.set_version_flag("--version", [] { return ios::cli::version_text(kProgram); },
                       "print the version, source commit and CUDA/cuDNN versions, then exit");

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << ios::cli::describe_parse_error(app, e, kProgram) << "\n";
    return static_cast<int>(ios::ExitCode::kInput);
  }
  options.conv_kernels = *ios::exec::parse_conv_kernels(conv_kernels);

  try {
    ios::set_verbosity(quiet     ? ios::Verbosity::kQuiet
                       : verbose ? ios::Verbosity::kVerbose
                                 : ios::Verbosity::kNormal);
    if (list) {
      std::cout << ios::optimize::describe_schedulers();
      return 0;
    }
    if (options.model_path.empty()) {
      std::cerr << "ios-optimize: error: no model given; usage: ios-optimize MODEL.onnx [options] (see "
                   "ios-optimize --help)\n";
      return static_cast<int>(ios::ExitCode::kInput);
    }
    // An empty path would silently mean the default (or nothing): refuse it.
    ios::cli::reject_empty_paths(app, {"--output", "--report-json", "--dot", "--html"},
                                 "a file name or - (standard output)");
    ios::cli::reject_empty_paths(app,
                                 {"--calibrate", "--calibrate-db", "--calibrate-model",
                                  "--device-profile", "--profile-db", "--write-onnx"},
                                 "a file name");
    if (ios::cli::given(app, "--memory-limit") && options.memory_limit.empty()) {
      std::cerr << "ios-optimize: error: --memory-limit is empty; give bytes or a number with B, KiB, MiB or "
                   "GiB, e.g. 512MiB\n";
      return static_cast<int>(ios::ExitCode::kInput);
    }
    options.keep_fp32 = ios::cli::keep_fp32_names(keep_fp32);
    options.verbose = verbose;
    options.quiet = quiet;
    options.device_profile_given = ios::cli::given(app, "--device-profile");
    options.time_limit_given = ios::cli::given(app, "--time-limit");
    reject_useless_options(app, options);
    return ios::optimize::run_optimize(options, std::cout);
  } catch (const ios::Error& e) {
    std::cerr << "ios-optimize: error: " << e.what() << "\n";
    return static_cast<int>(e.exit_code());
  } catch (const std::bad_alloc&) {  // what no size check foresaw: the machine, not ios
    std::cerr << "ios-optimize: error: not enough memory: an allocation failed; lower --batch or "
                 "raise the memory limit (ulimit -v)\n";
    return static_cast<int>(ios::ExitCode::kInput);
  } catch (const std::exception& e) {
    std::cerr << "ios-optimize: internal error: " << e.what() << "\n";
    return static_cast<int>(ios::ExitCode::kInternal);
  }
}
