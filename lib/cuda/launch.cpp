// The Binding and the launch helpers of launch.h.
#include "cuda/launch.h"

#include <algorithm>
#include <climits>

namespace ios::cuda {

Binding::Binding(const Program& program, const std::vector<void*>& values,
                 const std::vector<const void*>& constants, Uses uses)
    : program_(program), values_(values), constants_(constants), uses_(std::move(uses)) {}

void* Binding::out(int v) const {
  IOS_ASSERT(std::find(uses_.writes.begin(), uses_.writes.end(), v) != uses_.writes.end(),
             "an operation writes value {} ('{}') without declaring it", v, value(v).name);
  return values_.at(static_cast<size_t>(v));
}

const void* Binding::in(int v) const {
  const bool declared =
      std::find(uses_.reads.begin(), uses_.reads.end(), v) != uses_.reads.end() ||
      std::find(uses_.writes.begin(), uses_.writes.end(), v) != uses_.writes.end();
  IOS_ASSERT(declared, "an operation reads value {} ('{}') without declaring it", v, value(v).name);
  return values_.at(static_cast<size_t>(v));
}

const void* Binding::in(const Ref& r) const {
  if (r.is_value()) return in(r.index);
  if (r.is_constant()) return constant(r.index);
  return nullptr;
}

ir::ElementType Binding::type(const Ref& r) const {
  if (r.is_value()) return type(r.index);
  if (r.is_constant()) return program_.constants.at(static_cast<size_t>(r.index)).type;
  return ir::ElementType::kFloat32;
}

std::pair<ir::Shape, int64_t> Binding::layout(const Ref& r) const {
  if (r.is_value()) return {value(r.index).shape, value(r.index).batch_stride};
  const Constant& c = program_.constants.at(static_cast<size_t>(r.index));
  return {c.shape, item_of(c.shape)};
}

size_t upload_constant(void* dst, const Constant& c, cudaStream_t stream) {
  const auto bytes = static_cast<size_t>(c.bytes());
  if (c.type == ir::ElementType::kFloat32) {
    IOS_CUDA_CALL(cudaMemcpyAsync(dst, c.data->data(), bytes, cudaMemcpyHostToDevice, stream));
    return bytes;
  }
  std::vector<unsigned char> bits(bytes);
  const auto size = static_cast<size_t>(ir::bytes_of(c.type));
  for (size_t i = 0; i < c.data->size(); ++i) ir::store_element(bits.data() + i * size, (*c.data)[i], c.type);
  // From pageable memory: the copy is staged before the call returns, so
  // `bits` may go (CUDA's documented behaviour for pageable host-to-device
  // copies); a synchronisation makes that explicit at no real cost (weights
  // are uploaded once, at construction).
  IOS_CUDA_CALL(cudaMemcpyAsync(dst, bits.data(), bytes, cudaMemcpyHostToDevice, stream));
  IOS_CUDA_CALL(cudaStreamSynchronize(stream));
  return bytes;
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
                  int64_t ns, int64_t cs, int64_t hs, int64_t ws, ir::ElementType type) {
  auto i = [](int64_t v) {
    IOS_ASSERT(v >= 0 && v <= INT32_MAX, "tensor dimension {} does not fit cuDNN", v);
    return static_cast<int>(v);
  };
  IOS_CUDNN_CALL(cudnnSetTensor4dDescriptorEx(desc, cudnn_type(type), i(n), i(c), i(h), i(w), i(ns),
                                              i(cs), i(hs), i(ws)));
}

void set_tensor_nd(cudnnTensorDescriptor_t desc, const ir::Shape& dims, int64_t batch_stride,
                   ir::ElementType type) {
  IOS_ASSERT(dims.size() >= 4 && dims.size() <= 5, "a cuDNN tensor of rank {} ({})", dims.size(),
             ir::to_string(dims));
  auto i = [](int64_t v) {
    IOS_ASSERT(v >= 0 && v <= INT32_MAX, "tensor dimension {} does not fit cuDNN", v);
    return static_cast<int>(v);
  };
  int d[5] = {}, s[5] = {};
  int64_t stride = 1;
  for (size_t a = dims.size(); a-- > 1;) {
    d[a] = i(dims[a]);
    s[a] = i(stride);
    stride *= dims[a];
  }
  d[0] = i(dims[0]);
  s[0] = i(batch_stride);
  IOS_CUDNN_CALL(
      cudnnSetTensorNdDescriptor(desc, cudnn_type(type), static_cast<int>(dims.size()), d, s));
}

ir::Shape cudnn_dims(const ir::Shape& shape) {
  IOS_ASSERT(shape.size() >= 3 && shape.size() <= 5,
             "a tensor of shape {} has no 1 to 3 spatial axes", ir::to_string(shape));
  if (shape.size() == 3) return {shape[0], shape[1], 1, shape[2]};
  return shape;
}

ir::Dims cudnn_axes(const ir::Dims& values, int64_t fill) {
  IOS_ASSERT(!values.empty() && values.size() <= 3, "a window attribute of {} axes", values.size());
  if (values.size() == 1) return {fill, values[0]};
  return values;
}

const void* offset_ptr(const void* p, int64_t elements, ir::ElementType type) {
  return static_cast<const char*>(p) + elements * ir::bytes_of(type);
}

void* offset_ptr(void* p, int64_t elements, ir::ElementType type) {
  return static_cast<char*>(p) + elements * ir::bytes_of(type);
}

}  // namespace ios::cuda
