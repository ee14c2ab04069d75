#include "engine/loading.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>

#include "core/error.h"
#include "core/json_limits.h"
#include "core/sha256.h"
#include "sched/cost_model.h"
#include "sched/schedule_io.h"
#include "sched/scheduler.h"
#include "sched/validate.h"

namespace ios::engine {
namespace {

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

std::string describe(const sched::PrecisionInfo& p) {
  const std::string name = p.name();
  if (!p.is_half()) return name + " (a float32 graph)";
  std::string text = name + (p.converted ? " (converted by ios" : " (the model's own types");
  if (p.half_io) text += ", half-precision inputs and outputs";
  if (!p.keep_fp32.empty()) {
    // The file's names, echoed as excerpts (a name may be megabytes long or
    // hold escape sequences), at most a few of them.
    std::vector<std::string> shown;
    for (size_t i = 0; i < p.keep_fp32.size() && i < 8; ++i) shown.push_back(quote_excerpt(p.keep_fp32[i]));
    if (p.keep_fp32.size() > shown.size()) shown.push_back(fmt::format("... ({} names)", p.keep_fp32.size()));
    text += fmt::format(", keep_fp32 {}", fmt::join(shown, ","));
  }
  return text + ")";
}

// The precision a schedule runs at: as it records, or as --precision asks
// where that computes the same graph (tf32 and fp32 differ in math only) or,
// with --retarget, the same units in the other 16-bit type.
model::PrecisionRequest precision_for(const sched::PrecisionInfo& recorded,
                                      const ShapeRequest& request, const std::string& path) {
  // The names kept float32 are the schedule's: an entry that names nothing
  // is the file's, not an option's (ios-run has no --keep-fp32).
  const std::string origin = fmt::format("{}'s precision.keep_fp32 entry", path);
  model::PrecisionRequest as_made{
      recorded.converted || !recorded.is_half() ? std::optional(recorded.value) : std::nullopt,
      recorded.half_io, recorded.keep_fp32, origin};
  if (!request.precision || *request.precision == recorded.value) return as_made;
  const ir::Precision asked = *request.precision;
  if (!asked.is_half() && !recorded.is_half()) return {asked, false, {}};
  if (asked.is_half() && recorded.is_half() && recorded.converted && request.retarget) {
    return {asked, recorded.half_io, recorded.keep_fp32, origin};
  }
  user_error(
      "{}: the schedule was made for precision {} and --precision {} computes another graph; drop "
      "--precision to run it as made{}",
      path, describe(recorded), asked.name(),
      asked.is_half() && recorded.is_half() && recorded.converted
          ? fmt::format(", or pass --retarget to run its units at {}", asked.name())
          : fmt::format(", or make a schedule for {} with ios-optimize --precision {}",
                        asked.name(), asked.name()));
}

}  // namespace

std::unique_ptr<model::PreparedModel> import_for_schedule(const std::string& model_path,
                                                          const ShapeRequest& request,
                                                          const nlohmann::json* document,
                                                          const std::string& schedule_path) {
  onnx::ImportOptions import_options =
      model::shape_options(request.batch, request.rewrite_batch, request.input_shapes);
  if (request.batch == 0 && request.input_shapes.empty() && document != nullptr) {
    import_options.batch = sched::schedule_batch(*document, schedule_path);
    const ScheduleHeader header = peek_header(*document);
    const bool readable = std::filesystem::is_regular_file(model_path);
    if (request.force || header.sha256.empty() ||
        (readable && header.sha256 == sha256_file(model_path))) {
      import_options.recorded_inputs = header.inputs;
      import_options.recorded_source = schedule_path;
    }
  }
  model::PrecisionRequest precision{request.precision, false, {}};
  if (document != nullptr) {
    if (const auto recorded = sched::schedule_precision(*document, schedule_path)) {
      precision = precision_for(*recorded, request, schedule_path);
    }
  }
  return model::prepare_model(model_path, import_options, {}, precision);
}

void reject_retarget_without_effect(const ShapeRequest& request, size_t schedules) {
  if (!request.retarget) return;
  if (schedules == 0) {
    user_error(
        "--retarget has no effect without a schedule file: the built-in sequential schedule "
        "is made for the batch it runs at; drop it or give a schedule");
  }
  if (schedules == 1 && request.batch == 0 && request.input_shapes.empty() &&
      !(request.precision && request.precision->is_half())) {
    user_error(
        "--retarget has no effect without --batch, --input-shape or --precision {}: the model "
        "runs at the schedule's own batch and precision; give the batch or precision to run it at, "
        "or drop --retarget",
        fmt::join(ir::precision_names(true), "|"));
  }
}

sched::Schedule load_schedule(const model::PreparedModel& prepared, const nlohmann::json& document,
                              const std::string& path, bool force, bool retarget) {
  const sched::ModelInfo model = prepared.info();
  const ScheduleHeader header = peek_header(document);
  if (!header.sha256.empty())
    sched::check_model_hash(header.sha256, header.model_path, model, path, force);
  if (const auto recorded = sched::schedule_precision(document, path)) {
    const sched::PrecisionInfo& run = prepared.precision;
    const bool retargeted =
        retarget && recorded->is_half() && run.is_half() && recorded->converted && run.converted &&
        recorded->half_io == run.half_io && recorded->keep_fp32 == run.keep_fp32;
    if (!recorded->same_graph(run) && !retargeted) {
      user_error(
          "{}: the schedule was made for precision {} but the model runs at {}; run schedules of "
          "one "
          "precision together",
          path, describe(*recorded), describe(run));
    }
  }
  sched::Schedule schedule = sched::schedule_from_document(document, path, *prepared.units);
  sched::check_schedule_matches_model(schedule, model, path, force, retarget);
  return schedule;
}

sched::Schedule sequential_schedule(const model::PreparedModel& prepared) {
  const auto& entry = sched::find_scheduler("sequential");
  struct ZeroCost : sched::CostModel {  // sequential needs no latencies
    std::string name() const override { return "none"; }
    double stage_latency(const sched::Stage&) override { return 0.0; }
  } zero;
  sched::SearchStats stats;
  sched::Schedule schedule = entry.make(sched::Params::parse(entry.name, entry.params, ""))
                                 ->run(*prepared.units, zero, stats);
  schedule.model = prepared.info();
  return schedule;
}

exec::StageJoin stage_join(const std::string& launch) {
  return launch == "synced" ? exec::StageJoin::kDeviceSync : exec::StageJoin::kEvents;
}

}  // namespace ios::engine
