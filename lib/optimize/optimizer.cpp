#include "optimize/optimizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"
#include "core/log.h"
#include "core/progress.h"
#include "cost/calibrate.h"
#include "optimize/html_report.h"
#include "cost/device_profile.h"
#include "cost/profile_db.h"
#include "cost/simulated.h"
#include "cuda/engine.h"
#include "cuda/measured.h"
#include "exec/plan.h"
#include "sched/schedule_dot.h"
#include "sim/simulator.h"
#include "sched/schedule_io.h"
#include "sched/validate.h"

namespace ios::optimize {
namespace {

std::string default_output(const std::string& model, const std::string& scheduler) {
  std::filesystem::path p(model);
  p.replace_extension();
  return p.string() + "." + scheduler + ".schedule.json";
}

// Schedules and reports are JSON objects with a "format" field.
bool is_ios_file_of_format(const std::string& path, std::string_view format) {
  try {
    const nlohmann::json doc =
        nlohmann::json::parse(read_file_limited(path, sched::kMaxScheduleFileBytes, "file"), nullptr,
                              /*allow_exceptions=*/false);
    return doc.is_object() && doc.contains("format") && doc["format"] == format;
  } catch (const std::exception&) {
    return false;
  }
}

// Refuses, before any work, an output that would destroy something the user
// did not mean to replace: the model itself, or an existing file of another
// kind (a typo such as `-o model.onnx`). --force overrides both.
void check_output_target(const std::string& target, const std::string& option,
                         std::string_view format, std::string_view kind,
                         const OptimizeOptions& options) {
  check_output_path(target);
  if (options.force) return;
  if (same_file(target, options.model_path)) {
    user_error("{} {} is the input model; writing it would destroy the model. Give another path, "
               "or pass --force to overwrite it", option, target);
  }
  if (is_existing_regular_file(target) && !is_ios_file_of_format(target, format)) {
    user_error("{} {}: the file exists and is not {}; give another path, remove the file, or pass "
               "--force to overwrite it", option, target, kind);
  }
}

void check_outputs(const std::string& output, const OptimizeOptions& options) {
  const std::string& report = options.report_json;
  if (!output.empty()) {
    check_output_target(output, "-o", "ios-schedule", "an ios schedule", options);
  }
  // The pictures are never worth the model they would replace.
  for (const auto& [path, option] : {std::pair{options.dot_path, "--dot"}, std::pair{options.html_path, "--html"}}) {
    if (!path.empty() && same_file(path, options.model_path)) {
      user_error("{} {} is the input model; writing it would destroy the model, give another path", option, path);
    }
  }
  if (report.empty()) return;
  if (!output.empty() && (report == output || same_file(report, output) ||
                          (is_stdout_path(report) && is_stdout_path(output)))) {
    user_error("-o and --report-json both name {}; give them different paths", report);
  }
  check_output_target(report, "--report-json", "ios-optimize-report", "an ios-optimize report",
                      options);
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

std::string format_params(const std::vector<std::pair<std::string, std::string>>& params) {
  std::string out;
  for (const auto& [k, v] : params) out += (out.empty() ? "" : ", ") + k + "=" + v;
  return out.empty() ? "none" : out;
}

std::string block_kinds(const sched::UnitGraph& units, const sched::Block& block) {
  std::map<std::string_view, int> kinds;
  for (sched::UnitId u = block.begin; u < block.end; ++u) ++kinds[sched::unit_kind_name(units.unit(u).kind)];
  std::string out;
  for (const auto& [k, n] : kinds) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", n, k);
  return out;
}

}  // namespace

CostChoice make_cost_model(const sched::UnitGraph& units, const OptimizeOptions& options,
                           ProgressLine* progress) {
  CostChoice choice;
  const cost::Precision precision =
      options.precision == "fp32" ? cost::Precision::kFp32 : cost::Precision::kTf32;
  std::optional<cuda::DeviceSummary> device;
  if (options.cost != "simulated") device = cuda::probe_device();
  if (options.cost == "measured" && !device) {
    throw NoDeviceError(
        "--cost measured needs a CUDA device and none is usable here; use --cost simulated "
        "(predicted latencies) or run on a machine with an NVIDIA GPU");
  }
  if (device) {
    cuda::MeasuredOptions measured;
    measured.db_path = options.profile_db;
    measured.precision = precision == cost::Precision::kFp32 ? cuda::Precision::kFp32
                                                             : cuda::Precision::kTf32;
    if (progress != nullptr && progress->enabled()) {
      // One progress line, rewritten in place (stderr only, so stdout stays clean).
      measured.progress = [line = progress](const cuda::MeasureProgress& p) {
        std::string eta = p.eta_s >= 0 ? fmt::format(", ETA {:.0f} s", p.eta_s) : "";
        std::string total = p.expected > 0 ? fmt::format("/{}", p.expected) : "";
        line->update(fmt::format("[measure] {}{} stages measured, {} cache hits, {:.1f} s{}", p.measured,
                                 total, p.cache_hits, p.elapsed_s, eta));
      };
    }
    choice.model = cuda::make_measured_cost_model(units, measured);
    choice.device = {device->name, device->compute_capability, device->driver, device->cudnn};
    choice.note = fmt::format("measured on {}", device->name);
    return choice;
  }
  cost::DeviceProfile profile = cost::load_device_profile(options.device_profile);
  choice.device = {profile.name, "", "", ""};
  choice.note = options.cost == "auto"
                    ? fmt::format("predicted: no CUDA device found, GPU simulator with the '{}' device profile",
                                  profile.name)
                    : fmt::format("predicted: GPU simulator with the '{}' device profile", profile.name);
  cost::SimulatedOptions simulated;
  simulated.precision = precision;
  choice.model = std::make_unique<cost::SimulatedCostModel>(units, std::move(profile), simulated);
  return choice;
}

sched::Schedule schedule_model(const model::PreparedModel& prepared, const std::string& scheduler,
                               const std::string& params, const CostChoice& cost,
                               sched::SearchStats& stats, sched::BlockProgress progress) {
  const sched::SchedulerEntry& entry = sched::find_scheduler(scheduler);
  const sched::Params parsed = sched::Params::parse(entry.name, entry.params, params);
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<sched::Scheduler> instance = entry.make(parsed);
  instance->set_block_progress(std::move(progress));
  sched::Schedule schedule = instance->run(*prepared.units, *cost.model, stats);
  stats.total_search_ms = ms_since(start);
  schedule.model = prepared.info();
  schedule.device = cost.device;
  schedule.scheduler.name = entry.name;
  schedule.scheduler.params = parsed.to_strings();
  schedule.scheduler.cost_model = cost.model->name();
  try {
    sched::validate_schedule(schedule, *prepared.units, "the " + entry.name + " schedule");
  } catch (const UserError& e) {
    // The schedule came from ios, not from the user: a scheduler bug.
    internal_error("scheduler '{}' produced an invalid schedule: {}", entry.name, e.what());
  }
  if (const auto* simulated = dynamic_cast<const cost::SimulatedCostModel*>(cost.model.get())) {
    predict_by_simulation(*simulated, schedule, stats);
  }
  return schedule;
}

void predict_by_simulation(const cost::SimulatedCostModel& model, sched::Schedule& schedule,
                           sched::SearchStats& stats) {
  const sched::UnitGraph& units = model.graph();
  const exec::ExecPlan plan = exec::lower(units, schedule);
  const sim::Timeline timeline = model.simulate(plan);
  schedule.predicted_latency_ms = timeline.makespan_us / 1000.0;
  // A staged schedule's stage predictions already are simulations of the
  // stages' plans, and its plan is their sequence. A streamed schedule's
  // per-launch times and per-block latencies come from its scheduler's own
  // estimate: replace them by the simulated timeline.
  if (schedule.is_staged()) return;
  std::vector<double> begin(static_cast<size_t>(units.size()), 0.0), end(begin);
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    for (sched::UnitId u : plan.kernels[k].units) {
      begin[static_cast<size_t>(u)] = timeline.launch_begin_us[k] / 1000.0;
      end[static_cast<size_t>(u)] = timeline.launch_end_us[k] / 1000.0;
    }
  }
  for (auto& launch : std::get<sched::StreamedSchedule>(schedule.body).launches) {
    launch.predicted_start_ms = begin[static_cast<size_t>(launch.unit)];
    launch.predicted_finish_ms = end[static_cast<size_t>(launch.unit)];
  }
  // A block's latency: from the end of the previous block's last unit to the
  // end of its own (the last block also takes the final join).
  double previous = 0.0;
  for (size_t i = 0; i < stats.blocks.size(); ++i) {
    sched::BlockStats& block_stats = stats.blocks[i];
    const sched::Block& block = units.blocks().at(static_cast<size_t>(block_stats.block));
    double block_end = previous;
    for (sched::UnitId u = block.begin; u < block.end; ++u) {
      block_end = std::max(block_end, end[static_cast<size_t>(u)]);
    }
    if (i + 1 == stats.blocks.size()) block_end = std::max(block_end, schedule.predicted_latency_ms);
    block_stats.predicted_ms = block_end - previous;
    previous = block_end;
  }
}

std::string describe_schedulers() {
  std::string out = "Schedulers (ios-optimize --scheduler NAME --params k=v,...):\n";
  for (const auto& entry : sched::scheduler_registry()) {
    out += fmt::format("\n  {:<12} {}\n", entry.name, entry.description);
    for (const auto& p : entry.params) {
      const std::string def = std::visit(
          [](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, bool>) return std::string(v ? "true" : "false");
            else if constexpr (std::is_same_v<T, std::string>) return v;
            else return fmt::format("{}", v);
          },
          p.default_value);
      out += fmt::format("      {}={:<10} {}\n", p.name, def, p.help);
    }
  }
  return out;
}

namespace {

void write_report_json(const std::string& path, const OptimizeOptions& options,
                       const model::PreparedModel& prepared, const sched::Schedule& schedule,
                       const sched::SearchStats& stats, const CostChoice& cost,
                       double sequential_ms, double import_ms, const std::string& output) {
  const sched::UnitGraph& units = *prepared.units;
  nlohmann::json blocks = nlohmann::json::array();
  for (size_t b = 0; b < units.blocks().size(); ++b) {
    const sched::Block& block = units.blocks()[b];
    nlohmann::json entry = {{"index", b},
                            {"first_unit", units.unit(block.begin).id},
                            {"units", block.size()},
                            {"width", block.width},
                            {"split_by_cap", block.split_by_cap}};
    if (b < stats.blocks.size()) {
      const sched::BlockStats& s = stats.blocks[b];
      entry["states"] = s.states;
      entry["transitions"] = s.transitions;
      entry["stages_costed"] = s.stages_costed;
      entry["search_ms"] = s.search_ms;
      entry["predicted_ms"] = s.predicted_ms;
    }
    blocks.push_back(entry);
  }
  int64_t states = 0, transitions = 0, costed = 0;
  for (const auto& s : stats.blocks) {
    states += s.states;
    transitions += s.transitions;
    costed += s.stages_costed;
  }
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [k, v] : schedule.scheduler.params) params[k] = v;
  const nlohmann::json doc = {
      {"format", "ios-optimize-report"},
      {"version", 1},
      {"model", prepared.model.path},
      {"batch", prepared.model.batch},
      {"units", units.size()},
      {"blocks", blocks},
      {"scheduler", schedule.scheduler.name},
      {"params", params},
      {"cost_model", cost.model->name()},
      {"cost_note", cost.note},
      {"device", schedule.device.name},
      {"predicted_latency_ms", schedule.predicted_latency_ms},
      {"sequential_predicted_ms", sequential_ms},
      {"search_ms", stats.total_search_ms},
      {"import_ms", import_ms},
      {"states", states},
      {"transitions", transitions},
      {"stages_costed", costed},
      {"schedule_file", output},
      {"stages", schedule.is_staged() ? static_cast<int64_t>(schedule.staged().stages.size()) : 0},
      {"analyze_only", options.analyze}};
  create_parent_folder(path);
  write_file_atomically(path, doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

// The search's progress line: blocks searched / total, with an ETA that
// weighs each block by the IOS paper's bound on its transitions (blocks
// differ in cost by orders of magnitude, so a block count alone misleads).
sched::BlockProgress search_progress(ProgressLine& line, const sched::UnitGraph& units,
                                     const std::string& scheduler) {
  if (!line.enabled()) return {};
  std::vector<double> weight;
  for (const sched::Block& b : units.blocks()) {
    weight.push_back(std::pow(10.0, std::min(15.0, sched::log10_search_bound(b.size(), b.width))));
  }
  const auto start = std::chrono::steady_clock::now();
  return [&line, weight, start, scheduler](int done, int total) {
    double done_weight = 0.0, all_weight = 0.0;
    for (size_t b = 0; b < weight.size(); ++b) {
      all_weight += weight[b];
      if (static_cast<int>(b) < done) done_weight += weight[b];
    }
    const double elapsed_s = ms_since(start) / 1000.0;
    const double eta_s = done_weight > 0 ? elapsed_s * (all_weight - done_weight) / done_weight : 0.0;
    line.update(fmt::format("[{}] {}/{} blocks searched, {:.1f} s, ETA {:.0f} s", scheduler, done, total,
                            elapsed_s, eta_s),
                done == total);
  };
}

// -v: the values in effect once the model is imported and defaults applied.
void log_effective_options(const OptimizeOptions& options, const model::PreparedModel& prepared,
                           const CostChoice& cost, const std::string& output) {
  logger("cli")->debug(
      "effective options: model={} batch={} rewrite-batch={} output={} scheduler={} params='{}' cost={} ({}) "
      "device-profile={} precision={} max-block-units={} max-block-bound=1e{} analyze={} "
      "report-json={} dot={} html={}",
      options.model_path, prepared.model.batch, options.rewrite_batch,
      output.empty() ? "(none: --analyze)" : output,
      options.scheduler, options.scheduler_params, cost.model->name(), cost.note,
      options.device_profile, options.precision, options.max_block_units,
      options.max_block_log10_bound, options.analyze,
      options.report_json.empty() ? "(none)" : options.report_json,
      options.dot_path.empty() ? "(none)" : options.dot_path,
      options.html_path.empty() ? "(none)" : options.html_path);
}

}  // namespace

namespace {

// ios-optimize --calibrate DB: the device profile whose simulation best
// reproduces the model's stages measured in DB.
int run_calibration(const OptimizeOptions& options, std::ostream& out) {
  if (options.output_path.empty()) {
    user_error("--calibrate writes a device profile: give its path with -o FILE.json");
  }
  if (same_file(options.output_path, options.model_path) || same_file(options.output_path, options.calibrate_db)) {
    user_error("-o {} is an input file; writing the profile there would destroy it, give another path",
               options.output_path);
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(options.calibrate_db, ec)) {
    user_error("--calibrate {}: no such profile database (fill one with --cost measured --profile-db {} "
               "on a GPU)",
               options.calibrate_db, options.calibrate_db);
  }
  sched::FormationOptions formation;
  formation.max_block_units = options.max_block_units;
  formation.max_block_log10_bound = options.max_block_log10_bound;
  auto prepared = model::prepare_model(
      options.model_path, model::shape_options(options.batch, options.rewrite_batch, options.input_shapes),
      formation);
  const sched::UnitGraph& units = *prepared->units;
  const cost::DeviceProfile start = cost::load_device_profile(options.device_profile);
  cost::SimulatedOptions simulated;
  simulated.precision = options.precision == "fp32" ? cost::Precision::kFp32 : cost::Precision::kTf32;

  // Read-only: calibration must leave its input exactly as it was.
  const cost::ProfileDb db(options.calibrate_db, cost::ProfileDb::Access::kReadOnly);
  const cost::DbSamples found = cost::samples_from_db(
      units, db, cost::candidate_stages(units, start, simulated), simulated.precision, prepared->model.batch);
  if (found.samples.empty()) {
    user_error("--calibrate {}: none of {}'s stages at batch {}, precision {} is in the database; measure "
               "them first (ios-optimize {} --batch {} --cost measured --profile-db {})",
               options.calibrate_db, prepared->model.path, prepared->model.batch, options.precision,
               prepared->model.path, prepared->model.batch, options.calibrate_db);
  }
  cost::CalibrationResult fit = cost::calibrate_profile(units, start, simulated, found.samples);
  const std::string_view suffix = "-calibrated";
  std::string base = start.name.substr(0, cost::kMaxProfileNameBytes - suffix.size());
  while (!base.empty() && (static_cast<unsigned char>(start.name[base.size()]) & 0xc0) == 0x80)
    base.pop_back();  // a cut inside a UTF-8 character
  fit.profile.name = base + std::string(suffix);
  fit.profile.description = fmt::format(
      "{} fitted to {} stages of {} measured on {} (mean error {:.1f}% -> {:.1f}%)",
      cost::quoted_excerpt(start.name), fit.samples,
      cost::quoted_excerpt(std::filesystem::path(prepared->model.path).filename().string()),
      found.device, 100.0 * fit.mean_error_before, 100.0 * fit.mean_error_after);
  // The fit stays inside the parser's ranges; checking the text the parser
  // will read makes sure --device-profile accepts what is written.
  const std::string profile_text = cost::device_profile_json(fit.profile);
  try {
    (void)cost::parse_device_profile(profile_text, options.output_path);
  } catch (const UserError& e) {
    internal_error("the calibrated profile fails its own checks: {}", e.what());
  }
  create_parent_folder(options.output_path);
  write_file_atomically(options.output_path, profile_text);

  if (options.quiet) return 0;
  out << "\n=== ios-optimize calibration ===\n";
  out << fmt::format("Measured         {} stages of {} (batch {}, {}) on {}\n", fit.samples,
                     prepared->model.path, prepared->model.batch, options.precision, found.device);
  out << fmt::format("Start profile    {}\n", start.name);
  for (const std::string& knob : fit.fitted) {
    const nlohmann::json before = nlohmann::json::parse(cost::device_profile_json(start));
    const nlohmann::json after = nlohmann::json::parse(cost::device_profile_json(fit.profile));
    out << fmt::format("  {:<26} {:>10.4g} -> {:.4g}\n", knob, before.at(knob).get<double>(),
                       after.at(knob).get<double>());
  }
  out << fmt::format("Error            mean |predicted/measured - 1| {:.2f}% -> {:.2f}% (max {:.2f}%), "
                     "{} evaluations\n",
                     100.0 * fit.mean_error_before, 100.0 * fit.mean_error_after,
                     100.0 * fit.max_error_after, fit.evaluations);
  out << fmt::format("Written          {} (use it with --device-profile {})\n", options.output_path,
                     options.output_path);
  return 0;
}

}  // namespace

int run_optimize(const OptimizeOptions& options, std::ostream& out) {
  if (!options.calibrate_db.empty()) return run_calibration(options, out);
  auto log = logger("cli");
  const auto start = std::chrono::steady_clock::now();
  // Fail on a bad scheduler name or parameters before the (slow) import.
  const sched::SchedulerEntry& entry = sched::find_scheduler(options.scheduler);
  sched::Params::parse(entry.name, entry.params, options.scheduler_params);
  // Checked before the (slow) import, so a refused output costs nothing.
  const std::string output = options.analyze ? std::string()
                             : options.output_path.empty()
                                 ? default_output(options.model_path, entry.name)
                                 : options.output_path;
  check_outputs(output, options);
  // A file written to standard output must not be mixed with the summary.
  std::ostream& summary = is_stdout_path(output) || is_stdout_path(options.report_json) ? std::cerr : out;

  sched::FormationOptions formation;
  formation.max_block_units = options.max_block_units;
  formation.max_block_log10_bound = options.max_block_log10_bound;
  ProgressLine progress(progress_wanted(options.quiet));
  progress.update(fmt::format("[import] {}", options.model_path), true);
  auto prepared = model::prepare_model(
      options.model_path, model::shape_options(options.batch, options.rewrite_batch, options.input_shapes),
      formation);
  const sched::UnitGraph& units = *prepared->units;
  const double import_ms = ms_since(start);
  progress.clear();
  CostChoice cost = make_cost_model(units, options, &progress);
  if (options.verbose) log_effective_options(options, *prepared, cost, output);
  if (!options.quiet) log->info("{}", cost.note);

  sched::SearchStats stats;
  sched::Schedule schedule =
      schedule_model(*prepared, options.scheduler, options.scheduler_params, cost, stats,
                     search_progress(progress, units, entry.name));
  progress.clear();
  if (!options.dot_path.empty()) {
    sched::write_schedule_picture(options.dot_path, schedule, units,
                                  output.empty() ? options.model_path : output);
  }
  // --html: the summary, the picture and the per-block table on one page.
  auto write_html = [&](double sequential_ms) {
    if (options.html_path.empty()) return;
    HtmlReport report;
    report.title = output.empty() ? options.model_path : output;
    report.summary = {
        {"Model", fmt::format("{} (batch {}, sha256 {})", prepared->model.path,
                              prepared->model.batch, prepared->model.sha256)},
        {"Units", fmt::format("{} in {} blocks", units.size(), units.blocks().size())},
        {"Scheduler", fmt::format("{} ({})", entry.name, format_params(schedule.scheduler.params))},
        {"Cost model", cost.note},
        {"Predicted latency", fmt::format("{:.4f} ms", schedule.predicted_latency_ms)}};
    if (sequential_ms > 0) {
      report.summary.emplace_back("Sequential", fmt::format("{:.4f} ms ({:.2f}x)", sequential_ms,
                                                            sequential_ms / std::max(1e-12, schedule.predicted_latency_ms)));
    }
    report.summary.emplace_back("Schedule file", output.empty() ? "(none: --analyze)" : output);
    write_html_report(options.html_path, report, schedule, units, stats);
  };

  int widest = 0, widest_width = 0;
  for (const auto& b : units.blocks()) {
    // "Widest" is by width (the concurrency available), then by size.
    if (b.width > widest_width || (b.width == widest_width && b.size() > widest)) {
      widest = b.size();
      widest_width = b.width;
    }
  }
  int64_t transitions = 0, states = 0, costed = 0;
  for (const auto& b : stats.blocks) {
    transitions += b.transitions;
    states += b.states;
    costed += b.stages_costed;
  }

  if (options.analyze) {
    summary << fmt::format("{:>5}  {:>4}  {:>5}  {:<34} {:>9} {:>11} {:>8} {:>10} {:>10}\n", "block",
                       "n", "width", "units", "states", "transitions", "costed", "search ms",
                       "latency ms");
    for (size_t b = 0; b < units.blocks().size(); ++b) {
      const sched::Block& block = units.blocks()[b];
      const sched::BlockStats* s = b < stats.blocks.size() ? &stats.blocks[b] : nullptr;
      summary << fmt::format("{:>5}  {:>4}  {:>5}  {:<34} {:>9} {:>11} {:>8} {:>10.3f} {:>10.4f}{}\n",
                         b, block.size(), block.width, block_kinds(units, block).substr(0, 34),
                         s ? s->states : 0, s ? s->transitions : 0, s ? s->stages_costed : 0,
                         s ? s->search_ms : 0.0, s ? s->predicted_ms : 0.0,
                         block.split_by_cap ? "  (part of a wider region)" : "");
    }
    summary << fmt::format("total  {:>4}  {:>5}  {:<34} {:>9} {:>11} {:>8} {:>10.3f} {:>10.4f}\n",
                       units.size(), widest_width, "", states, transitions, costed,
                       stats.total_search_ms, schedule.predicted_latency_ms);
    if (!options.report_json.empty()) {
      write_report_json(options.report_json, options, *prepared, schedule, stats, cost, 0.0,
                        import_ms, "");
    }
    write_html(0.0);
    return 0;
  }

  // Sequential under the same cost model, as the reference the summary compares with.
  sched::SearchStats seq_stats;
  const double sequential_ms =
      options.scheduler == "sequential"
          ? schedule.predicted_latency_ms
          : schedule_model(*prepared, "sequential", "", cost, seq_stats).predicted_latency_ms;
  progress.clear();  // measuring the sequential stages may have shown it again

  sched::write_schedule(output, schedule, units);
  if (!options.report_json.empty()) {
    write_report_json(options.report_json, options, *prepared, schedule, stats, cost,
                      sequential_ms, import_ms, output);
  }
  write_html(sequential_ms);

  if (options.quiet) return 0;
  int stages = 0, merges = 0, streams = 1;
  if (schedule.is_staged()) {
    stages = static_cast<int>(schedule.staged().stages.size());
    for (const auto& s : schedule.staged().stages) merges += s.strategy == sched::Strategy::kMerge;
  } else {
    streams = schedule.streamed().num_streams;
  }
  summary << "\n=== ios-optimize summary ===\n";
  summary << fmt::format("Model            {} (batch {}, sha256 {}...)\n", prepared->model.path,
                     prepared->model.batch, prepared->model.sha256.substr(0, 12));
  summary << fmt::format("Units            {} in {} blocks (widest block: {} units, width {})\n",
                     units.size(), units.blocks().size(), widest, widest_width);
  summary << fmt::format("Scheduler        {} ({})\n", entry.name, format_params(schedule.scheduler.params));
  summary << fmt::format("Cost model       {}\n", cost.note);
  summary << fmt::format("Search           {} states, {} transitions, {} stages costed in {:.3f} s "
                     "(import {:.2f} s)\n",
                     states, transitions, costed, stats.total_search_ms / 1000.0, import_ms / 1000.0);
  if (const auto* measured = dynamic_cast<const cuda::MeasuredCostModel*>(cost.model.get())) {
    const cuda::MeasureProgress p = measured->progress();
    out << fmt::format("Measurement      {} stages timed on the GPU in {:.2f} s ({:.3f} ms setup per stage), "
                       "{} answered by the profile database or repeats\n",
                       p.measured, p.elapsed_s, p.measured > 0 ? 1000.0 * p.setup_s / p.measured : 0.0,
                       p.cache_hits);
  }
  if (schedule.is_staged()) {
    summary << fmt::format("Schedule         {} stages, {} operator merges\n", stages, merges);
  } else {
    summary << fmt::format("Schedule         {} units on {} streams\n", units.size(), streams);
  }
  summary << fmt::format("Latency          {:.4f} ms {} (sequential {:.4f} ms, {:.2f}x)\n",
                     schedule.predicted_latency_ms,
                     cost.model->name() == "measured" ? "measured per stage" : "predicted (whole plan simulated)",
                     sequential_ms, sequential_ms / std::max(1e-12, schedule.predicted_latency_ms));
  summary << fmt::format("Written          {}\n", output);
  return 0;
}

}  // namespace ios::optimize
