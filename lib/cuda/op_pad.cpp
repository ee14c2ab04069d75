// Pad (constant, reflect, edge; non-negative pads) and the explicit padding
// in front of a convolution whose pads are asymmetric (which cuDNN cannot
// express): the backend's own kernel.
#include "core/error.h"
#include "cuda/launch.h"
#include "cuda/lowering.h"

namespace ios::cuda {

using ir::NodeId;
using PadGpuOp = OwnKernelGpuOp<kernels::PadParams, kernels::pad>;

void PadOp::uses(Uses& u) const {
  u.read(x);
  u.write(y);
}

std::string PadOp::describe(const Program& p) const {
  return "pad " + p.value_name(x) + " -> " + p.value_name(y);
}

std::unique_ptr<GpuOp> PadOp::launch(const Binding& b) const {
  const Value& xv = b.value(x);
  const Value& yv = b.value(y);
  kernels::PadParams pp;
  pp.rank = static_cast<int>(xv.shape.size());
  fill_dims(pp.in_dims, xv.shape, "a pad input");
  fill_dims(pp.out_dims, yv.shape, "a pad output");
  fill_dims(pp.begin, begin, "pads");
  fill_dims(pp.src_strides, xv.strides(), "a pad input");
  fill_dims(pp.dst_strides, yv.strides(), "a pad output");
  pp.total = yv.size();
  pp.src = b.in(x);
  pp.dst = b.out(y);
  pp.type = xv.type;
  IOS_ASSERT(yv.type == xv.type, "pad of {} into {}", ir::type_name(xv.type), ir::type_name(yv.type));
  pp.mode = mode == Mode::kConstant  ? kernels::kPadConstant
            : mode == Mode::kReflect ? kernels::kPadReflect
                                     : kernels::kPadEdge;
  pp.value = value;
  return std::make_unique<PadGpuOp>(pp, "own pad");
}

void lower_pad(Lowerer& lw, Launch& launch, NodeId n, int y) {
  const ir::Graph& g = lw.graph();
  const ir::Node& node = g.node(n);
  const auto& a = node.attr<ir::PadAttrs>();
  PadOp op;
  op.x = lw.value_for(node.inputs[0]);
  op.y = y;
  const size_t rank = lw.val(op.x).shape.size();
  IOS_ASSERT(a.pads.size() == 2 * rank, "Pad '{}' has {} pads for rank {}", node.name,
             a.pads.size(), rank);
  for (size_t d = 0; d < rank; ++d) {
    if (a.pads[d] < 0 || a.pads[d + rank] < 0) {
      user_error("Pad '{}': negative pads (cropping) are not supported by the CUDA backend",
                 node.name);
    }
  }
  op.begin.assign(a.pads.begin(), a.pads.begin() + static_cast<std::ptrdiff_t>(rank));
  op.mode = a.mode == ir::PadAttrs::Mode::kConstant  ? PadOp::Mode::kConstant
            : a.mode == ir::PadAttrs::Mode::kReflect ? PadOp::Mode::kReflect
                                                     : PadOp::Mode::kEdge;
  op.value = a.value;
  emit(launch, std::move(op));
}

// Pads made explicit when they are asymmetric (cuDNN pads symmetrically).
int Lowerer::explicit_pad(Launch& launch, int x, std::array<int64_t, 4>& pads,
                          const std::string& name) {
  if (pads[0] == pads[2] && pads[1] == pads[3]) return x;
  const ir::Shape& s = val(x).shape;
  const int t = scratch(launch, name + ":padded",
                            {s[0], s[1], s[2] + pads[0] + pads[2], s[3] + pads[1] + pads[3]}, val(x).type);
  PadOp op;
  op.x = x;
  op.y = t;
  op.begin = {0, 0, pads[0], pads[1]};
  emit(launch, std::move(op));
  pads = {0, 0, 0, 0};
  return t;
}

}  // namespace ios::cuda
