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

// ONNX 1.12's Conv and ConvTranspose inference, without kernel_shape, takes
// one kernel length per spatial axis of the weights and reads a dilation for
// each from a list sized by the input's spatial axes: weights of another rank
// than the input read past that list (from address 0 when the input has no
// spatial axis). Such a node is refused here, by node, before ONNX reads.
void check_window_ranks(::onnx::InferenceContext& ctx) {
  if (ctx.getNumInputs() < 2) return;
  const auto* x = ctx.getInputType(0);
  const auto* w = ctx.getInputType(1);
  if (!x || !w || !x->has_tensor_type() || !w->has_tensor_type() || !x->tensor_type().has_shape() ||
      !w->tensor_type().has_shape()) {
    return;  // ONNX's inference needs both shapes and stops without them
  }
  const int x_rank = x->tensor_type().shape().dim_size();
  const int w_rank = w->tensor_type().shape().dim_size();
  if (x_rank != w_rank) {
    // fail_shape_inference, spelled out: its ONNX_NAMESPACE means ios::onnx here.
    throw ::onnx::InferenceError(::onnx::MakeString(
        "[ShapeInferenceError] the weights have rank ", w_rank, " and the input rank ", x_rank,
        "; a convolution's weights have the input's rank"));
  }
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
  if (!base || !(domain.empty() || domain == "ai.onnx")) return base;
  if (key == "Conv" || key == "ConvTranspose") {
    auto [it, fresh] = wrapped_.try_emplace(base, *base);
    if (fresh) {
      it->second.TypeAndShapeInferenceFunction(
          [onnx_inference =
               base->GetTypeAndShapeInferenceFunction()](::onnx::InferenceContext& ctx) {
            check_window_ranks(ctx);
            if (onnx_inference) onnx_inference(ctx);
          });
    }
    return &it->second;
  }
  if (key != "Einsum") return base;
  auto [it, fresh] = wrapped_.try_emplace(base, *base);
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
