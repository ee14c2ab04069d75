// ios-run: execute saved schedules, time them like trtexec, compare them and
// check their outputs. Parses options and calls lib/runner.
#include <CLI/CLI.hpp>

#include <iostream>
#include <new>

#include <fmt/format.h>

#include "backends/registry.h"
#include "cli/option_rules.h"
#include "cli/parse_error.h"
#include "cli/version_text.h"
#include "core/error.h"
#include "core/log.h"
#include "runner/runner.h"

namespace {

constexpr const char* kProgram = "ios-run";

constexpr const char* kDescription = R"(ios-run - execute and compare inter-operator schedules

Loads an ONNX model and one or more schedule files written by ios-optimize,
validates each against the model, lowers it to a per-stream plan and runs it:
on the GPU with CUDA streams, events, cuDNN and CUDA graphs (--backend cuda,
the default) or on the CPU reference executor (--backend cpu). Several
schedules are timed interleaved and compared in one table, speed-ups against
the first; a schedule given as NAME=FILE is shown as NAME. Without a schedule
file the sequential schedule is run. Without a GPU, --backend sim predicts the
same table and trace with the GPU simulator (nothing is executed; the device
is a profile, --device-profile).

Exit codes: 0 ok, 1 internal error, 2 usage or input error (bad model,
schedule or option), 3 no usable GPU (use --dry-run or --backend cpu),
4 --check found outputs that differ beyond tolerance, 5 a CUDA or cuDNN call
failed, 6 out of device memory.

Examples:
  ios-run model.onnx model.ios.schedule.json --dry-run
  ios-run model.onnx seq=a/s.json ios=b/s.json --iterations 500 --export-times t.json
  ios-run model.onnx ios.json --backend cpu --check --input input=x.npy --output-dir out/
  ios-run model.onnx ios.json --dry-run --dot ios.svg
  ios-run model.onnx seq.json ios.json --backend sim --device-profile v100 --trace t.json
)";

// The backend list comes from the registry, so --help cannot fall behind it.
std::string description() {
  std::string backends;
  for (const auto& entry : ios::backends::all()) {
    backends += fmt::format("  {:<6} {}\n", entry.name, entry.traits.description);
  }
  return kDescription + std::string("\nBackends (--backend NAME):\n") + backends;
}


// Options that would do nothing with the rest of the command line; which
// options a backend takes are its traits.
void reject_useless_options(const CLI::App& app, const ios::runner::RunOptions& o) {
  using ios::cli::reject_options_without_effect;
  if (o.quiet) {
    reject_options_without_effect(app, "with --quiet", {"--verbose"},
                                  "--quiet prints errors and the verdict only; drop one of them");
  }
  if (o.dry_run) {
    reject_options_without_effect(
        app, "with --dry-run",
        {"--check", "--reference", "--rtol", "--atol", "--input", "--seed", "--warmup",
         "--iterations", "--duration", "--output-dir", "--export-times", "--trace",
         "--no-cuda-graph", "--precision", "--threads", "--device-profile", "--conv-kernels",
         "--plan-cache"},
        "--dry-run validates and prints the plans and runs nothing; drop one of them");
    return;
  }
  if (o.conv_kernels != ios::exec::ConvKernels::kGraph) {
    reject_options_without_effect(
        app, "without --conv-kernels graph", {"--plan-cache"},
        "the plan cache holds graph-API plans; add --conv-kernels graph or drop it");
  }
  if (!o.check && o.references.empty()) {
    reject_options_without_effect(app, "without --check", {"--rtol", "--atol"},
                                  "tolerances apply to --check; add --check or drop it");
  }
  const ios::exec::BackendEntry& backend = ios::backends::find(o.backend);
  const std::pair<bool ios::exec::BackendTraits::*, const char*> uses[] = {
      {&ios::exec::BackendTraits::uses_cuda_graph, "--no-cuda-graph"},
      {&ios::exec::BackendTraits::uses_cuda_graph, "--launch"},
      {&ios::exec::BackendTraits::uses_precision, "--precision"},
      {&ios::exec::BackendTraits::uses_threads, "--threads"},
      {&ios::exec::BackendTraits::uses_device_profile, "--device-profile"},
      {&ios::exec::BackendTraits::uses_conv_kernels, "--conv-kernels"},
      {&ios::exec::BackendTraits::traces, "--trace"}};
  // fp16 and bf16 choose the graph every backend runs; tf32 and fp32 only
  // a float32 graph's math, which the CPU reference does not have.
  const bool half_precision = o.precision && o.precision->is_half();
  for (const auto& [trait, option] : uses) {
    if (backend.traits.*trait) continue;
    if (half_precision && std::string_view(option) == "--precision") continue;
    std::vector<std::string> takers;
    for (const auto& entry : ios::backends::all()) {
      if (entry.traits.*trait) takers.push_back(entry.name);
    }
    reject_options_without_effect(
        app, "with --backend " + backend.name, {option},
        fmt::format("{} does not use it ({}); drop it or use --backend {}", backend.name,
                    backend.traits.description, fmt::join(takers, " or ")));
  }
}

}  // namespace

int main(int argc, char** argv) {
  ios::runner::RunOptions o;
  o.backend = ios::backends::all().front().name;
  CLI::App app{description(), kProgram};
  app.get_formatter()->column_width(34);
  app.add_option("model", o.model_path, "ONNX model file")->required();
  app.add_option("schedules", o.schedule_paths,
                 "schedule files, FILE or NAME=FILE (NAME labels it in reports; default: sequential)");
  app.add_flag("--dry-run", o.dry_run, "validate, lower and print the plans; run nothing");
  std::vector<std::string> backend_names;
  for (const auto& entry : ios::backends::all()) backend_names.push_back(entry.name);
  app.add_option("--backend", o.backend, "where to run: " + ios::backends::names() + " (see below)")
      ->check(CLI::IsMember(backend_names))->capture_default_str();
  app.add_option("--device-profile", o.device_profile,
                 "sim: h100, h200, a100, v100, k80 or a profile JSON (default: the schedule's device, else h100)");
  app.add_option("-b,--batch", o.batch, "batch size (default: the schedule's input shapes)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_flag("--rewrite-batch", o.rewrite_batch,
               "replace dimension 0 of every input with the batch, even a static one");
  app.add_option("--input-shape", o.input_shapes, "static shape of an input, NAME:1x3x224x224");
  app.add_flag("--force", o.force,
               "accept schedules made for another model file (hash mismatch); replace existing "
               "files that are not of the kind an output writes (never an input)");
  app.add_flag("--retarget", o.retarget,
               "run schedules made for another batch at this one (--batch), as they are (the IOS "
               "paper's Table 3 experiment); the report marks each");
  app.add_option("--warmup", o.warmup, "untimed iterations (default: cuda 20, cpu 1)")->check(CLI::Range(0, 1000000));
  app.add_option("--iterations", o.iterations, "timed iterations (default: cuda 200, cpu 5)")->check(CLI::Range(1, 10000000));
  app.add_option("--duration", o.duration_s, "keep timing at least this many seconds")->check(ios::cli::finite_range(0.0, 86400.0));
  app.add_flag("--check", o.check, "compare outputs with the sequential schedule's (and --reference)");
  app.add_option("--reference", o.references, "reference output NAME=file.npy or file.npy");
  app.add_option("--rtol", o.rtol, "relative tolerance of --check (default: cpu 1e-4, cuda fp32 1e-3, tf32 5e-2)")
      ->check(ios::cli::finite_range(0.0, 1e30));
  app.add_option("--atol", o.atol, "absolute tolerance of --check (default: cpu 1e-5, cuda fp32 1e-3, tf32 5e-2)")
      ->check(ios::cli::finite_range(0.0, 1e30));
  app.add_option("--input", o.inputs, "input NAME=file.npy or file.npy (default: seeded random)");
  app.add_option("--seed", o.seed, "seed of the random inputs")->capture_default_str();
  app.add_option("--output-dir", o.output_dir, "write each output as NAME.npy here");
  app.add_option("--export-times", o.export_times, "write per-iteration timings as JSON");
  app.add_option("--trace", o.trace, "write a Chrome/Perfetto trace of one iteration (cuda, sim)");
  app.add_option("--dot", o.dot_path,
                 "draw the (one) schedule: Graphviz DOT, or SVG when FILE ends in .svg (needs dot)");
  bool no_graph = false;
  app.add_option("--launch", o.launch,
                 "graph (a captured CUDA graph), plain (host launches) or synced (host launches "
                 "and a device synchronization after each stage, the IOS paper's engine)")
      ->check(CLI::IsMember(ios::sched::kLaunchModes))
      ->capture_default_str();
  app.add_flag("--no-cuda-graph", no_graph, "plain launches instead of a captured CUDA graph (--launch plain)")
      ->excludes("--launch");
  ios::cli::add_precision_option(
      app, o.precision,
      "the precision each schedule records (default; tf32 without one); tf32 or fp32: a "
      "float32 graph's "
      "convolution and matrix-product math; fp16 or bf16 must match a half-precision "
      "schedule (or "
      "--retarget it to the other 16-bit type)");
  app.add_option("--threads", o.threads, "CPU backend threads (0: all cores)")->check(CLI::Range(0, 1024));
  std::string conv_kernels = "legacy";
  app.add_option("--conv-kernels", conv_kernels,
                 "cuda: legacy (cuDNN's legacy calls) or graph (cuDNN graph-API plans, timed, the "
                 "fastest kept; legacy where none builds; unmeasured so far)")
      ->check(CLI::IsMember({"legacy", "graph"}))
      ->capture_default_str();
  app.add_option("--plan-cache", o.plan_cache,
                 "--conv-kernels graph: the plan cache file, the kernels chosen before on this GPU "
                 "(default: plans.sqlite beside the profile database)");
  app.add_flag("-v,--verbose", o.verbose, "print the effective options and plan details");
  app.add_flag("-q,--quiet", o.quiet, "print errors and the final verdict only");
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
  if (no_graph) o.launch = "plain";
  o.conv_kernels = *ios::exec::parse_conv_kernels(conv_kernels);
  try {
    ios::set_verbosity(o.quiet ? ios::Verbosity::kQuiet
                       : o.verbose ? ios::Verbosity::kVerbose
                                   : ios::Verbosity::kNormal);
    reject_useless_options(app, o);
    ios::cli::reject_empty_paths(app, {"--export-times", "--trace", "--dot"},
                                 "a file name or - (standard output)");
    ios::cli::reject_empty_paths(app, {"--output-dir"}, "a folder name");
    ios::cli::reject_empty_paths(app, {"--plan-cache"}, "a file name");
    ios::cli::reject_empty_paths(app, {"--device-profile"}, "a profile name or file");
    return ios::runner::run(o, std::cout);
  } catch (const ios::Error& e) {
    std::cerr << "ios-run: error: " << e.what() << "\n";
    return static_cast<int>(e.exit_code());
  } catch (const std::bad_alloc&) {  // what no size check foresaw: the machine, not ios
    std::cerr << "ios-run: error: not enough memory: an allocation failed; lower --batch or "
                 "raise the memory limit (ulimit -v)\n";
    return static_cast<int>(ios::ExitCode::kInput);
  } catch (const std::exception& e) {
    std::cerr << "ios-run: internal error: " << e.what() << "\n";
    return static_cast<int>(ios::ExitCode::kInternal);
  }
}
