// The Binding and the launch helpers of launch.h.
#include "cuda/launch.h"

#include <algorithm>
#include <climits>

namespace ios::cuda {

Binding::Binding(const Program& program, const std::vector<float*>& values,
                 const std::vector<const float*>& constants, Uses uses)
    : program_(program), values_(values), constants_(constants), uses_(std::move(uses)) {}

float* Binding::out(int v) const {
  IOS_ASSERT(std::find(uses_.writes.begin(), uses_.writes.end(), v) != uses_.writes.end(),
             "an operation writes value {} ('{}') without declaring it", v, value(v).name);
  return values_.at(static_cast<size_t>(v));
}

const float* Binding::in(int v) const {
  const bool declared =
      std::find(uses_.reads.begin(), uses_.reads.end(), v) != uses_.reads.end() ||
      std::find(uses_.writes.begin(), uses_.writes.end(), v) != uses_.writes.end();
  IOS_ASSERT(declared, "an operation reads value {} ('{}') without declaring it", v, value(v).name);
  return values_.at(static_cast<size_t>(v));
}

const float* Binding::in(const Ref& r) const {
  if (r.is_value()) return in(r.index);
  if (r.is_constant()) return constant(r.index);
  return nullptr;
}

std::pair<ir::Shape, int64_t> Binding::layout(const Ref& r) const {
  if (r.is_value()) return {value(r.index).shape, value(r.index).batch_stride};
  const Constant& c = program_.constants.at(static_cast<size_t>(r.index));
  return {c.shape, item_of(c.shape)};
}

int64_t item_of(const ir::Shape& shape) {
  int64_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

std::vector<int64_t> strides_of(const ir::Shape& shape, int64_t batch_stride) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  if (!s.empty()) s[0] = batch_stride;
  return s;
}

void fill_dims(int64_t* out, const std::vector<int64_t>& v, const char* what) {
  IOS_ASSERT(static_cast<int>(v.size()) <= kernels::kMaxDims,
             "{} has rank {} (at most {} supported)", what, v.size(), kernels::kMaxDims);
  for (size_t i = 0; i < v.size(); ++i) out[i] = v[i];
}

void set_tensor4d(cudnnTensorDescriptor_t desc, int64_t n, int64_t c, int64_t h, int64_t w,
                  int64_t ns, int64_t cs, int64_t hs, int64_t ws) {
  auto i = [](int64_t v) {
    IOS_ASSERT(v >= 0 && v <= INT32_MAX, "tensor dimension {} does not fit cuDNN", v);
    return static_cast<int>(v);
  };
  IOS_CUDNN_CALL(cudnnSetTensor4dDescriptorEx(desc, CUDNN_DATA_FLOAT, i(n), i(c), i(h), i(w), i(ns),
                                              i(cs), i(hs), i(ws)));
}

}  // namespace ios::cuda
