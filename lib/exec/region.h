// The one tensor layout both backends use for activations.
//
// A float32 tensor is laid out row-major within each item of its first
// dimension, with its own stride between items (StridedShape). A dense
// tensor has batch_stride == item_size(); a channel slice [c0, c0 + C) of a
// larger NCHW tensor with Ctot channels starts c0*H*W elements later and has
// batch_stride Ctot*H*W. That is how a producer writes straight into its
// slice of a concatenation (zero-copy concat) and how a merged convolution's
// members find their channels of the merged output. A slice of the last
// axis (a merged matrix product's member) has a stride inside each item and
// is not such a layout: the backends copy those columns out instead.
//
// A Region places such a tensor in a storage of the storage plan
// (storage_plan.h). The backends add where the storage is: cpu::View a
// pointer, cuda::Value an arena buffer index.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace ios::exec {

struct StridedShape {
  ir::Shape shape;
  int64_t batch_stride = 0;  // elements between item n and item n+1 of dim 0

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
  // Element strides of every dimension (dense inside an item).
  std::vector<int64_t> strides() const {
    std::vector<int64_t> s(shape.size(), 1);
    for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
    if (!s.empty()) s[0] = batch_stride;
    return s;
  }
  // Elements from the first to one past the last element.
  int64_t extent() const { return size() == 0 ? 0 : (batch() - 1) * batch_stride + item_size(); }
};

// Where an activation lives: `offset` elements into storage `storage`.
struct Region : StridedShape {
  int storage = -1;
  int64_t offset = 0;

  bool placed() const { return storage >= 0; }
};

// The dense layout of `shape`.
inline StridedShape dense_layout(const ir::Shape& shape) {
  StridedShape s{shape, 0};
  s.batch_stride = s.item_size();
  return s;
}

}  // namespace ios::exec
