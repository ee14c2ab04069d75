// ReduceMean: over H and W of a 4-D tensor a global average pool (cuDNN,
// op_pool.cpp); over any other axes (an unfused layer normalization's
// trailing ones) the backend's own kernel, which also computes ReduceSum,
// ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare and
// ReduceLogSumExp over any axes.
#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "cuda/launch.h"
#include "cuda/lowering.h"

namespace ios::cuda {
namespace {

using ir::NodeId;
using ReduceGpuOp = OwnKernelGpuOp<kernels::ReduceParams, kernels::reduce_mean>;

const char* reduce_name(int op) {
  switch (op) {
    case kernels::kReduceSum: return "reduce-sum";
    case kernels::kReduceMax: return "reduce-max";
    case kernels::kReduceMin: return "reduce-min";
    case kernels::kReduceProd: return "reduce-prod";
    case kernels::kReduceL1: return "reduce-l1";
    case kernels::kReduceL2: return "reduce-l2";
    case kernels::kReduceSumSquare: return "reduce-sum-square";
    case kernels::kReduceLogSumExp: return "reduce-log-sum-exp";
    default: return "reduce-mean";
  }
}

// The reduction `op` over `axes` of x (any rank); y holds the kept dimensions.
class ReduceOp final : public Operation {
 public:
  int x = -1, y = -1;
  std::vector<int64_t> axes;
  int op = kernels::kReduceMean;

  ReduceOp(int x_, int y_, std::vector<int64_t> axes_, int op_) : x(x_), y(y_), axes(std::move(axes_)), op(op_) {}

  void uses(Uses& u) const override {
    u.read(x);
    u.write(y);
  }

  std::string describe(const Program& p) const override {
    return std::string(reduce_name(op)) + " " + p.value_name(x) + " -> " + p.value_name(y);
  }

  std::unique_ptr<GpuOp> launch(const Binding& b) const override {
    const Value& xv = b.value(x);
    const Value& yv = b.value(y);
    kernels::ReduceParams rp;
    rp.op = op;
    rp.rank = static_cast<int>(xv.shape.size());
    fill_dims(rp.dims, xv.shape, "a reduce input");
    fill_dims(rp.x_strides, xv.strides(), "a reduce input");
    const std::vector<int64_t> ys = yv.strides();
    const bool keepdims = yv.shape.size() == xv.shape.size();
    size_t yd = 0;
    rp.out_total = 1;
    for (size_t d = 0; d < xv.shape.size(); ++d) {
      const bool reduced =
          std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end();
      rp.reduced[d] = reduced;
      if (reduced) {
        rp.count *= xv.shape[d];
        rp.y_strides[d] = 0;
        if (keepdims) ++yd;
      } else {
        rp.out_total *= xv.shape[d];
        rp.y_strides[d] = yd < ys.size() ? ys[yd] : 0;
        ++yd;
      }
    }
    rp.x = b.in(x);
    rp.y = b.out(y);
    rp.type = xv.type;
    IOS_ASSERT(b.type(y) == xv.type, "reduction of {} into {}", ir::type_name(xv.type), ir::type_name(b.type(y)));
    return std::make_unique<ReduceGpuOp>(rp, std::string("own ") + reduce_name(op));
  }
};

}  // namespace

void lower_reduce(Lowerer& lw, Launch& launch, NodeId n, int y) {
  const ir::Graph& g = lw.graph();
  const ir::Node& node = g.node(n);
  const int x = lw.value_for(node.inputs[0]);
  const ir::Shape& xs = lw.val(x).shape;
  std::vector<int64_t> axes = node.attr<ir::ReduceAttrs>().axes;
  if (axes.empty()) {  // ONNX: no axes means all of them
    axes.resize(xs.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (int64_t& a : axes) a = normalize_axis(a, xs.size());
  std::sort(axes.begin(), axes.end());
  using K = ir::OpKind;
  const int op = node.op == K::kReduceSum    ? kernels::kReduceSum
                 : node.op == K::kReduceMax  ? kernels::kReduceMax
                 : node.op == K::kReduceMin  ? kernels::kReduceMin
                 : node.op == K::kReduceProd ? kernels::kReduceProd
                 : node.op == K::kReduceL1   ? kernels::kReduceL1
                 : node.op == K::kReduceL2   ? kernels::kReduceL2
                 : node.op == K::kReduceSumSquare ? kernels::kReduceSumSquare
                 : node.op == K::kReduceLogSumExp ? kernels::kReduceLogSumExp
                                                  : kernels::kReduceMean;
  std::vector<int64_t> spatial(xs.size() > 2 ? xs.size() - 2 : 0);
  std::iota(spatial.begin(), spatial.end(), 2);
  if (op == kernels::kReduceMean && xs.size() >= 3 && xs.size() <= 5 &&
      axes == spatial) {  // a global average pool
    lw.global_average_pool(launch, x, y);
    return;
  }
  emit(launch, ReduceOp(x, y, axes, op));
}

}  // namespace ios::cuda
