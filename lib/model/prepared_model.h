// A model ready to schedule or run: the imported IR and its unit graph. Both
// programs start here (ios-optimize to search, ios-run to load schedules
// against the same units), so it sits below both pipelines, directly above
// the importer and unit formation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "onnx/importer.h"
#include "sched/schedule.h"
#include "sched/unit_graph.h"

namespace ios::model {

// The unit graph points into `model.graph`, so this is neither copied nor moved.
struct PreparedModel {
  PreparedModel() = default;
  PreparedModel(PreparedModel&&) = delete;  // `units` points into `model.graph`
  onnx::ImportedModel model;
  std::unique_ptr<sched::UnitGraph> units;
  sched::ModelInfo info() const;
};

// The import options of --batch (0: none), --rewrite-batch and
// --input-shape (entries NAME:DxDxD).
onnx::ImportOptions shape_options(int64_t batch, bool rewrite_batch,
                                  const std::vector<std::string>& input_shapes);

// Imports and forms units.
std::unique_ptr<PreparedModel> prepare_model(const std::string& path,
                                             const onnx::ImportOptions& import_options,
                                             const sched::FormationOptions& formation = {});

}  // namespace ios::model
