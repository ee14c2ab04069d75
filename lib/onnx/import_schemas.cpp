#include "onnx/import_schemas.h"

#include <onnx/defs/shape_inference.h>

#include <vector>

#include "core/error.h"
#include "ir/graph.h"
#include "onnx/einsum.h"

namespace ios::onnx {
namespace {

void infer_einsum_dims(::onnx::InferenceContext& ctx) {
  const auto* equation = ctx.getAttribute("equation");
  if (!equation || ctx.getNumOutputs() < 1) return;
  std::vector<ir::Shape> operands;
  for (size_t i = 0; i < ctx.getNumInputs(); ++i) {
    const auto* type = ctx.getInputType(i);
    if (!type || !type->has_tensor_type() || !type->tensor_type().has_shape()) return;
    ir::Shape dims;
    for (const auto& d : type->tensor_type().shape().dim()) {
      if (!d.has_dim_value()) return;
      dims.push_back(d.dim_value());
    }
    operands.push_back(std::move(dims));
  }
  ir::Shape output;
  try {
    output = plan_einsum(equation->s(), operands, "").output;
  } catch (const UserError&) {
    return;  // the IR builder refuses the node, naming it
  }
  auto* shape = ctx.getOutputType(0)->mutable_tensor_type()->mutable_shape();
  shape->clear_dim();
  for (int64_t d : output) shape->add_dim()->set_dim_value(d);
}

}  // namespace

bool onnx_einsum_inference_safe(const std::string& equation) {
  if (equation.find("->") != std::string::npos) return true;
  for (char c : equation) {
    if (!((c >= 'a' && c <= 'z') || c == ',' || c == '.' || c == ' ')) return false;
  }
  return true;
}

const ::onnx::OpSchema* ImportSchemas::GetSchema(const std::string& key, int max_inclusive_version,
                                                 const std::string& domain) const {
  const ::onnx::OpSchema* base =
      ::onnx::OpSchemaRegistry::Schema(key, max_inclusive_version, domain);
  if (!base || key != "Einsum" || !(domain.empty() || domain == "ai.onnx")) return base;
  auto [it, fresh] = einsum_.try_emplace(base, *base);
  if (fresh) {
    it->second.TypeAndShapeInferenceFunction([rank_only = base->GetTypeAndShapeInferenceFunction()](
                                                 ::onnx::InferenceContext& ctx) {
      const auto* equation = ctx.getAttribute("equation");
      if (rank_only && (!equation || onnx_einsum_inference_safe(equation->s()))) {
        rank_only(ctx);
      } else if (ctx.getNumInputs() > 0 && ctx.getNumOutputs() > 0) {
        ::onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);  // what ONNX's would have done first
      }
      infer_einsum_dims(ctx);
    });
  }
  return &it->second;
}

}  // namespace ios::onnx
