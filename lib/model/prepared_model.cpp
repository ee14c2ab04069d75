#include "model/prepared_model.h"

#include <exception>
#include <stdexcept>

#include "core/error.h"
#include "sched/schedule_io.h"

namespace ios::model {
namespace {

ir::Shape parse_dims(const std::string& text, const std::string& option) {
  ir::Shape shape;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t x = text.find('x', pos);
    const std::string part = text.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
    try {
      size_t used = 0;
      const long long v = std::stoll(part, &used);
      // Dimensions beyond 2^31 cannot be real and would overflow element counts.
      if (used != part.size() || v <= 0 || v > (1LL << 31)) throw std::invalid_argument(part);
      shape.push_back(v);
    } catch (const std::exception&) {
      user_error(
          "--input-shape '{}': '{}' is not a dimension from 1 to 2^31; write NAME:1x3x224x224",
          option, part);
    }
    if (x == std::string::npos) break;
    pos = x + 1;
  }
  return shape;
}

}  // namespace

sched::ModelInfo PreparedModel::info() const {
  return {model.path, model.sha256, model.batch, model.inputs};
}

onnx::ImportOptions shape_options(int64_t batch, bool rewrite_batch,
                                  const std::vector<std::string>& input_shapes) {
  onnx::ImportOptions import_options;
  if (batch > 0) import_options.batch = batch;
  import_options.rewrite_batch = rewrite_batch;
  for (const std::string& spec : input_shapes) {
    const size_t colon = spec.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      user_error("--input-shape '{}': expected NAME:1x3x224x224", spec);
    }
    const std::string name = spec.substr(0, colon);
    if (import_options.input_shapes.count(name)) {
      user_error("--input-shape is given twice for '{}'; give each input's shape once", name);
    }
    import_options.input_shapes[name] = parse_dims(spec.substr(colon + 1), spec);
  }
  return import_options;
}

std::unique_ptr<PreparedModel> prepare_model(const std::string& path,
                                             const onnx::ImportOptions& import_options,
                                             const sched::FormationOptions& formation) {
  auto prepared = std::make_unique<PreparedModel>();
  prepared->model = onnx::import_model(path, import_options);
  // A static dimension 0 above the batch limit would be written into a
  // schedule that ios-run then refuses to read.
  if (prepared->model.batch > sched::kMaxBatch) {
    if (prepared->model.inputs.empty()) {
      user_error("{}: batch {} is above ios's limit of {}", path, prepared->model.batch, sched::kMaxBatch);
    }
    const auto& [name, shape] = prepared->model.inputs.front();
    user_error("{}: input '{}' has shape {}: its dimension 0, the batch, is above ios's limit of {}; "
               "export the model with a smaller or a symbolic batch and pass --batch",
               path, name, ir::to_string(shape), sched::kMaxBatch);
  }
  if (prepared->model.graph.num_nodes() == 0) {
    user_error("{}: the model has no operators to schedule (every output is an input or a constant)", path);
  }
  prepared->units =
      std::make_unique<sched::UnitGraph>(sched::UnitGraph::form(prepared->model.graph, formation));
  return prepared;
}

}  // namespace ios::model
