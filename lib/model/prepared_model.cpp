#include "model/prepared_model.h"

#include <exception>
#include <stdexcept>

#include "core/error.h"
#include "ir/element_types.h"
#include "ir/half_conversion.h"
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

sched::PrecisionInfo apply_precision(ir::Graph& graph, const PrecisionRequest& request,
                                     const std::string& path) {
  sched::PrecisionInfo info;
  const ir::TypeCounts before = ir::count_types(graph);
  const std::optional<ir::Precision>& asked = request.precision;
  if (!before.any_half()) {
    info.value = asked.value_or(ir::Precision());
    if (!info.value.is_half()) {
      if (!request.keep_fp32.empty() || request.half_io) {
        user_error(
            "{}: --keep-fp32 and --half-io apply to a conversion to half precision; add "
            "{}",
            path, ir::precision_names_text(true, "--precision "));
      }
    } else {
      ir::ConversionOptions options;
      options.type = info.value.storage();
      options.half_io = request.half_io;
      options.keep_fp32 = request.keep_fp32;
      options.keep_fp32_origin = request.keep_fp32_origin;
      ir::convert_to_half(graph, options, path);
      info.converted = true;
      info.half_io = request.half_io;
      info.keep_fp32 = request.keep_fp32;
    }
  } else {
    // A typed model: its own types, in one 16-bit type.
    const ir::Tensor* half = nullptr;
    for (const ir::Tensor& t : graph.tensors()) {
      if (!ir::is_half(t.type)) continue;
      if (half && half->type != t.type) {
        user_error(
            "{}: the model mixes {} ('{}') and {} ('{}') tensors; ios runs one 16-bit "
            "type per model",
            path, ir::type_name(half->type), half->name, ir::type_name(t.type), t.name);
      }
      if (!half) half = &t;
    }
    const ir::Precision own = ir::Precision::narrow(half->type);
    if (asked && *asked != own) {
      user_error(
          "{}: the model is typed {} (tensor '{}' is {}); --precision {} would not compute it as "
          "written: "
          "drop --precision, or give the float32 model to convert",
          path, own.name(), half->name, ir::type_name(half->type), asked->name());
    }
    if (!request.keep_fp32.empty() || request.half_io) {
      user_error(
          "{}: --keep-fp32 and --half-io apply to a conversion, but the model is already typed {}; "
          "drop them",
          path, own.name());
    }
    info.value = own;
  }
  const ir::TypeCounts after = ir::count_types(graph);
  for (int k = 0; k < ir::kNumElementTypes; ++k) info.tensors[static_cast<size_t>(k)] = after.of[k];
  return info;
}

std::unique_ptr<PreparedModel> prepare_model(const std::string& path,
                                             const onnx::ImportOptions& import_options,
                                             const sched::FormationOptions& formation,
                                             const PrecisionRequest& precision) {
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
  prepared->precision = apply_precision(prepared->model.graph, precision, path);
  prepared->units =
      std::make_unique<sched::UnitGraph>(sched::UnitGraph::form(prepared->model.graph, formation));
  return prepared;
}

}  // namespace ios::model
