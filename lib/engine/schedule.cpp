// ios::Schedule and Schedule::optimize() (include/ios/engine.h): the schedule
// document, and ios-optimize's search (lib/optimize) as a call.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"
#include "core/json_limits.h"
#include "core/output_files.h"
#include "engine/schedule_impl.h"
#include "ios/engine.h"
#include "ir/precision.h"
#include "optimize/optimize_report.h"
#include "optimize/optimizer.h"
#include "sched/schedule.h"
#include "sched/schedule_io.h"

namespace ios {
namespace {

// A range the command line's validator enforces; the same bounds here.
template <typename T>
void check_range(const char* option, T value, T low, T high) {
  if (!(value >= low && value <= high)) {
    user_error("{} {}: expected a value from {} to {}", option, value, low, high);
  }
}

// The public options as the ios-optimize pipeline's: one line per option.
optimize::OptimizeOptions pipeline_options(const std::string& model_path,
                                           const OptimizeOptions& o) {
  optimize::OptimizeOptions p;
  p.model_path = model_path;
  p.batch = o.batch;
  p.rewrite_batch = o.rewrite_batch;
  p.input_shapes = o.input_shapes;
  p.scheduler = o.scheduler;
  p.scheduler_params = o.scheduler_params;
  p.cost = o.cost;
  if (o.device_profile) p.device_profile = *o.device_profile;
  p.device_profile_given = o.device_profile.has_value();
  p.profile_db = o.profile_db;
  if (!o.conv_kernels.empty())
    p.conv_kernels = exec::parse_conv_kernels(o.conv_kernels, "conv_kernels");
  if (!o.profile_budget.empty()) p.profile_budget = o.profile_budget;
  // The API takes the precision by name, as the command line does; parsed
  // here, once.
  if (!o.precision.empty()) p.precision = ir::parse_precision(o.precision, "precision");
  p.keep_fp32 = o.keep_fp32;
  p.half_io = o.half_io;
  p.max_block_units = o.max_block_units;
  p.max_block_log10_bound = o.max_block_bound;
  if (o.time_limit_s) p.time_limit_s = *o.time_limit_s;
  p.time_limit_given = o.time_limit_s.has_value();
  p.threads = o.threads;
  p.form = o.form;
  p.launch = o.launch;
  p.memory_limit = o.memory_limit;
  p.max_streams = o.max_streams;
  p.quiet = true;  // a library shows no progress line; the caller renders the report
  return p;
}

// What the command line's validators check before the pipeline sees the
// options (apps/ios-optimize/main.cpp).
void check_options(const optimize::OptimizeOptions& p) {
  if (p.batch != 0) check_range<int64_t>("batch", p.batch, 1, int64_t{1} << 20);
  auto member = [](const char* option, const std::string& value,
                   const std::vector<std::string>& allowed) {
    if (std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
      user_error("{} {}: expected one of {}", option, quote_excerpt(value),
                 fmt::join(allowed, ", "));
    }
  };
  member("cost", p.cost, {"auto", "simulated", "measured"});
  member("form", p.form, {"staged", "streamed", "best"});
  member("launch", p.launch, sched::kLaunchModes);
  if (p.device_profile.empty())
    user_error("device_profile: expected a profile name or file, not empty");
  check_range("max_block_units", p.max_block_units, 1, 64);
  check_range("max_block_bound", p.max_block_log10_bound, 1.0, 30.0);
  check_range("time_limit_s", p.time_limit_s, 0.0, 1e6);
  check_range("threads", p.threads, 0, 1024);
  if (p.max_streams != 0) check_range("max_streams", p.max_streams, 1, 1024);
}

}  // namespace

Schedule::Schedule(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

Schedule Schedule::load(const std::string& path) {
  auto impl = std::make_shared<Impl>();
  impl->document = sched::read_schedule_document(path);
  impl->json = impl->document.dump(1);
  impl->source = path;
  return Schedule(std::move(impl));
}

Schedule Schedule::from_json(const std::string& text, const std::string& source) {
  auto impl = std::make_shared<Impl>();
  impl->document = sched::parse_schedule_document(text, source);
  impl->json = text;
  impl->source = source;
  return Schedule(std::move(impl));
}

void Schedule::save(const std::string& path, bool force) const {
  // ios-optimize -o's rule (core/output_files.h): a file of another kind is
  // replaced only with force, and no other ios run may be writing it.
  OutputFiles outputs({}, force);
  outputs.add("save", path, OutputKind::kSchedule);
  create_parent_folder(path);
  write_file_atomically(path, impl_->json);
}

const std::string& Schedule::json() const { return impl_->json; }

std::string Schedule::scheduler() const {
  return impl_->document.at("scheduler").value("name", "");
}

double Schedule::predicted_latency_ms() const {
  return impl_->document.value("predicted_latency_ms", std::nan(""));
}

int64_t Schedule::batch() const { return impl_->document.at("model").value("batch", int64_t{0}); }

std::string Schedule::launch() const {
  return impl_->document.at("scheduler").value("launch", std::string("graph"));
}

std::string Schedule::precision() const {
  const auto& doc = impl_->document;
  if (!doc.contains("precision") || !doc["precision"].is_object()) return "";
  return doc["precision"].value("name", std::string());
}

bool Schedule::staged() const { return impl_->document.value("form", "staged") == "staged"; }

std::vector<ScheduleStage> Schedule::stages() const {
  std::vector<ScheduleStage> stages;
  if (!staged()) return stages;
  for (const auto& stage : impl_->document.at("stages")) {
    stages.push_back({stage.at("strategy").get<std::string>(),
                      stage.at("groups").get<std::vector<std::vector<std::string>>>()});
  }
  return stages;
}

std::optional<int64_t> Schedule::peak_memory_bytes() const {
  const auto memory = impl_->document.find("memory");
  if (memory == impl_->document.end() || !memory->contains("peak_bytes")) return std::nullopt;
  return memory->at("peak_bytes").get<int64_t>();
}

const std::string& Schedule::report() const { return impl_->report; }
const std::string& Schedule::report_json() const { return impl_->report_json; }

Schedule Schedule::optimize(const std::string& model_path, const OptimizeOptions& options) {
  const optimize::OptimizeOptions pipeline = pipeline_options(model_path, options);
  check_options(pipeline);
  // What ios-optimize refuses as doing nothing is refused here too, by the
  // same rule: an option counts as given when it is set to other than its
  // default. The options only the command line has are never given here.
  const std::map<std::string, bool> set = {
      {"--profile-db", !options.profile_db.empty()},
      {"--profile-budget", !options.profile_budget.empty()},
      {"--time-limit", options.time_limit_s.has_value()},
      {"--threads", options.threads != 0},
      {"--device-profile", options.device_profile.has_value()},
      {"--conv-kernels", !options.conv_kernels.empty()}};
  ::ios::optimize::reject_options_without_effect(pipeline, [&set](const std::string& option) {
    const auto it = set.find(option);
    return it != set.end() && it->second;
  });
  ::ios::optimize::Optimization found = ::ios::optimize::optimize_model(pipeline);
  auto impl = std::make_shared<Impl>();
  impl->json = sched::schedule_to_json(found.schedule, *found.prepared->units);
  impl->document = nlohmann::json::parse(impl->json);
  impl->source = fmt::format("the schedule optimized for {}", model_path);
  impl->report = ::ios::optimize::render_summary(found.report);
  impl->report_json = ::ios::optimize::render_json(found.report);
  return Schedule(std::move(impl));
}

}  // namespace ios
