// Tensor views for the CPU kernels.
//
// A view is a float32 tensor laid out row-major within each item of its first
// dimension, with its own stride between items. A dense tensor has
// batch_stride == item_size(); a channel slice [c0, c0 + C) of a larger NCHW
// buffer with Ctot channels is the view at data + c0*H*W with batch_stride
// Ctot*H*W. That is how producers write straight into their slice of a
// concatenation (zero-copy concat) and how a merged convolution's members read
// their channels of the merged output.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace ios::cpu {

template <typename T>
struct BasicView {
  T* data = nullptr;
  ir::Shape shape;
  int64_t batch_stride = 0;  // elements between item n and item n+1 of dim 0

  BasicView() = default;
  BasicView(T* d, ir::Shape s, int64_t stride) : data(d), shape(std::move(s)), batch_stride(stride) {}
  // A dense view.
  BasicView(T* d, ir::Shape s) : data(d), shape(std::move(s)) { batch_stride = item_size(); }
  // A mutable view converts to a read-only one.
  template <typename U>
    requires std::is_same_v<T, const U>
  BasicView(const BasicView<U>& other) : data(other.data), shape(other.shape), batch_stride(other.batch_stride) {}

  int rank() const { return static_cast<int>(shape.size()); }
  int64_t dim(int i) const { return shape.at(static_cast<size_t>(i)); }
  int64_t batch() const { return shape.empty() ? 1 : shape[0]; }
  int64_t item_size() const {
    int64_t n = 1;
    for (size_t i = 1; i < shape.size(); ++i) n *= shape[i];
    return n;
  }
  int64_t size() const { return ir::num_elements(shape); }
  bool dense() const { return batch() <= 1 || batch_stride == item_size(); }
  T* item(int64_t n) const { return data + n * batch_stride; }

  // Element strides of every dimension (dense inside an item).
  std::vector<int64_t> strides() const {
    std::vector<int64_t> s(shape.size(), 1);
    for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
    if (!s.empty()) s[0] = batch_stride;
    return s;
  }
};

using View = BasicView<float>;
using ConstView = BasicView<const float>;

}  // namespace ios::cpu
