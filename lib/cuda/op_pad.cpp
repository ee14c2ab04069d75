// Pad (constant, reflect, edge; non-negative pads) and the explicit padding
// in front of a convolution whose pads are asymmetric (which cuDNN cannot
// express): the backend's own kernel.
#include <algorithm>

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

// Pads made explicit when they are asymmetric (cuDNN pads both ends of an
// axis alike), on every spatial axis: `pads` holds the begins, then the ends
// (one per spatial axis), and is left symmetric (all zero after a pad).
int Lowerer::explicit_pad(Launch& launch, int x, ir::Dims& pads, const std::string& name) {
  const size_t spatial = pads.size() / 2;
  const ir::Shape& s = val(x).shape;
  IOS_ASSERT(pads.size() == 2 * spatial && s.size() == spatial + 2,
             "'{}': {} pads for a tensor of shape {}", name, pads.size(), ir::to_string(s));
  bool symmetric = true;
  for (size_t a = 0; a < spatial; ++a) symmetric = symmetric && pads[a] == pads[a + spatial];
  if (symmetric) return x;
  ir::Shape padded = s;
  PadOp op;
  op.begin.assign(s.size(), 0);
  for (size_t a = 0; a < spatial; ++a) {
    padded[a + 2] += pads[a] + pads[a + spatial];
    op.begin[a + 2] = pads[a];
  }
  const int t = scratch(launch, name + ":padded", padded, val(x).type);
  op.x = x;
  op.y = t;
  emit(launch, std::move(op));
  std::fill(pads.begin(), pads.end(), 0);
  return t;
}

}  // namespace ios::cuda
