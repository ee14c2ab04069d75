// Tensor views for the CPU kernels: a pointer plus the strided layout of
// exec/region.h (row-major within each item of the first dimension, its own
// stride between items). The storage plan decides the layouts; a kernel
// writing a channel slice of a concatenation or of a merged convolution's
// output receives a view with a larger batch stride.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "exec/region.h"
#include "ir/graph.h"

namespace ios::cpu {

template <typename T>
struct BasicView : exec::StridedShape {
  T* data = nullptr;

  BasicView() = default;
  BasicView(T* d, ir::Shape s, int64_t stride)
      : exec::StridedShape{std::move(s), stride}, data(d) {}
  // A dense view.
  BasicView(T* d, ir::Shape s) : exec::StridedShape(exec::dense_layout(s)), data(d) {}
  // A mutable view converts to a read-only one.
  template <typename U>
  requires std::is_same_v<T, const U> BasicView(const BasicView<U>& other)
      : exec::StridedShape(other), data(other.data) {}

  T* item(int64_t n) const { return data + n * batch_stride; }
};

using View = BasicView<float>;
using ConstView = BasicView<const float>;

}  // namespace ios::cpu
