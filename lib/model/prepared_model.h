// A model ready to schedule or run: the imported IR and its unit graph. Both
// programs start here (ios-optimize to search, ios-run to load schedules
// against the same units), so it sits below both pipelines, directly above
// the importer and unit formation.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/precision.h"
#include "onnx/importer.h"
#include "sched/schedule.h"
#include "sched/unit_graph.h"

namespace ios::model {

// The precision a model is scheduled and run at (--precision, --keep-fp32,
// --half-io; docs/cli.md, *Precision*):
//  - tf32 and fp32 run a float32 model as it is; they name the math of its
//    convolutions and products (TF32 tensor cores allowed, or strict FP32);
//  - fp16 and bf16 convert a float32 model (ir/half_conversion.h), or take a model
//    whose file is already typed in that 16-bit type as it is. Float32
//    regions of a half-precision graph compute in strict FP32.
struct PrecisionRequest {
  std::optional<ir::Precision> precision;  // none: tf32, or a typed model's own
  bool half_io = false;  // converted graphs: inputs and outputs in the 16-bit type
  std::vector<std::string> keep_fp32;  // converted graphs: nodes or operator types kept float32
  // Where keep_fp32 came from, for messages (ir::ConversionOptions).
  std::string keep_fp32_origin = "--keep-fp32";
};

// The unit graph points into `model.graph`, so this is neither copied nor moved.
struct PreparedModel {
  PreparedModel() = default;
  PreparedModel(PreparedModel&&) = delete;  // `units` points into `model.graph`
  onnx::ImportedModel model;
  std::unique_ptr<sched::UnitGraph> units;
  sched::PrecisionInfo precision;  // what the graph computes in (the schedule records it)
  sched::ModelInfo info() const;
};

// The precision of `graph` as imported from `path`, with `request` applied:
// a float32 graph converted for fp16/bf16; a typed graph checked against the
// request. Throws UserError (naming `path` and a node, or the option) for a
// typed model with --precision fp32/tf32 or the other 16-bit type, and for
// --keep-fp32 or --half-io on a typed model (they apply to conversion).
sched::PrecisionInfo apply_precision(ir::Graph& graph, const PrecisionRequest& request,
                                     const std::string& path);

// The import options of --batch (0: none), --rewrite-batch and
// --input-shape (entries NAME:DxDxD).
onnx::ImportOptions shape_options(int64_t batch, bool rewrite_batch,
                                  const std::vector<std::string>& input_shapes);

// Imports and forms units.
std::unique_ptr<PreparedModel> prepare_model(const std::string& path,
                                             const onnx::ImportOptions& import_options,
                                             const sched::FormationOptions& formation = {},
                                             const PrecisionRequest& precision = {});

}  // namespace ios::model
