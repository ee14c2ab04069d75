#include "cuda/runtime.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <string>
#include <utility>

#include "core/error.h"
#include "core/log.h"
#include "cuda/check.h"
#include "cuda/kernels.h"
#include "exec/memory_layout.h"

namespace ios::cuda {
namespace {

constexpr int64_t kAlignment = kBufferAlignment;  // bytes; cuDNN and vector loads like it
static_assert(kernels::kMaxEwSteps == kMaxEwStepsPerOp, "the lowering splits element-wise chains at the kernel's limit");

int64_t item_of(const ir::Shape& shape) {
  int64_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

// Element strides of a tensor dense inside each item, `batch_stride` apart.
std::vector<int64_t> strides_of(const ir::Shape& shape, int64_t batch_stride) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  if (!s.empty()) s[0] = batch_stride;
  return s;
}

void fill_dims(int64_t* out, const std::vector<int64_t>& v, const char* what) {
  IOS_ASSERT(static_cast<int>(v.size()) <= kernels::kMaxDims, "{} has rank {} (at most {} supported)", what, v.size(),
             kernels::kMaxDims);
  for (size_t i = 0; i < v.size(); ++i) out[i] = v[i];
}

// How an operand of `shape` (stored dense per item, `batch_stride` apart) is
// read when broadcast to `out` (ONNX rules: right-aligned, size-1 stretches).
kernels::EwOperand make_operand(const float* ptr, const ir::Shape& shape, int64_t batch_stride, const ir::Shape& out) {
  kernels::EwOperand op;
  op.ptr = ptr;
  op.batch_stride = batch_stride;
  if (shape == out) {
    op.mode = kernels::kFull;
    return op;
  }
  if (ir::num_elements(shape) == 1) {
    op.mode = kernels::kScalar;
    return op;
  }
  const size_t rank = out.size();
  IOS_ASSERT(shape.size() <= rank, "operand of rank {} broadcast to rank {}", shape.size(), rank);
  const size_t lead = rank - shape.size();
  ir::Shape padded(lead, 1);
  padded.insert(padded.end(), shape.begin(), shape.end());
  bool rest_one = true;
  for (size_t d = 2; d < rank; ++d) rest_one &= padded[d] == 1;
  if (rank >= 2 && rest_one && padded[1] == out[1]) {
    if (padded[0] == 1) {
      op.mode = kernels::kChannel;
      return op;
    }
    if (padded[0] == out[0] && lead == 0) {
      op.mode = kernels::kBatchChannel;
      return op;
    }
  }
  op.mode = kernels::kGeneric;
  const std::vector<int64_t> real = strides_of(shape, batch_stride);
  for (size_t d = 0; d < rank; ++d) {
    if (d < lead) {
      op.strides[d] = 0;
    } else {
      const size_t rd = d - lead;
      op.strides[d] = (shape[rd] == 1 && out[d] != 1) ? 0 : real[rd];
    }
  }
  return op;
}

kernels::EwParams ew_frame(const ir::Shape& out, float* y, int64_t y_batch_stride) {
  kernels::EwParams p;
  ir::Shape shape = out.empty() ? ir::Shape{1} : out;
  p.rank = static_cast<int>(shape.size());
  fill_dims(p.dims, shape, "an element-wise output");
  p.total = ir::num_elements(shape);
  p.item = item_of(shape);
  p.channels = shape.size() >= 2 ? std::max<int64_t>(shape[1], 1) : 1;
  p.hw = p.item / p.channels;
  p.y = y;
  p.y_batch_stride = y_batch_stride;
  return p;
}

void add_step(kernels::EwParams& p, ir::OpKind kind, float p0, float p1, const kernels::EwOperand* operand,
              bool operand_first = false) {
  IOS_ASSERT(p.num_steps < kernels::kMaxEwSteps, "element-wise chain longer than {}", kernels::kMaxEwSteps);
  kernels::EwStepParams& s = p.steps[p.num_steps++];
  s.kind = kind;
  s.p0 = p0;
  s.p1 = p1;
  s.operand_first = operand_first;
  if (operand != nullptr) {
    s.operand = p.num_operands;
    p.operands[p.num_operands++] = *operand;
    p.generic |= operand->mode == kernels::kGeneric;
  }
}

void set_tensor4d(cudnnTensorDescriptor_t desc, int64_t n, int64_t c, int64_t h, int64_t w, int64_t ns, int64_t cs,
                  int64_t hs, int64_t ws) {
  auto i = [](int64_t v) {
    IOS_ASSERT(v >= 0 && v <= INT32_MAX, "tensor dimension {} does not fit cuDNN", v);
    return static_cast<int>(v);
  };
  IOS_CUDNN_CALL(cudnnSetTensor4dDescriptorEx(desc, CUDNN_DATA_FLOAT, i(n), i(c), i(h), i(w), i(ns), i(cs), i(hs), i(ws)));
}

// --- Operations --------------------------------------------------------------

class ElementwiseOp final : public GpuOp {
 public:
  explicit ElementwiseOp(const kernels::EwParams& p, std::string what) : p_(p), what_(std::move(what)) {}
  void issue(const IssueContext& c) const override { IOS_CUDA_CALL(kernels::elementwise(p_, c.stream)); }
  std::string describe() const override { return what_; }

 private:
  kernels::EwParams p_;
  std::string what_;
};

class CopyKernelOp final : public GpuOp {
 public:
  // Coalesces dimensions, then picks cudaMemcpyAsync, cudaMemcpy2DAsync or
  // the strided copy kernel.
  CopyKernelOp(const float* src, float* dst, std::vector<int64_t> dims, std::vector<int64_t> ss,
               std::vector<int64_t> ds) {
    std::vector<int64_t> d2, s2, t2;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] == 1) continue;
      d2.push_back(dims[i]), s2.push_back(ss[i]), t2.push_back(ds[i]);
    }
    for (size_t i = d2.size(); i-- > 1;) {
      if (s2[i - 1] == s2[i] * d2[i] && t2[i - 1] == t2[i] * d2[i]) {
        d2[i - 1] *= d2[i];
        s2[i - 1] = s2[i];
        t2[i - 1] = t2[i];
        d2.erase(d2.begin() + static_cast<std::ptrdiff_t>(i));
        s2.erase(s2.begin() + static_cast<std::ptrdiff_t>(i));
        t2.erase(t2.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
    if (d2.empty()) d2 = {1}, s2 = {1}, t2 = {1};
    src_ = src;
    dst_ = dst;
    total_ = ir::num_elements(d2);
    if (d2.size() == 1 && s2[0] == 1 && t2[0] == 1) {
      kind_ = Kind::kLinear;
    } else if (d2.size() == 2 && s2[1] == 1 && t2[1] == 1 && s2[0] >= d2[1] && t2[0] >= d2[1]) {
      kind_ = Kind::kPitched;
      rows_ = d2[0], width_ = d2[1], src_pitch_ = s2[0], dst_pitch_ = t2[0];
    } else {
      kind_ = Kind::kKernel;
      p_.rank = static_cast<int>(d2.size());
      fill_dims(p_.dims, d2, "a copy");
      fill_dims(p_.src_strides, s2, "a copy");
      fill_dims(p_.dst_strides, t2, "a copy");
      p_.total = total_;
      p_.src = src;
      p_.dst = dst;
    }
  }
  void issue(const IssueContext& c) const override {
    switch (kind_) {
      case Kind::kLinear:
        IOS_CUDA_CALL(cudaMemcpyAsync(dst_, src_, static_cast<size_t>(total_) * sizeof(float),
                                      cudaMemcpyDeviceToDevice, c.stream));
        break;
      case Kind::kPitched:
        IOS_CUDA_CALL(cudaMemcpy2DAsync(dst_, static_cast<size_t>(dst_pitch_) * sizeof(float), src_,
                                        static_cast<size_t>(src_pitch_) * sizeof(float),
                                        static_cast<size_t>(width_) * sizeof(float), static_cast<size_t>(rows_),
                                        cudaMemcpyDeviceToDevice, c.stream));
        break;
      case Kind::kKernel: IOS_CUDA_CALL(kernels::copy(p_, c.stream)); break;
    }
  }
  std::string describe() const override {
    const char* how = kind_ == Kind::kLinear ? "memcpy" : kind_ == Kind::kPitched ? "memcpy2D" : "copy kernel";
    return fmt::format("{} ({} elements)", how, total_);
  }

 private:
  enum class Kind { kLinear, kPitched, kKernel };
  Kind kind_ = Kind::kKernel;
  const float* src_ = nullptr;
  float* dst_ = nullptr;
  int64_t total_ = 0, rows_ = 0, width_ = 0, src_pitch_ = 0, dst_pitch_ = 0;
  kernels::CopyParams p_;
};

class ConvolutionOp final : public GpuOp {
 public:
  ConvolutionOp(const ConvShape& requested, const ConvChoice& choice, const float* x, const float* w,
                const float* bias, const float* z, float* y, float* x_stage, float* y_stage, std::string label)
      : choice_(choice), label_(std::move(label)) {
    shape_ = requested;
    const int64_t x_dense = requested.c * requested.h * requested.w;
    const int64_t y_dense = requested.k * requested.oh * requested.ow;
    if (choice.x_dense && requested.x_batch_stride != x_dense) {
      IOS_ASSERT(x_stage != nullptr, "convolution '{}' needs a staging buffer for x", label_);
      stage_x_ = std::make_unique<CopyKernelOp>(x, x_stage, std::vector<int64_t>{requested.n, x_dense},
                                                std::vector<int64_t>{requested.x_batch_stride, 1},
                                                std::vector<int64_t>{x_dense, 1});
      x = x_stage;
      shape_.x_batch_stride = x_dense;
    }
    float* out = y;
    if (choice.y_dense && requested.y_batch_stride != y_dense) {
      IOS_ASSERT(y_stage != nullptr, "convolution '{}' needs a staging buffer for y", label_);
      stage_y_ = std::make_unique<CopyKernelOp>(y_stage, y, std::vector<int64_t>{requested.n, y_dense},
                                                std::vector<int64_t>{y_dense, 1},
                                                std::vector<int64_t>{requested.y_batch_stride, 1});
      out = y_stage;
      shape_.y_batch_stride = y_dense;
    }
    d_ = make_conv_descriptors(shape_, choice.math);
    x_ = x, w_ = w, bias_ = bias, z_ = z, y_ = out;
    if (requested.fused && !choice.fused) {
      // cuDNN rejected the fused call: bias (+ z) + ReLU by our own kernel.
      const ir::Shape s{shape_.n, shape_.k, shape_.oh, shape_.ow};
      epilogue_ = ew_frame(s, out, shape_.y_batch_stride);
      epilogue_.x = make_operand(out, s, shape_.y_batch_stride, s);
      const kernels::EwOperand b = make_operand(bias, {1, shape_.k, 1, 1}, shape_.k, s);
      add_step(epilogue_, ir::OpKind::kAdd, 0, 0, &b);
      if (requested.has_z) {
        const kernels::EwOperand zo = make_operand(z, s, requested.z_batch_stride, s);
        add_step(epilogue_, ir::OpKind::kAdd, 0, 0, &zo);
      }
      add_step(epilogue_, ir::OpKind::kRelu, 0, 0, nullptr);
      own_epilogue_ = true;
    }
  }

  void issue(const IssueContext& c) const override {
    if (stage_x_) stage_x_->issue(c);
    const float one = 1.0f, zero = 0.0f;
    if (choice_.fused) {
      const float alpha2 = shape_.has_z ? 1.0f : 0.0f;
      IOS_CUDNN_CALL(cudnnConvolutionBiasActivationForward(
          c.cudnn, &one, d_.x.get(), x_, d_.w.get(), w_, d_.conv.get(), choice_.algo, c.workspace, choice_.workspace,
          &alpha2, shape_.has_z ? d_.z.get() : d_.y.get(), shape_.has_z ? static_cast<const void*>(z_) : y_,
          d_.bias.get(), bias_, d_.relu.get(), d_.y.get(), y_));
    } else {
      IOS_CUDNN_CALL(cudnnConvolutionForward(c.cudnn, &one, d_.x.get(), x_, d_.w.get(), w_, d_.conv.get(),
                                             choice_.algo, c.workspace, choice_.workspace, &zero, d_.y.get(), y_));
      if (own_epilogue_) IOS_CUDA_CALL(kernels::elementwise(epilogue_, c.stream));
    }
    if (stage_y_) stage_y_->issue(c);
  }

  std::string describe() const override {
    return fmt::format("conv '{}' {}x{} {} -> {} algo {} ({}{}, ws {} KiB, cuDNN {:.3f} ms){}{}{}", label_, shape_.r,
                       shape_.s, shape_.c, shape_.k, conv_algo_name(choice_.algo),
                       choice_.math == CUDNN_FMA_MATH ? "fma" : "tensor-op allowed",
                       choice_.fused ? ", fused bias+relu" : "", choice_.workspace / 1024, choice_.time_ms,
                       own_epilogue_ ? " + own epilogue" : "", stage_x_ ? " + x staged" : "",
                       stage_y_ ? " + y staged" : "");
  }

 private:
  ConvShape shape_;
  ConvChoice choice_;
  ConvDescriptors d_;
  const float *x_ = nullptr, *w_ = nullptr, *bias_ = nullptr, *z_ = nullptr;
  float* y_ = nullptr;
  std::unique_ptr<CopyKernelOp> stage_x_, stage_y_;
  kernels::EwParams epilogue_;
  bool own_epilogue_ = false;
  std::string label_;
};

class CudnnPoolOp final : public GpuOp {
 public:
  CudnnPoolOp(const PoolOp& op, const Value& x, const Value& y, const float* xp, float* yp) : x_ptr_(xp), y_ptr_(yp) {
    const ir::Shape& xs = x.shape;
    const int64_t oh = y.shape.size() == 4 ? y.shape[2] : 1;
    const int64_t ow = y.shape.size() == 4 ? y.shape[3] : 1;
    x_ = make_tensor_desc();
    y_ = make_tensor_desc();
    pool_ = make_pool_desc();
    set_tensor4d(x_.get(), xs[0], xs[1], xs[2], xs[3], x.batch_stride, xs[2] * xs[3], xs[3], 1);
    set_tensor4d(y_.get(), xs[0], xs[1], oh, ow, y.batch_stride, oh * ow, ow, 1);
    const cudnnPoolingMode_t mode = op.mode == PoolOp::Mode::kMax ? CUDNN_POOLING_MAX
                                    : op.mode == PoolOp::Mode::kAverageIncludePad
                                        ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                        : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    IOS_CUDNN_CALL(cudnnSetPooling2dDescriptor(pool_.get(), mode, CUDNN_NOT_PROPAGATE_NAN,
                                               static_cast<int>(op.kernel[0]), static_cast<int>(op.kernel[1]),
                                               static_cast<int>(op.pads[0]), static_cast<int>(op.pads[1]),
                                               static_cast<int>(op.stride[0]), static_cast<int>(op.stride[1])));
    what_ = fmt::format("cuDNN {} pool {}x{}/{}", op.mode == PoolOp::Mode::kMax ? "max" : "average", op.kernel[0],
                        op.kernel[1], op.stride[0]);
  }
  void issue(const IssueContext& c) const override {
    const float one = 1.0f, zero = 0.0f;
    IOS_CUDNN_CALL(cudnnPoolingForward(c.cudnn, pool_.get(), &one, x_.get(), x_ptr_, &zero, y_.get(), y_ptr_));
  }
  std::string describe() const override { return what_; }

 private:
  TensorDesc x_, y_;
  PoolDesc pool_;
  const float* x_ptr_;
  float* y_ptr_;
  std::string what_;
};

class KernelPoolOp final : public GpuOp {
 public:
  explicit KernelPoolOp(const kernels::PoolParams& p) : p_(p) {}
  void issue(const IssueContext& c) const override { IOS_CUDA_CALL(kernels::pool2d(p_, c.stream)); }
  std::string describe() const override { return fmt::format("own pool {}x{}/{}", p_.kh, p_.kw, p_.sh); }

 private:
  kernels::PoolParams p_;
};

class SoftmaxGpuOp final : public GpuOp {
 public:
  SoftmaxGpuOp(const SoftmaxOp& op, const Value& x, const Value& y, const float* xp, float* yp) : x_ptr_(xp), y_ptr_(yp) {
    const ir::Shape& s = x.shape;
    const auto axis = static_cast<size_t>(op.axis);
    IOS_ASSERT(axis < s.size(), "softmax axis {} of rank {}", axis, s.size());
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < axis; ++d) outer *= s[d];
    for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
    const int64_t k = s[axis];
    // Softmax over "channels" of [outer, K, inner, 1]; with axis 1 the outer
    // dimension is the batch and may be strided.
    const int64_t xs = axis == 1 ? x.batch_stride : k * inner;
    const int64_t ys = axis == 1 ? y.batch_stride : k * inner;
    x_ = make_tensor_desc();
    y_ = make_tensor_desc();
    set_tensor4d(x_.get(), outer, k, inner, 1, xs, inner, 1, 1);
    set_tensor4d(y_.get(), outer, k, inner, 1, ys, inner, 1, 1);
  }
  void issue(const IssueContext& c) const override {
    const float one = 1.0f, zero = 0.0f;
    IOS_CUDNN_CALL(cudnnSoftmaxForward(c.cudnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, &one, x_.get(),
                                       x_ptr_, &zero, y_.get(), y_ptr_));
  }
  std::string describe() const override { return "cuDNN softmax"; }

 private:
  TensorDesc x_, y_;
  const float* x_ptr_;
  float* y_ptr_;
};

class GemmGpuOp final : public GpuOp {
 public:
  explicit GemmGpuOp(const kernels::GemmParams& p) : p_(p) {}
  void issue(const IssueContext& c) const override { IOS_CUDA_CALL(kernels::gemm(p_, c.stream)); }
  std::string describe() const override {
    return fmt::format("own gemm {}x{}x{} (batch {})", p_.m, p_.n, p_.k, p_.batch);
  }

 private:
  kernels::GemmParams p_;
};

// A launch of one of the backend's own kernels (cuda/kernels.h): its
// parameters, its launcher, and what plans and error messages call it.
template <typename Params, cudaError_t (*Launch)(const Params&, cudaStream_t)>
class OwnKernelGpuOp final : public GpuOp {
 public:
  OwnKernelGpuOp(const Params& p, std::string description) : p_(p), description_(std::move(description)) {}
  void issue(const IssueContext& c) const override {
    const cudaError_t status = Launch(p_, c.stream);
    if (status != cudaSuccess) detail::throw_cuda_error(status, description_.c_str(), __FILE__, __LINE__);
  }
  std::string describe() const override { return description_; }

 private:
  Params p_;
  std::string description_;
};

using PadGpuOp = OwnKernelGpuOp<kernels::PadParams, kernels::pad>;
using ReduceGpuOp = OwnKernelGpuOp<kernels::ReduceParams, kernels::reduce_mean>;
using ResizeGpuOp = OwnKernelGpuOp<kernels::ResizeParams, kernels::resize>;
using LayerNormGpuOp = OwnKernelGpuOp<kernels::LayerNormParams, kernels::layer_norm>;

int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

}  // namespace

Runtime::Runtime(Context& ctx, Program program, bool cuda_graph, DevicePool* pool)
    : ctx_(ctx), program_(std::move(program)) {
  Program& p = program_;
  IOS_CUDA_CALL(cudaSetDevice(ctx_.ordinal()));
  ctx_.ensure_streams(std::max(p.num_streams, 1));

  // 1. Algorithms (may add staging buffers) and workspace sizes per stream.
  std::vector<size_t> workspace(static_cast<size_t>(std::max(p.num_streams, 1)), 0);
  for (size_t l = 0; l < p.launches.size(); ++l) {
    for (size_t i = 0; i < p.launches[l].ops.size(); ++i) {
      auto* op = std::get_if<ConvOp>(&p.launches[l].ops[i]);
      if (op == nullptr) continue;
      const ConvShape shape = conv_shape(p, *op);
      const ConvChoice choice = choose_conv(ctx_, shape, op->label);
      conv_choices_[{static_cast<int>(l), i}] = choice;
      if (choice.x_dense && shape.x_batch_stride != shape.c * shape.h * shape.w) {
        const ir::Shape xs = p.values.at(static_cast<size_t>(op->x)).shape;
        op->x_dense = p.add_temp(op->label + ":x_dense", xs);
      }
      if (choice.y_dense && shape.y_batch_stride != shape.k * shape.oh * shape.ow) {
        const ir::Shape ys = p.values.at(static_cast<size_t>(op->y)).shape;
        op->y_dense = p.add_temp(op->label + ":y_dense", ys);
      }
      auto& ws = workspace.at(static_cast<size_t>(p.launches[l].stream));
      ws = std::max(ws, choice.workspace);
      ++stats_.convolutions;
      stats_.fused_convolutions += choice.fused ? 1 : 0;
    }
  }
  if (pool == nullptr) ctx_.release_scratch();  // a pool's next stage may search again
  for (size_t s = 0; s < workspace.size(); ++s) ctx_.ensure_workspace(static_cast<int>(s), workspace[s]);
  stats_.workspace_bytes = ctx_.total_workspace_bytes();

  // 2. Memory: buffers placed in one arena by liveness.
  const exec::HappensBefore order(static_cast<int>(p.launches.size()), std::max(p.num_streams, 1), p.num_events, p.steps);
  const exec::MemoryLayout layout = exec::plan_memory(p.memory_requests(), order, kAlignment);
  char* arena = nullptr;
  if (pool != nullptr) {
    arena = pool->arena(layout.total_bytes);
  } else {
    arena_ = DeviceBuffer(static_cast<size_t>(layout.total_bytes));
    arena = static_cast<char*>(arena_.get());
  }
  stats_.arena_bytes = static_cast<size_t>(layout.total_bytes);
  stats_.arena_unshared_bytes = static_cast<size_t>(layout.unshared_bytes);
  value_ptrs_.resize(p.values.size());
  for (size_t v = 0; v < p.values.size(); ++v) {
    const Value& value = p.values[v];
    char* base = arena + layout.offsets.at(static_cast<size_t>(value.buffer));
    value_ptrs_[v] = reinterpret_cast<float*>(base) + value.offset;
  }

  // 3. Weights: uploaded once, each constant aligned (or resident in the pool).
  int64_t weight_bytes = 0;
  for (const Constant& c : p.constants) {
    weight_bytes = align_up(weight_bytes + static_cast<int64_t>(c.data->size() * sizeof(float)), kAlignment);
  }
  stats_.weights_bytes = static_cast<size_t>(weight_bytes);
  if (pool != nullptr) {
    const_ptrs_ = pool->weights(p.constants, ctx_.stream(0));
  } else {
    weights_ = DeviceBuffer(static_cast<size_t>(weight_bytes));
    const_ptrs_.resize(p.constants.size());
    int64_t offset = 0;
    for (size_t c = 0; c < p.constants.size(); ++c) {
      auto* dst = static_cast<char*>(weights_.get()) + offset;
      const_ptrs_[c] = reinterpret_cast<const float*>(dst);
      const size_t bytes = p.constants[c].data->size() * sizeof(float);
      IOS_CUDA_CALL(cudaMemcpyAsync(dst, p.constants[c].data->data(), bytes, cudaMemcpyHostToDevice, ctx_.stream(0)));
      offset = align_up(offset + static_cast<int64_t>(bytes), kAlignment);
    }
  }
  // Inputs start as fixed pseudo-random values so time() works before run():
  // made on the device for stage measurement (no host round trip per stage),
  // uploaded otherwise.
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const Value& v = p.values.at(static_cast<size_t>(p.inputs[i].second));
    if (pool != nullptr) {
      IOS_ASSERT(v.dense(), "stage input '{}' is not dense", v.name);
      IOS_CUDA_CALL(kernels::fill_uniform(value_ptr(p.inputs[i].second), v.size(), 0x9E3779B97F4A7C15ULL * (i + 1),
                                          ctx_.stream(0)));
      continue;
    }
    std::vector<float> data(static_cast<size_t>(v.size()));
    uint64_t state = 0x9E3779B97F4A7C15ULL * (i + 1);
    for (float& f : data) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      f = static_cast<float>((state >> 40) & 0xFFFFFF) / 16777216.0f * 2.0f - 1.0f;
    }
    upload_input(static_cast<int>(i), data.data());
    synchronize();  // `data` dies here
  }

  // 4. Operations, with their pointers.
  ops_.resize(p.launches.size());
  for (size_t l = 0; l < p.launches.size(); ++l) {
    for (size_t i = 0; i < p.launches[l].ops.size(); ++i) {
      ops_[l].push_back(make_op(p.launches[l].ops[i], static_cast<int>(l), i));
    }
  }

  // 5. Events, a validating plain run, and the graph.
  for (int e = 0; e < p.num_events; ++e) events_.push_back(make_event());
  fork_ = make_event();
  for (int s = 0; s < p.num_streams; ++s) joins_.push_back(make_event());
  // A plain run first: every cuDNN handle meets its calls outside capture, and
  // an error is reported with plain-launch context.
  issue();
  synchronize();
  if (cuda_graph) capture();
}

Runtime::~Runtime() {
  // Work may still be in flight when an exception unwinds; never throw here.
  if (ctx_.num_streams() > 0) IOS_CUDA_CALL_NOTHROW(cudaStreamSynchronize(ctx_.stream(0)));
}

const float* Runtime::ref_ptr(const Ref& r) const {
  if (r.is_value()) return value_ptr(r.index);
  if (r.is_constant()) return const_ptrs_.at(static_cast<size_t>(r.index));
  return nullptr;
}

std::unique_ptr<GpuOp> Runtime::make_op(const Op& any, int launch, size_t index) {
  const Program& p = program_;
  auto value = [&](int v) -> const Value& { return p.values.at(static_cast<size_t>(v)); };
  // Shape and batch stride of an operand.
  auto ref_layout = [&](const Ref& r) -> std::pair<ir::Shape, int64_t> {
    if (r.is_value()) return {value(r.index).shape, value(r.index).batch_stride};
    const Constant& c = p.constants.at(static_cast<size_t>(r.index));
    return {c.shape, item_of(c.shape)};
  };
  return std::visit(
      [&](const auto& op) -> std::unique_ptr<GpuOp> {
        using T = std::decay_t<decltype(op)>;
        if constexpr (std::is_same_v<T, ConvOp>) {
          const ConvChoice& choice = conv_choices_.at({launch, index});
          return std::make_unique<ConvolutionOp>(
              conv_shape(p, op), choice, value_ptr(op.x), const_ptrs_.at(static_cast<size_t>(op.weight)),
              op.bias >= 0 ? const_ptrs_.at(static_cast<size_t>(op.bias)) : nullptr,
              op.z >= 0 ? value_ptr(op.z) : nullptr, value_ptr(op.y), op.x_dense >= 0 ? value_ptr(op.x_dense) : nullptr,
              op.y_dense >= 0 ? value_ptr(op.y_dense) : nullptr, op.label);
        } else if constexpr (std::is_same_v<T, EwOp>) {
          const Value& y = value(op.y);
          kernels::EwParams params = ew_frame(y.shape, value_ptr(op.y), y.batch_stride);
          const auto [xs, xb] = ref_layout(op.x);
          params.x = make_operand(ref_ptr(op.x), xs, xb, y.shape.empty() ? ir::Shape{1} : y.shape);
          params.generic |= params.x.mode == kernels::kGeneric;
          for (const EwStep& s : op.steps) {
            if (s.operand) {
              const auto [os, ob] = ref_layout(s.operand);
              const kernels::EwOperand o = make_operand(ref_ptr(s.operand), os, ob, y.shape.empty() ? ir::Shape{1} : y.shape);
              add_step(params, s.kind, s.p0, s.p1, &o, s.operand_first);
            } else {
              add_step(params, s.kind, s.p0, s.p1, nullptr);
            }
          }
          return std::make_unique<ElementwiseOp>(
              params, fmt::format("elementwise x{} on {}{}", op.steps.size(), y.name, params.generic ? " (broadcast)" : ""));
        } else if constexpr (std::is_same_v<T, PoolOp>) {
          const Value& x = value(op.x);
          const Value& y = value(op.y);
          if (op.use_cudnn) return std::make_unique<CudnnPoolOp>(op, x, y, value_ptr(op.x), value_ptr(op.y));
          kernels::PoolParams pp;
          pp.n = x.shape[0], pp.c = x.shape[1], pp.h = x.shape[2], pp.w = x.shape[3];
          pp.oh = y.shape.size() == 4 ? y.shape[2] : 1;
          pp.ow = y.shape.size() == 4 ? y.shape[3] : 1;
          pp.kh = op.kernel[0], pp.kw = op.kernel[1], pp.sh = op.stride[0], pp.sw = op.stride[1];
          pp.pad_top = op.pads[0], pp.pad_left = op.pads[1], pp.pad_bottom = op.pads[2], pp.pad_right = op.pads[3];
          pp.mode = op.mode == PoolOp::Mode::kMax                 ? kernels::kPoolMax
                    : op.mode == PoolOp::Mode::kAverageIncludePad ? kernels::kPoolAverageInclude
                                                                  : kernels::kPoolAverageExclude;
          pp.x = value_ptr(op.x), pp.x_batch_stride = x.batch_stride;
          pp.y = value_ptr(op.y), pp.y_batch_stride = y.batch_stride;
          return std::make_unique<KernelPoolOp>(pp);
        } else if constexpr (std::is_same_v<T, SoftmaxOp>) {
          return std::make_unique<SoftmaxGpuOp>(op, value(op.x), value(op.y), value_ptr(op.x), value_ptr(op.y));
        } else if constexpr (std::is_same_v<T, GemmOp>) {
          kernels::GemmParams g;
          g.m = op.m, g.n = op.n, g.k = op.k, g.batch = op.batch;
          g.alpha = op.alpha, g.beta = op.beta;
          const Value& y = value(op.y);
          // Row stride of a 2-D operand as stored: its batch stride.
          const auto [as, ab] = ref_layout(op.a);
          const auto [bs, bb] = ref_layout(op.b);
          g.a = ref_ptr(op.a);
          g.b = ref_ptr(op.b);
          if (as.size() == 2) {
            g.a_row = op.trans_a ? 1 : ab;
            g.a_col = op.trans_a ? ab : 1;
          } else {
            g.a_row = op.k, g.a_col = 1, g.a_batch = op.a_batched ? op.m * op.k : 0;
          }
          if (bs.size() == 2) {
            g.b_row = op.trans_b ? 1 : bb;
            g.b_col = op.trans_b ? bb : 1;
          } else {
            g.b_row = op.n, g.b_col = 1, g.b_batch = op.b_batched ? op.k * op.n : 0;
          }
          if (op.c) {
            const auto [cs, cb] = ref_layout(op.c);
            g.c = ref_ptr(op.c);
            if (cs.size() == 2) {
              g.c_row = cs[0] == 1 && op.m != 1 ? 0 : cb;
              g.c_col = cs[1] == 1 && op.n != 1 ? 0 : 1;
            } else if (cs.size() == 1) {
              g.c_row = 0;
              g.c_col = cs[0] == 1 && op.n != 1 ? 0 : 1;
            }
          }
          g.y = value_ptr(op.y);
          if (y.shape.size() == 2) {
            g.y_row = y.batch_stride;
          } else {
            g.y_row = op.n, g.y_batch = op.m * op.n;
          }
          return std::make_unique<GemmGpuOp>(g);
        } else if constexpr (std::is_same_v<T, CopyOp>) {
          return std::make_unique<CopyKernelOp>(value_ptr(op.src) + op.src_offset, value_ptr(op.dst) + op.dst_offset,
                                                op.dims, op.src_strides, op.dst_strides);
        } else if constexpr (std::is_same_v<T, PadOp>) {
          const Value& x = value(op.x);
          const Value& y = value(op.y);
          kernels::PadParams pp;
          pp.rank = static_cast<int>(x.shape.size());
          fill_dims(pp.in_dims, x.shape, "a pad input");
          fill_dims(pp.out_dims, y.shape, "a pad output");
          fill_dims(pp.begin, op.begin, "pads");
          fill_dims(pp.src_strides, x.strides(), "a pad input");
          fill_dims(pp.dst_strides, y.strides(), "a pad output");
          pp.total = y.size();
          pp.src = value_ptr(op.x);
          pp.dst = value_ptr(op.y);
          pp.mode = op.mode == PadOp::Mode::kConstant ? kernels::kPadConstant
                    : op.mode == PadOp::Mode::kReflect ? kernels::kPadReflect
                                                       : kernels::kPadEdge;
          pp.value = op.value;
          return std::make_unique<PadGpuOp>(pp, "own pad");
        } else if constexpr (std::is_same_v<T, ResizeOp>) {
          const Value& x = value(op.x);
          const Value& y = value(op.y);
          IOS_ASSERT(x.shape.size() == 4 && y.shape.size() == 4, "resize of {} into {}", ir::to_string(x.shape),
                     ir::to_string(y.shape));
          kernels::ResizeParams rp;
          rp.n = x.shape[0], rp.c = x.shape[1], rp.h = x.shape[2], rp.w = x.shape[3];
          rp.oh = y.shape[2], rp.ow = y.shape[3];
          rp.mode = op.attrs.mode;
          rp.coordinates = op.attrs.coordinates;
          rp.nearest = op.attrs.nearest;
          rp.scale_h = op.attrs.scale[0];
          rp.scale_w = op.attrs.scale[1];
          rp.x = value_ptr(op.x);
          rp.x_batch_stride = x.batch_stride;
          rp.y = value_ptr(op.y);
          rp.y_batch_stride = y.batch_stride;
          return std::make_unique<ResizeGpuOp>(rp, "own resize");
        } else if constexpr (std::is_same_v<T, LayerNormOp>) {
          const Value& x = value(op.x);
          const Value& y = value(op.y);
          IOS_ASSERT(x.dense() && y.dense() && x.shape == y.shape,
                     "layer-norm of {} into {} needs dense values", ir::to_string(x.shape),
                     ir::to_string(y.shape));
          kernels::LayerNormParams lp;
          lp.cols = 1;
          for (size_t d = static_cast<size_t>(op.axis); d < x.shape.size(); ++d) {
            lp.cols *= x.shape[d];
          }
          lp.rows = lp.cols > 0 ? x.size() / lp.cols : 0;
          lp.x = value_ptr(op.x);
          lp.y = value_ptr(op.y);
          lp.scale = ref_ptr(op.scale);
          lp.bias = op.bias ? ref_ptr(op.bias) : nullptr;
          lp.epsilon = op.epsilon;
          return std::make_unique<LayerNormGpuOp>(
              lp, fmt::format("own layer-norm {} rows of {}", lp.rows, lp.cols));
        } else {
          static_assert(std::is_same_v<T, ReduceOp>);
          const Value& x = value(op.x);
          const Value& y = value(op.y);
          kernels::ReduceParams rp;
          rp.rank = static_cast<int>(x.shape.size());
          fill_dims(rp.dims, x.shape, "a reduce input");
          fill_dims(rp.x_strides, x.strides(), "a reduce input");
          const std::vector<int64_t> ys = y.strides();
          const bool keepdims = y.shape.size() == x.shape.size();
          size_t yd = 0;
          rp.out_total = 1;
          for (size_t d = 0; d < x.shape.size(); ++d) {
            const bool reduced = std::find(op.axes.begin(), op.axes.end(), static_cast<int64_t>(d)) != op.axes.end();
            rp.reduced[d] = reduced;
            if (reduced) {
              rp.count *= x.shape[d];
              rp.y_strides[d] = 0;
              if (keepdims) ++yd;
            } else {
              rp.out_total *= x.shape[d];
              rp.y_strides[d] = yd < ys.size() ? ys[yd] : 0;
              ++yd;
            }
          }
          rp.x = value_ptr(op.x);
          rp.y = value_ptr(op.y);
          return std::make_unique<ReduceGpuOp>(rp, "own reduce-mean");
        }
      },
      any);
}

void Runtime::upload_input(int index, const float* data) {
  const Value& v = program_.values.at(static_cast<size_t>(program_.inputs.at(static_cast<size_t>(index)).second));
  IOS_ASSERT(v.dense(), "input '{}' is not dense", v.name);
  IOS_CUDA_CALL(cudaMemcpyAsync(value_ptr(program_.inputs[static_cast<size_t>(index)].second), data,
                                static_cast<size_t>(v.size()) * sizeof(float), cudaMemcpyHostToDevice, ctx_.stream(0)));
}

void Runtime::download_output(int index, float* data) {
  const int id = program_.outputs.at(static_cast<size_t>(index)).second;
  const Value& v = program_.values.at(static_cast<size_t>(id));
  if (v.dense()) {
    IOS_CUDA_CALL(cudaMemcpyAsync(data, value_ptr(id), static_cast<size_t>(v.size()) * sizeof(float),
                                  cudaMemcpyDeviceToHost, ctx_.stream(0)));
  } else {
    const size_t item = static_cast<size_t>(v.item_size()) * sizeof(float);
    IOS_CUDA_CALL(cudaMemcpy2DAsync(data, item, value_ptr(id), static_cast<size_t>(v.batch_stride) * sizeof(float),
                                    item, static_cast<size_t>(v.batch()), cudaMemcpyDeviceToHost, ctx_.stream(0)));
  }
}

void Runtime::synchronize() { IOS_CUDA_CALL(cudaStreamSynchronize(ctx_.stream(0))); }

void Runtime::issue(const std::vector<Event>* launch_events) {
  const int streams = std::max(program_.num_streams, 1);
  cudaStream_t main = ctx_.stream(0);
  if (streams > 1) {
    // Fork: every stream starts after what stream 0 issued before (inputs).
    IOS_CUDA_CALL(cudaEventRecord(fork_.get(), main));
    for (int s = 1; s < streams; ++s) IOS_CUDA_CALL(cudaStreamWaitEvent(ctx_.stream(s), fork_.get(), 0));
  }
  for (const exec::Step& step : program_.steps) {
    cudaStream_t stream = ctx_.stream(step.stream);
    switch (step.kind) {
      case exec::Step::Kind::kLaunch: {
        const IssueContext c{stream, ctx_.cudnn(step.stream), ctx_.workspace(step.stream),
                             ctx_.workspace_bytes(step.stream)};
        const auto k = static_cast<size_t>(step.kernel);
        if (launch_events) IOS_CUDA_CALL(cudaEventRecord((*launch_events)[2 * k].get(), stream));
        for (const auto& op : ops_.at(k)) op->issue(c);
        if (launch_events) IOS_CUDA_CALL(cudaEventRecord((*launch_events)[2 * k + 1].get(), stream));
        break;
      }
      case exec::Step::Kind::kRecord:
        IOS_CUDA_CALL(cudaEventRecord(events_.at(static_cast<size_t>(step.event)).get(), stream));
        break;
      case exec::Step::Kind::kWait:
        IOS_CUDA_CALL(cudaStreamWaitEvent(stream, events_.at(static_cast<size_t>(step.event)).get(), 0));
        break;
    }
  }
  if (streams > 1) {
    // Join: stream 0 ends after every stream (required to end a capture).
    for (int s = 1; s < streams; ++s) {
      IOS_CUDA_CALL(cudaEventRecord(joins_.at(static_cast<size_t>(s)).get(), ctx_.stream(s)));
      IOS_CUDA_CALL(cudaStreamWaitEvent(main, joins_[static_cast<size_t>(s)].get(), 0));
    }
  }
}

void Runtime::capture() {
  cudaStream_t main = ctx_.stream(0);
  IOS_CUDA_CALL(cudaStreamBeginCapture(main, cudaStreamCaptureModeThreadLocal));
  try {
    issue();
  } catch (...) {
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(main, &broken);  // leave the stream usable; the error that matters is in flight
    if (broken != nullptr) cudaGraphDestroy(broken);
    cudaGetLastError();
    throw;
  }
  cudaGraph_t graph = nullptr;
  IOS_CUDA_CALL(cudaStreamEndCapture(main, &graph));
  graph_ = Graph(graph);
  cudaGraphExec_t exec = nullptr;
  IOS_CUDA_CALL(cudaGraphInstantiate(&exec, graph, 0));
  graph_exec_ = GraphExec(exec);
  IOS_CUDA_CALL(cudaGraphUpload(exec, main));
}

void Runtime::execute() {
  if (graph_exec_) {
    IOS_CUDA_CALL(cudaGraphLaunch(graph_exec_.get(), ctx_.stream(0)));
  } else {
    issue();
  }
}

std::string Runtime::describe() const {
  std::ostringstream out;
  const Program& p = program_;
  out << fmt::format("{} launches on {} stream(s), {} GPU operations; weights {:.1f} MiB, activation arena {:.1f} MiB "
                     "({:.1f} MiB without reuse), cuDNN workspaces {:.1f} MiB; {}\n",
                     p.launches.size(), p.num_streams, p.num_ops(), stats_.weights_bytes / 1048576.0,
                     stats_.arena_bytes / 1048576.0, stats_.arena_unshared_bytes / 1048576.0,
                     stats_.workspace_bytes / 1048576.0, graph_exec_ ? "CUDA graph" : "plain launches");
  for (size_t l = 0; l < p.launches.size(); ++l) {
    out << fmt::format("launch {} [stream {}] {}{}\n", l, p.launches[l].stream, p.launches[l].merged ? "merged " : "",
                       p.launches[l].name);
    for (const auto& op : ops_[l]) out << "    " << op->describe() << '\n';
  }
  return out.str();
}

}  // namespace ios::cuda
