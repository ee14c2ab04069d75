#include "optimize/optimizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "core/error.h"
#include "core/file_io.h"
#include "core/log.h"
#include "core/output_files.h"
#include "core/progress.h"
#include "cost/calibrate.h"
#include "cost/device_profile.h"
#include "cost/profile_db.h"
#include "cost/simulated.h"
#include "cuda/engine.h"
#include "cuda/measured.h"
#include "exec/plan.h"
#include "exec/schedule_memory.h"
#include "onnx/typed_export.h"
#include "optimize/html_report.h"
#include "optimize/optimize_report.h"
#include "sched/schedule_dot.h"
#include "sched/schedule_io.h"
#include "sched/signature.h"
#include "sched/validate.h"
#include "sim/simulator.h"

namespace ios::optimize {
namespace {

std::string default_output(const std::string& model, const std::string& scheduler) {
  std::filesystem::path p(model);
  p.replace_extension();
  return p.string() + "." + scheduler + ".schedule.json";
}

// Every file ios-optimize reads: no output may replace one of them.
std::vector<InputFile> input_files(const OptimizeOptions& options) {
  std::vector<InputFile> inputs = {{options.model_path, "the input model"},
                                   {options.calibrate_db, "the profile database"},
                                   {options.profile_db, "the profile database"}};
  for (const std::string& db : options.calibrate_dbs)
    inputs.push_back({db, "the profile database"});
  for (const std::string& model : options.calibrate_models)
    inputs.push_back({model, "an input model"});
  std::error_code ec;
  if (std::filesystem::is_regular_file(options.device_profile, ec)) {
    inputs.push_back({options.device_profile, "the device profile"});
  }
  return inputs;
}

// Declares and checks every output before any work (core/output_files.h);
// the caller keeps the result until its outputs are written (it holds their
// locks).
std::unique_ptr<OutputFiles> check_outputs(const std::string& output, const OptimizeOptions& options) {
  auto files = std::make_unique<OutputFiles>(input_files(options), options.force);
  OutputFiles& outputs = *files;
  if (!options.calibrate_db.empty()) {
    if (!output.empty()) outputs.add("-o", output, OutputKind::kDeviceProfile);
    return files;
  }
  if (!output.empty()) outputs.add("-o", output, OutputKind::kSchedule);
  if (!options.report_json.empty()) {
    outputs.add("--report-json", options.report_json, OutputKind::kOptimizeReport);
  }
  if (!options.dot_path.empty()) {
    const bool svg = std::filesystem::path(options.dot_path).extension() == ".svg";
    outputs.add("--dot", options.dot_path, svg ? OutputKind::kSvg : OutputKind::kDot);
  }
  if (!options.html_path.empty()) outputs.add("--html", options.html_path, OutputKind::kHtml);
  if (!options.write_onnx.empty())
    outputs.add("--write-onnx", options.write_onnx, OutputKind::kOnnx);
  return files;
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

std::string block_kinds(const sched::UnitGraph& units, const sched::Block& block) {
  std::map<std::string_view, int> kinds;
  for (sched::UnitId u = block.begin; u < block.end; ++u) ++kinds[sched::unit_kind_name(units.unit(u).kind)];
  std::string out;
  for (const auto& [k, n] : kinds) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", n, k);
  return out;
}

}  // namespace

cost::BudgetOptions parse_profile_budget(const std::string& text) {
  cost::BudgetOptions budget;
  if (text == "all") {
    budget.max_stages = -1;
    return budget;
  }
  const bool seconds = !text.empty() && text.back() == 's';
  const std::string number = seconds ? text.substr(0, text.size() - 1) : text;
  double value = -1.0;
  size_t used = 0;
  try {
    value = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const bool whole = seconds || value == std::floor(value);
  const bool spaced = !number.empty() && std::isspace(static_cast<unsigned char>(number.front()));
  if (number.empty() || spaced || used != number.size() || !std::isfinite(value) || value <= 0.0 ||
      !whole || value > 1e9) {
    user_error("--profile-budget {}: expected a number of stages (e.g. 20000), seconds of measuring "
               "(e.g. 300s) or all",
               cost::quoted_excerpt(text));
  }
  if (seconds) {
    budget.max_stages = -1;
    budget.max_seconds = value;
  } else {
    budget.max_stages = static_cast<int64_t>(value);
  }
  return budget;
}

std::string profile_for_device(const std::string& device_name, const std::string& fallback) {
  std::string lower = device_name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const std::string& name : cost::shipped_device_profiles()) {
    if (lower.find(name) != std::string::npos) return name;
  }
  return fallback;
}

CostChoice make_cost_model(const sched::UnitGraph& units, const OptimizeOptions& options,
                           ir::Precision precision, ProgressLine* progress) {
  CostChoice choice;
  const ir::MathMode math = precision.math();
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
    measured.math = math;
    measured.launch = options.launch;  // stages timed as the schedule will run
    measured.conv_kernels = options.conv_kernels;
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
    if (options.launch != "graph") choice.note += fmt::format(", {}", sched::launch_words(options.launch));
    const cost::BudgetOptions budget = parse_profile_budget(options.profile_budget);
    if (scheduler_searches(options.scheduler) && (budget.max_stages >= 0 || budget.max_seconds > 0.0)) {
      // The simulator ranks, the GPU measures the contenders (cost/budgeted.h).
      const std::string profile_name = options.device_profile_given
                                           ? options.device_profile
                                           : profile_for_device(device->name, options.device_profile);
      cost::SimulatedOptions simulated;
      simulated.math = math;
      cost::set_launch(simulated, options.launch);
      choice.ranking = std::make_unique<cost::SimulatedCostModel>(
          units, cost::load_device_profile(profile_name), simulated);
      choice.measured = std::move(choice.model);
      choice.model = std::make_unique<cost::BudgetedCostModel>(units, *choice.measured, *choice.ranking, budget);
      choice.note += fmt::format(", the stages the '{}' simulator ranks as contenders (--profile-budget {})",
                                 choice.ranking->profile().name, options.profile_budget);
    }
    return choice;
  }
  cost::DeviceProfile profile = cost::load_device_profile(options.device_profile);
  choice.device = {profile.name, "", "", ""};
  choice.note = options.cost == "auto"
                    ? fmt::format("predicted: no CUDA device found, GPU simulator with the '{}' device profile",
                                  profile.name)
                    : fmt::format("predicted: GPU simulator with the '{}' device profile", profile.name);
  cost::SimulatedOptions simulated;
  simulated.math = math;
  cost::set_launch(simulated, options.launch);
  if (options.launch != "graph") choice.note += fmt::format(", {}", sched::launch_words(options.launch));
  choice.model = std::make_unique<cost::SimulatedCostModel>(units, std::move(profile), simulated);
  return choice;
}

sched::Schedule schedule_model(const model::PreparedModel& prepared, const std::string& scheduler,
                               const std::string& params, const CostChoice& cost,
                               sched::SearchStats& stats, sched::BlockProgress progress,
                               double time_limit_s, int threads, SearchBounds bounds) {
  const sched::SchedulerEntry& entry = sched::find_scheduler(scheduler);
  const sched::Params parsed = sched::Params::parse(entry.name, entry.params, params);
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<sched::Scheduler> instance = entry.make(parsed);
  instance->set_block_progress(std::move(progress));
  instance->set_time_limit(time_limit_s);
  instance->set_memory_bound(bounds.memory_bound);
  instance->set_max_streams(bounds.max_streams);
  instance->set_prior(bounds.prior);
  const auto cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  instance->set_threads(threads > 0 ? threads : cores);
  sched::Schedule schedule = instance->run(*prepared.units, *cost.model, stats);
  stats.total_search_ms = ms_since(start);
  schedule.model = prepared.info();
  schedule.precision = prepared.precision;
  schedule.device = cost.device;
  schedule.scheduler.name = entry.name;
  schedule.scheduler.params = parsed.to_strings();
  schedule.scheduler.cost_model = cost.model->name();
  // The launch mode the costs assumed: the simulator's, or the one the
  // measured model timed stages in (the options' --launch either way).
  const auto* simulated = dynamic_cast<const cost::SimulatedCostModel*>(cost.model.get());
  const cuda::MeasuredCostModel* measured = dynamic_cast<const cuda::MeasuredCostModel*>(
      cost.measured != nullptr ? cost.measured.get() : cost.model.get());
  schedule.scheduler.launch = simulated != nullptr ? launch_name(simulated->options())
                              : measured != nullptr ? measured->launch()
                                                    : "graph";
  try {
    sched::validate_schedule(schedule, *prepared.units, "the " + entry.name + " schedule");
  } catch (const UserError& e) {
    // The schedule came from ios, not from the user: a scheduler bug.
    internal_error("scheduler '{}' produced an invalid schedule: {}", entry.name, e.what());
  }
  if (simulated != nullptr) predict_by_simulation(*simulated, schedule, stats);
  return schedule;
}

void predict_by_simulation(const cost::SimulatedCostModel& model, sched::Schedule& schedule,
                           sched::SearchStats& stats) {
  const sched::UnitGraph& units = model.graph();
  const exec::ExecPlan plan = exec::lower(units, schedule, model.options().join);
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

bool scheduler_searches(const std::string& name) { return sched::find_scheduler(name).searches; }

void reject_options_without_effect(const OptimizeOptions& o,
                                   const std::function<bool(const std::string& option)>& given) {
  const auto reject = [&given](const std::string& context, const std::vector<std::string>& options,
                               std::string_view why) {
    for (const std::string& option : options) {
      if (given(option)) user_error("{} has no effect {}: {}", option, context, why);
    }
  };
  if (o.quiet) {
    reject("with --quiet", {"--verbose"}, "--quiet prints errors only; drop one of them");
  }
  if (o.analyze) {
    reject("with --analyze", {"--output"}, "--analyze writes no schedule; drop one of them");
  }
  const bool searches = scheduler_searches(o.scheduler);
  if (!searches) {
    const std::string context = "with --scheduler " + o.scheduler;
    reject(context, {"--time-limit"},
           "only the searching schedulers (ios, ios-parallel, ios-merge, dos) take time to bound; "
           "drop it");
    reject(context, {"--profile-budget"},
           "only the searching schedulers (ios, ios-parallel, ios-merge, dos) measure a part of "
           "what they consider; drop it");
    reject(context, {"--threads"},
           "only the searching schedulers (ios, ios-parallel, ios-merge, dos) search blocks in "
           "parallel; drop it");
  }
  if (o.calibrate_db.empty()) {
    reject("without --calibrate", {"--calibrate-db", "--calibrate-model"},
           "it adds to a --calibrate fit; give --calibrate DB");
  } else {
    reject("with --calibrate", {"--time-limit", "--profile-budget", "--threads"},
           "--calibrate fits a device profile and searches nothing; drop one of them");
  }
  if (o.cost == "simulated") {
    reject("with --cost simulated", {"--profile-db"},
           "the profile database caches measured latencies; drop one of them");
    reject("with --cost simulated", {"--conv-kernels"},
           "it chooses the kernels stages are measured with; drop one of them");
    reject("with --cost simulated", {"--profile-budget"},
           "the budget bounds what is measured on the GPU; drop one of them");
  }
  // A measured search ranks its candidates with the simulator, unless it
  // measures everything.
  if (o.cost == "measured" && (!searches || o.profile_budget == "all")) {
    reject(searches ? "with --cost measured --profile-budget all"
                    : "with --cost measured and --scheduler " + o.scheduler,
           {"--device-profile"},
           "every stage is measured, none predicted by a device profile; drop one of them");
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

// The search's progress line: blocks searched / total, with an ETA that
// weighs each block by the IOS paper's bound on its transitions (blocks
// differ in cost by orders of magnitude, so a block count alone misleads).
// The ETA extrapolates the blocks' search bounds, and never passes the time
// limit (0: none), where the search stops.
sched::BlockProgress search_progress(ProgressLine& line, const sched::UnitGraph& units,
                                     const std::string& scheduler, double time_limit_s) {
  if (!line.enabled()) return {};
  std::vector<double> weight;
  for (const sched::Block& b : units.blocks()) {
    weight.push_back(std::pow(10.0, std::min(15.0, sched::log10_search_bound(b.size(), b.width))));
  }
  const auto start = std::chrono::steady_clock::now();
  return [&line, weight, start, scheduler, time_limit_s](int done, int total) {
    double done_weight = 0.0, all_weight = 0.0;
    for (size_t b = 0; b < weight.size(); ++b) {
      all_weight += weight[b];
      if (static_cast<int>(b) < done) done_weight += weight[b];
    }
    const double elapsed_s = ms_since(start) / 1000.0;
    double eta_s = done_weight > 0 ? elapsed_s * (all_weight - done_weight) / done_weight : 0.0;
    if (time_limit_s > 0.0) eta_s = std::min(eta_s, std::max(0.0, time_limit_s - elapsed_s));
    line.update(fmt::format("[{}] {}/{} blocks searched, {:.1f} s, ETA {:.0f} s", scheduler, done, total,
                            elapsed_s, eta_s),
                done == total);
  };
}

// -v: the values in effect once the model is imported and defaults applied.
void log_effective_options(const OptimizeOptions& options, const model::PreparedModel& prepared,
                           const CostChoice& cost, const std::string& output) {
  logger("cli")->debug(
      "effective options: model={} batch={} rewrite-batch={} output={} scheduler={} params='{}' "
      "cost={} ({}) "
      "device-profile={} profile-budget={} precision={} max-block-units={} max-block-bound=1e{} "
      "time-limit={} s threads={} form={} launch={} analyze={} "
      "report-json={} dot={} html={}",
      options.model_path, prepared.model.batch, options.rewrite_batch,
      output.empty() ? "(none: --analyze)" : output, options.scheduler, options.scheduler_params,
      cost.model->name(), cost.note, options.device_profile, options.profile_budget,
      prepared.precision.name(), options.max_block_units, options.max_block_log10_bound,
      options.time_limit_s, options.threads, options.form, options.launch, options.analyze,
      options.report_json.empty() ? "(none)" : options.report_json,
      options.dot_path.empty() ? "(none)" : options.dot_path,
      options.html_path.empty() ? "(none)" : options.html_path);
  logger("cli")->debug("effective options: memory-limit={} max-streams={}",
                       options.memory_limit.empty() ? "(none)" : options.memory_limit,
                       options.max_streams > 0 ? std::to_string(options.max_streams) : "(none)");
}

}  // namespace

namespace {

// ios-optimize --calibrate DB: the device profile whose simulation best
// reproduces the model's stages measured in DB; with --calibrate-model and
// --calibrate-db, one fit over the stages of every model found in every
// database.
// Its output was checked with the others (check_outputs: never the model or
// the database).
int run_calibration(const OptimizeOptions& options, std::ostream& out) {
  if (options.output_path.empty()) {
    user_error("--calibrate writes a device profile: give its path with -o FILE.json");
  }
  std::vector<std::string> db_paths = {options.calibrate_db};
  db_paths.insert(db_paths.end(), options.calibrate_dbs.begin(), options.calibrate_dbs.end());
  std::vector<std::string> model_paths = {options.model_path};
  model_paths.insert(model_paths.end(), options.calibrate_models.begin(),
                     options.calibrate_models.end());
  for (const std::string& path : db_paths) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
      user_error(
          "--calibrate {}: no such profile database (fill one with --cost measured --profile-db {} "
          "on a GPU)",
          path, path);
    }
  }
  sched::FormationOptions formation;
  formation.max_block_units = options.max_block_units;
  formation.max_block_log10_bound = options.max_block_log10_bound;
  const cost::DeviceProfile start = cost::load_device_profile(options.device_profile);
  // Read-only: calibration must leave its inputs exactly as they were.
  std::vector<std::unique_ptr<cost::ProfileDb>> dbs;
  for (const std::string& path : db_paths)
    dbs.push_back(std::make_unique<cost::ProfileDb>(path, cost::ProfileDb::Access::kReadOnly));

  struct Model {
    std::unique_ptr<model::PreparedModel> prepared;
    std::vector<std::string> devices;  // of the samples found, one per database that had some
  };
  std::vector<Model> models;
  std::vector<cost::ModelSamples> samples;
  for (const std::string& path : model_paths) {
    Model m;
    m.prepared = model::prepare_model(
        path, model::shape_options(options.batch, options.rewrite_batch, options.input_shapes),
        formation, {options.precision, options.half_io, options.keep_fp32});
    const sched::UnitGraph& units = *m.prepared->units;
    cost::ModelSamples found_all;
    found_all.graph = &units;
    found_all.options.math = m.prepared->precision.value.math();
    const std::vector<sched::Stage> candidates =
        cost::candidate_stages(units, start, found_all.options);
    // A stage in several databases counts once: the first database's.
    std::set<std::string> seen;
    for (const auto& db : dbs) {
      cost::DbSamples found = cost::samples_from_db(
          units, *db, candidates, found_all.options.math, m.prepared->model.batch);
      size_t added = 0;
      for (cost::StageSample& s : found.samples) {
        if (!seen.insert(sched::stage_signature(units, s.stage)).second) continue;
        found_all.samples.push_back(std::move(s));
        ++added;
      }
      if (added > 0 &&
          std::find(m.devices.begin(), m.devices.end(), found.device) == m.devices.end())
        m.devices.push_back(found.device);
    }
    samples.push_back(std::move(found_all));
    models.push_back(std::move(m));
  }
  size_t found_total = 0;
  for (const cost::ModelSamples& s : samples) found_total += s.samples.size();
  if (found_total == 0) {
    const model::PreparedModel& first = *models.front().prepared;
    if (models.size() == 1 && dbs.size() == 1) {
      user_error(
          "--calibrate {}: none of {}'s stages at batch {}, precision {} is in the database; "
          "measure "
          "them first (ios-optimize {} --batch {} --cost measured --profile-db {})",
          options.calibrate_db, first.model.path, first.model.batch, first.precision.name(),
          first.model.path, first.model.batch, options.calibrate_db);
    }
    std::vector<std::string> names;
    for (const Model& m : models) names.push_back(m.prepared->model.path);
    user_error(
        "--calibrate {}: none of the stages of {} at batch {}, precision {} is in the {} "
        "database(s); "
        "measure them first (ios-optimize MODEL --batch {} --cost measured --profile-db DB)",
        fmt::join(db_paths, ", "), fmt::join(names, ", "), first.model.batch, first.precision.name(),
        dbs.size(), first.model.batch);
  }
  cost::CalibrationResult fit = cost::calibrate_profile(samples, start);

  // The devices measured: one, normally; several are pooled, and said so.
  std::vector<std::string> devices;
  std::vector<std::string> fitted_models;  // file names of the models with samples
  for (size_t i = 0; i < models.size(); ++i) {
    for (const std::string& d : models[i].devices)
      if (std::find(devices.begin(), devices.end(), d) == devices.end()) devices.push_back(d);
    if (fit.per_model[i].samples > 0) {
      fitted_models.push_back(cost::quoted_excerpt(
          std::filesystem::path(models[i].prepared->model.path).filename().string()));
    }
  }
  if (devices.size() > 1) {
    logger("cost")->warn("--calibrate: the stages were measured on {} devices, fitted as one: {}",
                         devices.size(), fmt::join(devices, "; "));
  }
  const std::string_view suffix = "-calibrated";
  std::string base = start.name.substr(0, cost::kMaxProfileNameBytes - suffix.size());
  while (!base.empty() && (static_cast<unsigned char>(start.name[base.size()]) & 0xc0) == 0x80)
    base.pop_back();  // a cut inside a UTF-8 character
  fit.profile.name = base + std::string(suffix);
  std::string description = fmt::format(
      "{} fitted to {} stages of {} measured on {} (mean error {:.1f}% -> {:.1f}%)",
      cost::quoted_excerpt(start.name), fit.samples, fmt::join(fitted_models, ", "),
      fmt::join(devices, "; "), 100.0 * fit.mean_error_before, 100.0 * fit.mean_error_after);
  if (description.size() > cost::kMaxProfileDescriptionBytes) {
    description.resize(cost::kMaxProfileDescriptionBytes - 3);
    while (!description.empty() && (static_cast<unsigned char>(description.back()) & 0xc0) == 0x80)
      description.pop_back();  // the rest of a cut UTF-8 character
    if (!description.empty() && (static_cast<unsigned char>(description.back()) & 0x80) != 0)
      description.pop_back();  // its lead byte
    description += "...";
  }
  fit.profile.description = description;
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
  for (size_t i = 0; i < models.size(); ++i) {
    const model::PreparedModel& m = *models[i].prepared;
    if (fit.per_model[i].samples == 0) {
      out << fmt::format(
          "Measured         no stages of {} (batch {}, {}) in the database{}: not fitted\n",
          m.model.path, m.model.batch, m.precision.name(), dbs.size() > 1 ? "s" : "");
      continue;
    }
    out << fmt::format("Measured         {} stages of {} (batch {}, {}) on {}\n",
                       fit.per_model[i].samples, m.model.path, m.model.batch, m.precision.name(),
                       fmt::join(models[i].devices, "; "));
  }
  out << fmt::format("Start profile    {}\n", start.name);
  const nlohmann::json before = nlohmann::json::parse(cost::device_profile_json(start));
  const nlohmann::json after = nlohmann::json::parse(profile_text);
  for (const std::string& knob : fit.fitted) {
    out << fmt::format("  {:<26} {:>10.4g} -> {:.4g}\n", knob, before.at(knob).get<double>(),
                       after.at(knob).get<double>());
  }
  out << fmt::format("Error            mean |predicted/measured - 1| {:.2f}% -> {:.2f}% (max {:.2f}%), "
                     "{} evaluations\n",
                     100.0 * fit.mean_error_before, 100.0 * fit.mean_error_after,
                     100.0 * fit.max_error_after, fit.evaluations);
  if (models.size() > 1) {
    for (size_t i = 0; i < models.size(); ++i) {
      const cost::FitError& e = fit.per_model[i];
      if (e.samples == 0) continue;
      out << fmt::format("  {:<26} {:.2f}% -> {:.2f}% (max {:.2f}%), {} stages\n",
                         std::filesystem::path(models[i].prepared->model.path).filename().string(),
                         100.0 * e.mean_error_before, 100.0 * e.mean_error_after,
                         100.0 * e.max_error_after, e.samples);
    }
  }
  out << fmt::format("Written          {} (use it with --device-profile {})\n", options.output_path,
                     options.output_path);
  return 0;
}

}  // namespace

namespace {

// The state of one ios-optimize run, filled phase by phase (run_optimize()
// lists the phases). All text goes to `summary`: standard output, or
// standard error when an output file is written to standard output.
struct OptimizeRun {
  OptimizeRun(const OptimizeOptions& o, std::ostream& out) : options(o), summary(out) {}
  const OptimizeOptions& options;
  std::ostream& summary;
  const sched::SchedulerEntry* entry = nullptr;
  std::string output;  // the schedule file; empty with --analyze
  std::unique_ptr<model::PreparedModel> prepared;
  CostChoice cost;
  double time_limit_s = 0.0;  // the search's, once the cost model is known
  int64_t memory_limit = 0;   // --memory-limit in bytes; 0: none
  std::string params;         // the scheduler's parameters, --max-streams applied
  sched::SearchStats stats;
  sched::Schedule schedule;
  OptimizeReport report;
  std::unique_ptr<ProgressLine> progress;
  std::unique_ptr<OutputFiles> outputs;  // checked, and locked until the run ends
  bool writes_schedule = true;  // false for optimize_model(): no schedule file is declared
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

  const sched::UnitGraph& units() const { return *prepared->units; }
};

// Phase 1: the scheduler, its parameters and every output are checked
// before the (slow) import, so a refused request costs nothing.
void check_request(OptimizeRun& r) {
  const OptimizeOptions& o = r.options;
  r.entry = &sched::find_scheduler(o.scheduler);
  sched::Params::parse(r.entry->name, r.entry->params, o.scheduler_params);
  r.output = o.analyze || !r.writes_schedule ? std::string()
             : o.output_path.empty()            ? default_output(o.model_path, r.entry->name)
                                                : o.output_path;
  r.outputs = check_outputs(r.output, o);
  parse_profile_budget(o.profile_budget);  // refused before the import, even with no GPU to use it
  // Only the simulator predicts whole plans: refused here, before the
  // import, and with the usage exit even where no GPU could measure.
  if (o.form != "staged" && o.cost == "measured") {
    user_error("--form {} needs whole-plan predictions, which only the simulator makes; with "
               "--cost measured write the staged schedule and compare the forms on the GPU with ios-run",
               o.form);
  }
  if (!o.memory_limit.empty() || o.max_streams != 0) {
    if (o.analyze) user_error("--memory-limit and --max-streams shape the schedule; --analyze writes none: drop one of them");
    if (!o.calibrate_db.empty()) user_error("--calibrate fits a device profile; --memory-limit and --max-streams apply to schedules");
  }
  if (!o.memory_limit.empty()) r.memory_limit = parse_memory_limit(o.memory_limit);
  if (o.max_streams < 0) user_error("--max-streams {}: give a number of streams of at least 1", o.max_streams);
  r.params = apply_max_streams(r.entry->name, o.scheduler_params, o.max_streams);
  if (o.form != "staged" && r.entry->streamed) {
    user_error("--form {}: {} writes a streamed schedule already (its units wait only for their "
               "inputs); --form applies to staged schedulers such as ios, greedy and sequential",
               o.form, r.entry->name);
  }
  r.progress = std::make_unique<ProgressLine>(progress_wanted(o.quiet));
}

// A limit that not even the model's weights, inputs and outputs fit in is
// refused before any search.
void check_memory_floor(const OptimizeRun& r) {
  const ir::Graph& g = *r.units().ir();
  int64_t floor = 0;
  for (const ir::Tensor& t : g.tensors()) {
    if (t.is_constant() && t.data) floor += ir::tensor_bytes(t);
  }
  for (ir::TensorId t : g.inputs()) floor += ir::tensor_bytes(g.tensor(t));
  for (ir::TensorId t : g.outputs()) {
    if (!g.tensor(t).is_constant()) floor += ir::tensor_bytes(g.tensor(t));
  }
  if (r.memory_limit < floor) {
    user_error("--memory-limit {} ({} bytes) is below what the model's weights, inputs and outputs alone take, {} "
               "({} bytes); raise the limit",
               exec::format_bytes(r.memory_limit), r.memory_limit, exec::format_bytes(floor), floor);
  }
}

exec::StageJoin join_for(const OptimizeOptions& o) {
  return o.launch == "synced" ? exec::StageJoin::kDeviceSync : exec::StageJoin::kEvents;
}

// The process's resident set in bytes (/proc/self/statm's second field, in
// pages), or -1 where there is none.
int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return -1;
  return resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

// Phase 2: import and unit formation; an SVG too large to draw is refused
// here, before the search.
void import_model(OptimizeRun& r) {
  const OptimizeOptions& o = r.options;
  sched::FormationOptions formation;
  formation.max_block_units = o.max_block_units;
  formation.max_block_log10_bound = o.max_block_log10_bound;
  r.progress->update(fmt::format("[import] {}", o.model_path), true);
  r.prepared = model::prepare_model(o.model_path,
                                    model::shape_options(o.batch, o.rewrite_batch, o.input_shapes),
                                    formation, {o.precision, o.half_io, o.keep_fp32});
  r.report.import_ms = ms_since(r.start);
  // What the search's own memory is measured from (bench/search_time.py:
  // the process's peak less this).
  logger("cli")->debug("memory: resident {} bytes after import", resident_bytes());
  if (!o.write_onnx.empty() && !r.prepared->precision.converted) {
    user_error(
        "--write-onnx writes the graph ios converts to half precision, and {} is not converted; "
        "add "
        "--precision {}{}",
        o.model_path, ir::precision_names_text(true),
        r.prepared->precision.is_half() ? " to a float32 model (this one is already typed)" : "");
  }
  r.progress->clear();
  if (r.memory_limit > 0) check_memory_floor(r);
  if (!o.dot_path.empty()) sched::check_picture_size("--dot", o.dot_path, r.units().size());
}

// Phase 3: the cost model (measured on a GPU, or the simulator).
void choose_cost_model(OptimizeRun& r) {
  r.cost = make_cost_model(r.units(), r.options, r.prepared->precision.value, r.progress.get());
  const bool simulated = dynamic_cast<const cost::SimulatedCostModel*>(r.cost.model.get()) != nullptr;
  if (r.options.form != "staged" && !simulated) {
    user_error("--form {} needs whole-plan predictions, which only the simulator makes; with "
               "--cost {} write the staged schedule and compare the forms on the GPU with ios-run",
               r.options.form, r.cost.model->name());
  }
  // Measuring takes the time a search with measured costs takes; the
  // profile budget bounds it, so --time-limit's default does not apply.
  const bool measured = r.cost.measured != nullptr ||
                        dynamic_cast<const cuda::MeasuredCostModel*>(r.cost.model.get()) != nullptr;
  r.time_limit_s = !r.entry->searches                       ? 0.0
                   : measured && !r.options.time_limit_given ? 0.0
                                                             : r.options.time_limit_s;
  if (r.options.verbose) log_effective_options(r.options, *r.prepared, r.cost, r.output);
  if (!r.options.quiet) logger("cli")->info("{}", r.cost.note);
}

// Phase 4: the search.
void search(OptimizeRun& r) {
  if (r.memory_limit > 0) {
    LimitedSearch found = search_within_memory(
        *r.prepared, r.options.scheduler, r.params, r.cost, r.memory_limit, r.options.max_streams,
        join_for(r.options), r.time_limit_s,
        r.options.threads, search_progress(*r.progress, r.units(), r.entry->name, r.time_limit_s));
    r.schedule = std::move(found.schedule);
    r.stats = std::move(found.stats);
    r.report.memory_search_bound = found.bound;
    r.report.memory_note = std::move(found.note);
    r.progress->clear();
    return;
  }
  r.schedule = schedule_model(*r.prepared, r.options.scheduler, r.params, r.cost, r.stats,
                              search_progress(*r.progress, r.units(), r.entry->name, r.time_limit_s),
                              r.time_limit_s, r.options.threads, SearchBounds{0, r.options.max_streams});
  r.progress->clear();
}

// Phase 4c: the schedule's peak memory, into the schedule and the report.
void account_memory(OptimizeRun& r) {
  if (r.options.analyze) return;
  sched::MemoryInfo memory = exec::schedule_memory(r.units(), r.schedule, join_for(r.options));
  memory.limit_bytes = r.memory_limit;
  IOS_ASSERT(r.memory_limit == 0 || memory.peak_bytes() <= r.memory_limit,
             "the schedule takes {} bytes, over the --memory-limit of {}", memory.peak_bytes(), r.memory_limit);
  r.schedule.memory = memory;
  r.report.memory = memory;
  r.report.memory_limit = r.memory_limit;
  r.report.max_streams = r.options.max_streams;
}

// Phase 4b: the form (--form). The schedule found runs with its stage
// barriers; "streamed" drops them for the true dependencies, "best" keeps
// whichever of the two the simulator predicts faster (the staged form on a
// tie, so that it changes nothing where relaxing gains nothing).
void choose_form(OptimizeRun& r) {
  if (!r.schedule.is_staged()) return;
  r.report.staged_form_ms = r.schedule.predicted_latency_ms;
  if (r.options.form == "staged") return;
  const auto& simulated = dynamic_cast<const cost::SimulatedCostModel&>(*r.cost.model);
  sched::Schedule relaxed = r.schedule;
  std::get<sched::StagedSchedule>(relaxed.body).barriers = sched::Barriers::kDependencies;
  predict_by_simulation(simulated, relaxed, r.stats);
  r.report.streamed_form_ms = relaxed.predicted_latency_ms;
  if (r.options.form == "streamed" || relaxed.predicted_latency_ms < r.schedule.predicted_latency_ms) {
    // Without barriers more branches overlap: under a memory limit the
    // streamed form must fit too.
    if (r.memory_limit > 0) {
      const int64_t peak = exec::schedule_memory(r.units(), relaxed, join_for(r.options)).peak_bytes();
      if (peak > r.memory_limit) {
        logger("cli")->warn("kept the staged form: the streamed form takes {}, over --memory-limit {}",
                            exec::format_bytes(peak), exec::format_bytes(r.memory_limit));
        r.report.memory_note += "; kept the staged form (the streamed form is over the limit)";
        return;
      }
    }
    r.schedule = std::move(relaxed);
  }
}

BudgetReport budget_report(const cost::BudgetedCostModel& model, const std::string& limit,
                           const sched::Schedule& schedule) {
  const cost::BudgetCounts& c = model.counts();
  BudgetReport b{limit, c.measured, c.reused, c.predicted, c.exhausted, 0, 0};
  if (schedule.is_staged()) {
    for (const sched::Stage& stage : schedule.staged().stages) {
      ++b.schedule_stages;
      if (!model.is_measured(stage)) ++b.schedule_predicted;
    }
  }
  if (b.schedule_predicted > 0) {
    logger("cli")->warn("the profile budget ({}) ran out: {} of the schedule's {} stages have predicted "
                        "latencies, not measured ones; raise --profile-budget to measure them",
                        limit, b.schedule_predicted, b.schedule_stages);
  }
  return b;
}

// Phase 5: the report object, from the model, the search and (unless
// --analyze) the sequential schedule under the same cost model, the
// reference the summary compares with.
void fill_report(OptimizeRun& r) {
  const sched::UnitGraph& units = r.units();
  OptimizeReport& report = r.report;
  report.model_path = r.prepared->model.path;
  report.batch = r.prepared->model.batch;
  report.sha256 = r.prepared->model.sha256;
  report.units = units.size();
  for (size_t b = 0; b < units.blocks().size(); ++b) {
    const sched::Block& block = units.blocks()[b];
    BlockReport row{static_cast<int>(b), units.unit(block.begin).id, block.size(), block.width,
                    block.split_by_cap, block_kinds(units, block), std::nullopt};
    if (b < r.stats.blocks.size()) row.search = r.stats.blocks[b];
    report.blocks.push_back(std::move(row));
    // "Widest" is by width (the concurrency available), then by size.
    if (block.width > report.widest_width ||
        (block.width == report.widest_width && block.size() > report.widest_units)) {
      report.widest_units = block.size();
      report.widest_width = block.width;
    }
  }
  for (const auto& b : r.stats.blocks) {
    report.states += b.states;
    report.transitions += b.transitions;
    report.stages_costed += b.stages_costed;
  }
  report.scheduler = r.entry->name;
  report.params = r.schedule.scheduler.params;
  report.cost_model = r.cost.model->name();
  report.cost_note = r.cost.note;
  report.device = r.schedule.device.name;
  report.search_ms = r.stats.total_search_ms;
  report.time_limit_s = r.time_limit_s;
  report.analyze_only = r.options.analyze;
  report.predicted_ms = r.schedule.predicted_latency_ms;
  report.schedule_file = r.output;
  report.staged = r.schedule.is_staged();
  report.form_option = r.options.form;
  report.launch = r.schedule.scheduler.launch;
  if (report.staged) {
    report.dependency_barriers = r.schedule.staged().barriers == sched::Barriers::kDependencies;
    report.stages = static_cast<int>(r.schedule.staged().stages.size());
    for (const auto& s : r.schedule.staged().stages) report.merges += s.strategy == sched::Strategy::kMerge;
  } else {
    report.streams = r.schedule.streamed().num_streams;
  }
  if (r.options.analyze) return;
  sched::SearchStats sequential_stats;
  report.sequential_ms =
      r.options.scheduler == "sequential"
          ? r.schedule.predicted_latency_ms
          : schedule_model(*r.prepared, "sequential", "", r.cost, sequential_stats).predicted_latency_ms;
  r.progress->clear();  // measuring the sequential stages may have shown it again
  const sched::CostModel* device = r.cost.measured ? r.cost.measured.get() : r.cost.model.get();
  if (const auto* measured = dynamic_cast<const cuda::MeasuredCostModel*>(device)) {
    const cuda::MeasureProgress p = measured->progress();
    report.measurement = MeasurementReport{p.measured, p.elapsed_s, p.setup_s, p.cache_hits, std::nullopt};
  }
  if (const auto* budgeted = dynamic_cast<const cost::BudgetedCostModel*>(r.cost.model.get())) {
    if (!report.measurement) report.measurement.emplace();
    report.measurement->budget = budget_report(*budgeted, r.options.profile_budget, r.schedule);
  }
}

// Phase 6: the files, the schedule first: drawing can fail (Graphviz's
// limits) and must not cost the schedule.
void write_outputs(OptimizeRun& r) {
  const OptimizeOptions& o = r.options;
  if (!r.output.empty()) sched::write_schedule(r.output, r.schedule, r.units());
  if (!o.write_onnx.empty())
    onnx::write_typed_model(o.model_path, r.prepared->model.graph, o.write_onnx);
  if (!o.report_json.empty()) {
    create_parent_folder(o.report_json);
    write_file_atomically(o.report_json, render_json(r.report));
  }
  try {
    if (!o.dot_path.empty()) {
      sched::write_schedule_picture(o.dot_path, r.schedule, r.units(),
                                    r.output.empty() ? o.model_path : r.output);
    }
    if (!o.html_path.empty()) write_html_report(o.html_path, r.report, r.schedule, r.units());
  } catch (const UserError& e) {
    if (r.output.empty() || is_stdout_path(r.output)) throw;
    throw UserError(fmt::format("{} (the schedule was written to {})", e.what(), r.output));
  }
}

}  // namespace

namespace {

// The phases from the check of the request to the report, in order: one
// list for ios-optimize (run_optimize, which then writes and prints) and
// the engine API (optimize_model), so that a phase added to one is in both.
void find_schedule(OptimizeRun& r) {
  check_request(r);
  import_model(r);
  choose_cost_model(r);
  search(r);
  choose_form(r);
  account_memory(r);
  fill_report(r);
}

}  // namespace

Optimization optimize_model(const OptimizeOptions& options) {
  std::ostringstream unused;  // the caller renders the report
  OptimizeRun r(options, unused);
  r.writes_schedule = false;
  find_schedule(r);
  return {std::move(r.prepared), std::move(r.schedule), std::move(r.report)};
}

int run_optimize(const OptimizeOptions& options, std::ostream& out) {
  if (!options.calibrate_db.empty()) {
    const auto outputs = check_outputs(options.output_path, options);
    return run_calibration(options, out);
  }
  // A file written to standard output must not be mixed with the text.
  const bool file_on_stdout = is_stdout_path(options.output_path) || is_stdout_path(options.report_json) ||
                              is_stdout_path(options.dot_path) || is_stdout_path(options.html_path);
  OptimizeRun r(options, file_on_stdout ? std::cerr : out);
  find_schedule(r);
  if (options.analyze) r.summary << render_analysis(r.report);
  write_outputs(r);
  if (!options.quiet && !options.analyze) r.summary << render_summary(r.report);
  return 0;
}

}  // namespace ios::optimize
