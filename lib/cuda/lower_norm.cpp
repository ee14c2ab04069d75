// Layer normalization (lowering.h): the backend's own kernel, one block per
// row of the normalized dims. The kernel reads and writes dense rows, so a
// strided input (a slice of a concatenation) is first copied dense and a
// strided output (written into a concatenation) is computed in a dense
// scratch tensor and then copied there, as Softmax does.
#include "core/error.h"
#include "cuda/lowering.h"
#include "ir/layer_norm.h"

namespace ios::cuda {

using ir::NodeId;

void Lowerer::lower_layer_norm(Launch& launch, NodeId n, int y) {
  const ir::Node& node = g_.node(n);
  const auto& attrs = node.attr<ir::LayerNormAttrs>();
  const ir::Shape dims =
      ir::layer_norm::normalized_dims(g_.tensor(node.inputs[0]).shape, attrs.axis);
  // Scale and B as one value per normalized element (the kernel's layout):
  // the constant itself when it has as many values, else its expansion.
  auto row_constant = [&](ir::TensorId t, const char* what) {
    const ir::Tensor& p = g_.tensor(t);
    IOS_ASSERT(p.is_constant() && ir::layer_norm::broadcasts_to(p.shape, dims),
               "LayerNormalization '{}': {} '{}' of shape {} is not a constant broadcasting to {}",
               node.name, what, p.name, ir::to_string(p.shape), ir::to_string(dims));
    const ir::Shape row{ir::num_elements(dims)};
    if (static_cast<int64_t>(p.data->size()) == row[0]) return Ref::constant(constant(t, row));
    return Ref::constant(new_constant(p.name + ":expanded:" + ir::to_string(dims), row,
                                      ir::layer_norm::expand(*p.data, p.shape, dims)));
  };
  LayerNormOp op;
  op.axis = attrs.axis;
  op.epsilon = attrs.epsilon;
  op.scale = row_constant(node.inputs.at(1), "Scale");
  if (node.inputs.size() > 2) op.bias = row_constant(node.inputs[2], "B");
  op.x = dense(launch, value_for(node.inputs[0]));
  if (val(y).dense()) {
    op.y = y;
    emit(launch, op);
    return;
  }
  op.y = p_.add_temp(val(y).name + ":dense", val(y).shape);
  emit(launch, op);
  emit(launch, strided_copy(op.y, y, val(y).shape));
}

}  // namespace ios::cuda
