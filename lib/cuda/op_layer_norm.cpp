// LayerNormalization: the backend's own kernel (op_layer_norm.cu), one block
// per row of the normalized dims, two passes (mean, then variance) in FP32. The
// kernel reads and writes dense rows, so a strided input (a slice of a
// concatenation) is first copied dense and a strided output (written into a
// concatenation) is computed in a dense scratch tensor and then copied
// there, as Softmax does. x and y are stored in their type (float32,
// float16 or bfloat16), Scale and B in theirs; all arithmetic is float.
#include <fmt/format.h>

#include "core/error.h"
#include "cuda/launch.h"
#include "cuda/lowering.h"
#include "ir/broadcast.h"

namespace ios::cuda {
namespace kernels {

// LayerNormalization of `rows` dense rows of `cols` elements: y = (x - mean)
// / sqrt(var + epsilon) * scale + bias per row, with scale and bias (null:
// none) holding one value per column (op_layer_norm.cu).
cudaError_t layer_norm(const void* x, const void* scale, const void* bias, void* y, ir::ElementType type,
                       ir::ElementType param_type, int64_t rows, int64_t cols, float epsilon,
                       cudaStream_t stream);

}  // namespace kernels

namespace {

using ir::NodeId;

struct LayerNormParams {
  int64_t rows = 0, cols = 0;
  const void* x = nullptr;
  const void* scale = nullptr;
  const void* bias = nullptr;
  void* y = nullptr;
  ir::ElementType type = ir::ElementType::kFloat32;        // of x and y
  ir::ElementType param_type = ir::ElementType::kFloat32;  // of scale and bias
  float epsilon = 1e-5f;
};

cudaError_t launch_layer_norm(const LayerNormParams& p, cudaStream_t stream) {
  return kernels::layer_norm(p.x, p.scale, p.bias, p.y, p.type, p.param_type, p.rows, p.cols, p.epsilon,
                             stream);
}

using LayerNormGpuOp = OwnKernelGpuOp<LayerNormParams, launch_layer_norm>;

// LayerNormalization of dense x into dense y over the dims from `axis` on;
// scale and bias are constants of one value per normalized element (bias may
// be absent).
class LayerNormOp final : public Operation {
 public:
  int x = -1, y = -1;
  int64_t axis = 1;
  float epsilon = 1e-5f;
  Ref scale, bias;

  void uses(Uses& u) const override {
    u.read(x);
    u.write(y);
  }

  std::string describe(const Program& p) const override {
    return "layer-norm axis " + std::to_string(axis) + ' ' + p.value_name(x) + " * " +
           p.ref_name(scale) + (bias ? " + " + p.ref_name(bias) : std::string()) + " -> " +
           p.value_name(y);
  }

  std::unique_ptr<GpuOp> launch(const Binding& b) const override {
    const Value& xv = b.value(x);
    const Value& yv = b.value(y);
    IOS_ASSERT(xv.dense() && yv.dense() && xv.shape == yv.shape,
               "layer-norm of {} into {} needs dense values", ir::to_string(xv.shape),
               ir::to_string(yv.shape));
    LayerNormParams lp;
    lp.cols = 1;
    for (size_t d = static_cast<size_t>(axis); d < xv.shape.size(); ++d) lp.cols *= xv.shape[d];
    lp.rows = lp.cols > 0 ? xv.size() / lp.cols : 0;
    lp.x = b.in(x);
    lp.y = b.out(y);
    lp.scale = b.in(scale);
    lp.bias = bias ? b.in(bias) : nullptr;
    lp.type = xv.type;
    lp.param_type = b.type(scale);
    IOS_ASSERT(yv.type == xv.type && (!bias || b.type(bias) == lp.param_type),
               "layer-norm of {} into {} (scale {}, bias {})", ir::type_name(xv.type), ir::type_name(yv.type),
               ir::type_name(lp.param_type), ir::type_name(b.type(bias)));
    lp.epsilon = epsilon;
    return std::make_unique<LayerNormGpuOp>(
        lp, fmt::format("own layer-norm {} rows of {}", lp.rows, lp.cols));
  }
};

}  // namespace

void lower_layer_norm(Lowerer& lw, Launch& launch, NodeId n, int y) {
  const ir::Graph& g = lw.graph();
  const ir::Node& node = g.node(n);
  const auto& attrs = node.attr<ir::LayerNormAttrs>();
  const ir::Shape dims = attrs.normalized_dims(g.tensor(node.inputs[0]).shape);
  // Scale and B as one value per normalized element (the kernel's layout):
  // the constant itself when it has as many values, else its expansion.
  auto row_constant = [&](ir::TensorId t, const char* what) {
    const ir::Tensor& p = g.tensor(t);
    IOS_ASSERT(p.is_constant() && ir::broadcasts_to(p.shape, dims),
               "LayerNormalization '{}': {} '{}' of shape {} is not a constant broadcasting to {}",
               node.name, what, p.name, ir::to_string(p.shape), ir::to_string(dims));
    const ir::Shape row{ir::num_elements(dims)};
    if (static_cast<int64_t>(p.data->size()) == row[0]) return Ref::constant(lw.constant(t, row));
    return Ref::constant(lw.new_constant(p.name + ":expanded:" + ir::to_string(dims), row,
                                         ir::expand_to(*p.data, p.shape, dims), p.type));
  };
  LayerNormOp op;
  op.axis = attrs.axis;
  op.epsilon = attrs.epsilon;
  op.scale = row_constant(node.inputs.at(1), "Scale");
  if (node.inputs.size() > 2) op.bias = row_constant(node.inputs[2], "B");
  op.x = lw.dense(launch, lw.value_for(node.inputs[0]));
  if (lw.val(y).dense()) {
    op.y = y;
    emit(launch, op);
    return;
  }
  op.y = lw.scratch(launch, lw.val(y).name + ":dense", lw.val(y).shape, lw.val(y).type);
  emit(launch, op);
  emit(launch, lw.strided_copy(op.y, y, lw.val(y).shape));
}

}  // namespace ios::cuda
