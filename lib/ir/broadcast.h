// Constants that broadcast to a shape without growing it: LayerNormalization's
// Scale and B (aligned on the right with the normalized dims, leading dims of
// 1 allowed). Shared by its attribute parser and shape function, the import
// pass that fuses PyTorch's decomposition, and the backends' kernels (which
// take such a constant expanded to one value per element).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace ios::ir {

// Whether a parameter of shape `p` broadcasts to `dims` without growing them.
inline bool broadcasts_to(const Shape& p, const Shape& dims) {
  for (size_t k = 0; k < p.size(); ++k) {
    const int64_t pd = p[p.size() - 1 - k];
    if (k >= dims.size()) {
      if (pd != 1) return false;
      continue;
    }
    const int64_t d = dims[dims.size() - 1 - k];
    if (pd != d && pd != 1) return false;
  }
  return true;
}

// `values` (shape `p`, broadcastable to `dims`) as one value per element of
// `dims`, row-major.
inline std::vector<float> expand_to(const std::vector<float>& values, const Shape& p,
                                    const Shape& dims) {
  const size_t rank = dims.size();
  // Element strides of p over dims (0 where p broadcasts).
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t k = 0; k < p.size() && k < rank; ++k) {
    const size_t pd = p.size() - 1 - k, d = rank - 1 - k;
    if (p[pd] != 1) strides[d] = stride;
    stride *= p[pd];
  }
  std::vector<float> out(static_cast<size_t>(num_elements(dims)));
  std::vector<int64_t> index(rank, 0);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t at = 0;
    for (size_t d = 0; d < rank; ++d) at += index[d] * strides[d];
    out[i] = values.at(static_cast<size_t>(at));
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

}  // namespace ios::ir
