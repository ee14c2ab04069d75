// Resize of 1 to 3 spatial axes (nearest, or linear: bilinear in a plane,
// trilinear as two planes' bilinear values blended, as the CPU reference
// computes it): the backend's own kernel on T, H, W (ir/window.h's form),
// the math of ir/resize_math.h.
#include "core/error.h"
#include "cuda/launch.h"
#include "cuda/lowering.h"
#include "ir/window.h"

namespace ios::cuda {
namespace {

using ir::NodeId;
using ResizeGpuOp = OwnKernelGpuOp<kernels::ResizeParams, kernels::resize>;

// Resize of the spatial axes of x into y.
class ResizeOp final : public Operation {
 public:
  int x = -1, y = -1;
  ir::ResizeAttrs attrs;

  ResizeOp(int x_, int y_, ir::ResizeAttrs attrs_) : x(x_), y(y_), attrs(std::move(attrs_)) {}

  void uses(Uses& u) const override {
    u.read(x);
    u.write(y);
  }

  std::string describe(const Program& p) const override {
    return (attrs.mode == ir::resize::Mode::kLinear ? "resize linear " : "resize nearest ") +
           p.value_name(x) + " -> " + p.value_name(y);
  }

  std::unique_ptr<GpuOp> launch(const Binding& b) const override {
    const Value& xv = b.value(x);
    const Value& yv = b.value(y);
    const size_t rank = attrs.spatial_rank();
    IOS_ASSERT(rank >= 1 && rank <= 3 && xv.shape.size() == rank + 2 &&
                   yv.shape.size() == rank + 2 && attrs.scale.size() == rank,
               "resize of {} into {} over {} axes", ir::to_string(xv.shape),
               ir::to_string(yv.shape), rank);
    kernels::ResizeParams rp;
    rp.n = xv.shape[0], rp.c = xv.shape[1];
    const ir::Axes3 in = ir::spatial3(xv.shape), out = ir::spatial3(yv.shape);
    for (size_t d = 0; d < 3; ++d) rp.in[d] = in[d], rp.out[d] = out[d];
    rp.rank = static_cast<int>(rank);
    for (size_t a = 0; a < rank; ++a) rp.scale[3 - rank + a] = attrs.scale[a];
    rp.mode = attrs.mode;
    rp.coordinates = attrs.coordinates;
    rp.nearest = attrs.nearest;
    rp.x = b.in(x);
    rp.x_batch_stride = xv.batch_stride;
    rp.y = b.out(y);
    rp.y_batch_stride = yv.batch_stride;
    rp.type = xv.type;
    IOS_ASSERT(yv.type == xv.type, "resize of {} into {}", ir::type_name(xv.type), ir::type_name(yv.type));
    return std::make_unique<ResizeGpuOp>(rp, "own resize");
  }
};

}  // namespace

void lower_resize(Lowerer& lw, Launch& launch, NodeId n, int y) {
  const ir::Graph& g = lw.graph();
  const ir::Node& node = g.node(n);
  const size_t rank = node.attr<ir::ResizeAttrs>().spatial_rank();
  if (rank < 1 || rank > 3 || lw.graph().tensor(node.inputs[0]).shape.size() != rank + 2) {
    user_error(
        "Resize '{}': {} spatial axes over {}; the CUDA backend resizes 1 to 3 spatial axes of "
        "N,C,...",
        node.name, rank, ir::to_string(lw.graph().tensor(node.inputs[0]).shape));
  }
  emit(launch, ResizeOp{lw.value_for(node.inputs[0]), y, node.attr<ir::ResizeAttrs>()});
}

}  // namespace ios::cuda
