#include "ir/window.h"

#include "core/error.h"

namespace ios::ir {

Axes3 axes3(const Dims& values, int64_t fill) {
  IOS_ASSERT(values.size() <= 3, "a window of {} spatial axes", values.size());
  Axes3 out{fill, fill, fill};
  const size_t lead = 3 - values.size();
  for (size_t a = 0; a < values.size(); ++a) out[lead + a] = values[a];
  return out;
}

Axes3 spatial3(const Shape& shape) {
  IOS_ASSERT(shape.size() >= 2 && shape.size() <= 5, "shape {} has no 1 to 3 spatial axes",
             to_string(shape));
  return axes3(Dims(shape.begin() + 2, shape.end()), 1);
}

Window3 window3(const Shape& x, const Shape& y, const Dims& kernel, const Dims& stride,
                const Dims& dilation, const Dims& pads) {
  const size_t rank = kernel.size();
  IOS_ASSERT(rank >= 1 && rank <= 3 && x.size() == rank + 2 && y.size() == rank + 2 &&
                 stride.size() == rank && dilation.size() == rank && pads.size() == 2 * rank,
             "window {} over {} -> {} with {} pads", to_string(kernel), to_string(x), to_string(y),
             pads.size());
  Window3 w;
  w.in = spatial3(x);
  w.out = spatial3(y);
  w.kernel = axes3(kernel, 1);
  w.stride = axes3(stride, 1);
  w.dilation = axes3(dilation, 1);
  const auto half = static_cast<std::ptrdiff_t>(rank);
  w.pad_begin = axes3(Dims(pads.begin(), pads.begin() + half), 0);
  w.pad_end = axes3(Dims(pads.begin() + half, pads.end()), 0);
  return w;
}

Window3 window3(const Shape& x, const Shape& y, const ConvAttrs& a) {
  return window3(x, y, a.kernel, a.stride, a.dilation, a.pads);
}

Window3 window3(const Shape& x, const Shape& y, const PoolAttrs& a) {
  return window3(x, y, a.kernel, a.stride, a.dilation, a.pads);
}

}  // namespace ios::ir
