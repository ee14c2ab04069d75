// Loading a schedule for a model, as ios-run and the engine API both do it:
// the model imported at the shapes the options or the schedule give, the
// schedule validated against it (hash, units, batch) and lowered. One path:
// lib/runner and lib/engine/engine.cpp call these, so a schedule that
// ios-run refuses is refused by ios::Engine with the same message.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/plan.h"
#include "ir/precision.h"
#include "model/prepared_model.h"
#include "sched/schedule.h"

namespace ios::engine {

// How a model is imported for running (ios-run --batch, --rewrite-batch,
// --input-shape, --force).
struct ShapeRequest {
  int64_t batch = 0;
  bool rewrite_batch = false;
  std::vector<std::string> input_shapes;
  bool force = false;  // accept a schedule made for another model file
  // --precision: none runs each schedule at the precision it records;
  // tf32 and fp32 change only a float32 graph's math; fp16 and bf16 must
  // match a half-precision schedule's type unless `retarget` (the same units
  // in the other 16-bit type).
  std::optional<ir::Precision> precision;
  bool retarget = false;
};

// Imports the model at the shapes `request` gives, else those `document`
// (the first schedule, parsed; null: none) was made for, when the schedule
// is for this model file (or `force`). The importer refuses recorded shapes
// where the model's static dimensions disagree; a schedule for another model
// file is reported as such by load_schedule, not as shapes that do not fit.
std::unique_ptr<model::PreparedModel> import_for_schedule(const std::string& model_path,
                                                          const ShapeRequest& request,
                                                          const nlohmann::json* document,
                                                          const std::string& schedule_path);

// --retarget where it does nothing, refused (ios-run and ios::Engine both
// call this): without a schedule file (`schedules` 0: the sequential
// schedule is made for the batch it runs at), or with one schedule and
// neither a batch, input shapes nor a 16-bit precision to run it at.
void reject_retarget_without_effect(const ShapeRequest& request, size_t schedules);

// The schedule of `document` (read from `path`), validated against the
// model: its hash (unless `force`), its precision (the model's, or the other
// 16-bit type with `retarget`), every unit once, dependencies, and its
// batch (another only with `retarget`).
sched::Schedule load_schedule(const model::PreparedModel& prepared, const nlohmann::json& document,
                              const std::string& path, bool force, bool retarget);

// The sequential schedule of the model (no file: ios-run's default and the
// reference of --check).
sched::Schedule sequential_schedule(const model::PreparedModel& prepared);

// How a launch mode runs a staged schedule's stages: "synced" joins them by
// a device synchronization from the host, the others by events.
exec::StageJoin stage_join(const std::string& launch);

}  // namespace ios::engine
