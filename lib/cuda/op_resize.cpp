// Resize of H and W (nearest or bilinear): the backend's own kernel, the
// math of ir/resize_math.h.
#include "core/error.h"
#include "cuda/launch.h"
#include "cuda/lowering.h"

namespace ios::cuda {
namespace {

using ir::NodeId;
using ResizeGpuOp = OwnKernelGpuOp<kernels::ResizeParams, kernels::resize>;

// Resize of H and W of a 4-D x into y.
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
    IOS_ASSERT(xv.shape.size() == 4 && yv.shape.size() == 4, "resize of {} into {}",
               ir::to_string(xv.shape), ir::to_string(yv.shape));
    kernels::ResizeParams rp;
    rp.n = xv.shape[0], rp.c = xv.shape[1], rp.h = xv.shape[2], rp.w = xv.shape[3];
    rp.oh = yv.shape[2], rp.ow = yv.shape[3];
    rp.mode = attrs.mode;
    rp.coordinates = attrs.coordinates;
    rp.nearest = attrs.nearest;
    rp.scale_h = attrs.scale[0];
    rp.scale_w = attrs.scale[1];
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
  need_2d_window(node, node.attr<ir::ResizeAttrs>().spatial_rank());
  emit(launch, ResizeOp{lw.value_for(node.inputs[0]), y, node.attr<ir::ResizeAttrs>()});
}

}  // namespace ios::cuda
