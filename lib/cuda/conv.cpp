#include "cuda/conv.h"

#include <fmt/format.h>

#include <climits>
#include <map>
#include <mutex>

#include "core/error.h"
#include "core/log.h"
#include "cuda/check.h"
#include "cuda/operations.h"

namespace ios::cuda {
namespace {

int to_int(int64_t v, const char* what) {
  IOS_ASSERT(v >= 0 && v <= INT_MAX, "{} = {} does not fit cuDNN's int parameters", what, v);
  return static_cast<int>(v);
}

void set_tensor(cudnnTensorDescriptor_t desc, int64_t n, int64_t c, int64_t h, int64_t w, int64_t batch_stride) {
  IOS_CUDNN_CALL(cudnnSetTensor4dDescriptorEx(desc, CUDNN_DATA_FLOAT, to_int(n, "n"), to_int(c, "c"), to_int(h, "h"),
                                              to_int(w, "w"), to_int(batch_stride, "batch stride"),
                                              to_int(h * w, "channel stride"), to_int(w, "row stride"), 1));
}

std::mutex cache_mutex;
std::map<std::string, ConvChoice>& cache() {
  static std::map<std::string, ConvChoice> choices;
  return choices;
}

bool tensor_op(cudnnMathType_t math) {
  return math == CUDNN_TENSOR_OP_MATH || math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

// Runs the call the engine will make, on scratch memory; false when cuDNN
// rejects it (any status but success).
bool try_call(Context& ctx, const ConvShape& s, const ConvDescriptors& d, cudnnConvolutionFwdAlgo_t algo,
              size_t workspace, bool fused, void* x, void* w, void* y, void* z, void* bias, void* ws) {
  const float one = 1.0f, zero = 0.0f;
  cudnnStatus_t status;
  if (fused) {
    const float alpha2 = s.has_z ? 1.0f : 0.0f;
    status = cudnnConvolutionBiasActivationForward(ctx.cudnn(0), &one, d.x.get(), x, d.w.get(), w, d.conv.get(), algo,
                                                   ws, workspace, &alpha2, s.has_z ? d.z.get() : d.y.get(),
                                                   s.has_z ? z : y, d.bias.get(), bias, d.relu.get(), d.y.get(), y);
  } else {
    status = cudnnConvolutionForward(ctx.cudnn(0), &one, d.x.get(), x, d.w.get(), w, d.conv.get(), algo, ws,
                                     workspace, &zero, d.y.get(), y);
  }
  IOS_CUDA_CALL(cudaStreamSynchronize(ctx.stream(0)));
  return status == CUDNN_STATUS_SUCCESS;
}

}  // namespace

ConvShape conv_shape(const Program& p, const ConvOp& op) {
  const Value& x = p.values.at(static_cast<size_t>(op.x));
  const Value& y = p.values.at(static_cast<size_t>(op.y));
  const Constant& w = p.constants.at(static_cast<size_t>(op.weight));
  IOS_ASSERT(x.shape.size() == 4 && y.shape.size() == 4 && w.shape.size() == 4, "convolution '{}' is not 2-D",
             op.label);
  ConvShape s;
  s.n = x.shape[0], s.c = x.shape[1], s.h = x.shape[2], s.w = x.shape[3];
  s.k = w.shape[0], s.r = w.shape[2], s.s = w.shape[3];
  s.oh = y.shape[2], s.ow = y.shape[3];
  s.pad_h = op.pad[0], s.pad_w = op.pad[1];
  s.stride_h = op.stride[0], s.stride_w = op.stride[1];
  s.dil_h = op.dilation[0], s.dil_w = op.dilation[1];
  s.group = op.group;
  s.x_batch_stride = x.batch_stride;
  s.y_batch_stride = y.batch_stride;
  s.fused = op.fused;
  s.has_z = op.z >= 0;
  if (s.has_z) s.z_batch_stride = p.values.at(static_cast<size_t>(op.z)).batch_stride;
  s.x_align = pointer_alignment(x.offset);
  s.y_align = pointer_alignment(y.offset);
  s.z_align = s.has_z ? pointer_alignment(p.values.at(static_cast<size_t>(op.z)).offset) : kBufferAlignment;
  return s;
}

std::string ConvShape::key() const {
  return fmt::format("n{}c{}h{}w{}|k{}r{}s{}|o{}x{}|p{},{}|s{},{}|d{},{}|g{}|bs{},{},{}|f{}z{}|a{},{},{}", n, c, h, w, k,
                     r, s, oh, ow, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, group, x_batch_stride,
                     y_batch_stride, z_batch_stride, fused ? 1 : 0, has_z ? 1 : 0, x_align, y_align, z_align);
}

ConvDescriptors make_conv_descriptors(const ConvShape& s, cudnnMathType_t math) {
  ConvDescriptors d;
  d.x = make_tensor_desc();
  d.y = make_tensor_desc();
  d.z = make_tensor_desc();
  d.bias = make_tensor_desc();
  d.w = make_filter_desc();
  d.conv = make_conv_desc();
  d.relu = make_activation_desc();
  set_tensor(d.x.get(), s.n, s.c, s.h, s.w, s.x_batch_stride);
  set_tensor(d.y.get(), s.n, s.k, s.oh, s.ow, s.y_batch_stride);
  set_tensor(d.z.get(), s.n, s.k, s.oh, s.ow, s.has_z ? s.z_batch_stride : s.y_batch_stride);
  IOS_CUDNN_CALL(cudnnSetTensor4dDescriptor(d.bias.get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, to_int(s.k, "k"), 1, 1));
  IOS_CUDNN_CALL(cudnnSetFilter4dDescriptor(d.w.get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, to_int(s.k, "k"),
                                            to_int(s.c / s.group, "c/group"), to_int(s.r, "r"), to_int(s.s, "s")));
  IOS_CUDNN_CALL(cudnnSetConvolution2dDescriptor(d.conv.get(), to_int(s.pad_h, "pad"), to_int(s.pad_w, "pad"),
                                                 to_int(s.stride_h, "stride"), to_int(s.stride_w, "stride"),
                                                 to_int(s.dil_h, "dilation"), to_int(s.dil_w, "dilation"),
                                                 CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  IOS_CUDNN_CALL(cudnnSetConvolutionGroupCount(d.conv.get(), to_int(s.group, "group")));
  IOS_CUDNN_CALL(cudnnSetConvolutionMathType(d.conv.get(), math));
  IOS_CUDNN_CALL(cudnnSetActivationDescriptor(d.relu.get(), CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
  return d;
}

const char* conv_algo_name(cudnnConvolutionFwdAlgo_t algo) {
  switch (algo) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "implicit_gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "implicit_precomp_gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "direct";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "fft";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "fft_tiling";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "winograd";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "winograd_nonfused";
    default: return "unknown";
  }
}

ConvChoice choose_conv(Context& ctx, const ConvShape& shape, const std::string& label) {
  const bool fp32 = ctx.precision() == Precision::kFp32;
  const std::string key = fmt::format("{}|{}|{}|{}", ctx.key(), precision_name(ctx.precision()),
                                      ctx.workspace_limit(), shape.key());
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    auto it = cache().find(key);
    if (it != cache().end()) return it->second;
  }
  const size_t limit = ctx.workspace_limit();
  const int64_t x_dense_bs = shape.c * shape.h * shape.w;
  const int64_t y_dense_bs = shape.k * shape.oh * shape.ow;
  std::string last_problem = "cuDNN returned no algorithm";

  // First the layouts the engine wants; then dense staging for strided ones.
  for (int attempt = 0; attempt < 2; ++attempt) {
    ConvShape s = shape;
    if (attempt == 1) {
      if (shape.x_batch_stride == x_dense_bs && shape.y_batch_stride == y_dense_bs) break;
      // Only a strided tensor is staged, into a buffer of its own.
      if (s.x_batch_stride != x_dense_bs) s.x_align = kBufferAlignment;
      if (s.y_batch_stride != y_dense_bs) s.y_align = kBufferAlignment;
      s.x_batch_stride = x_dense_bs;
      s.y_batch_stride = y_dense_bs;
    }
    ConvDescriptors d = make_conv_descriptors(s, fp32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH);
    auto bytes = [](int64_t elements) { return static_cast<size_t>(std::max<int64_t>(elements, 1)) * sizeof(float); };
    // cuDNN's choice depends on pointer alignment (vectorised kernels need 16
    // bytes or more): search on scratch pointers aligned exactly like the
    // tensors the engine will pass (slices of concat and merge buffers may
    // be only 4-byte aligned).
    auto aligned = [&](int slot, size_t size, int64_t alignment) {
      char* base = static_cast<char*>(ctx.scratch(slot, size + kBufferAlignment));
      return static_cast<void*>(base + alignment % kBufferAlignment);
    };
    void* x = aligned(0, bytes((s.n - 1) * s.x_batch_stride + x_dense_bs), s.x_align);
    void* w = ctx.scratch(1, bytes(s.k * (s.c / s.group) * s.r * s.s));
    void* y = aligned(2, bytes((s.n - 1) * s.y_batch_stride + y_dense_bs), s.y_align);
    void* z = aligned(3, bytes(s.has_z ? (s.n - 1) * s.z_batch_stride + y_dense_bs : 1), s.z_align);
    void* bias = ctx.scratch(4, bytes(s.k));
    void* ws = ctx.scratch(5, std::max<size_t>(limit, 1));

    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int returned = 0;
    const cudnnStatus_t status =
        cudnnFindConvolutionForwardAlgorithmEx(ctx.cudnn(0), d.x.get(), x, d.w.get(), w, d.conv.get(), d.y.get(), y,
                                               CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf, ws, limit);
    IOS_CUDA_CALL(cudaStreamSynchronize(ctx.stream(0)));
    if (status != CUDNN_STATUS_SUCCESS) {
      last_problem = fmt::format("cudnnFindConvolutionForwardAlgorithmEx: {}", cudnnGetErrorString(status));
      logger("cuda")->debug("convolution '{}' ({}): {}", label, s.key(), last_problem);
      continue;
    }
    std::optional<ConvChoice> plain;
    for (int i = 0; i < returned; ++i) {
      const cudnnConvolutionFwdAlgoPerf_t& p = perf[i];
      if (p.status != CUDNN_STATUS_SUCCESS || p.memory > limit) continue;
      if (fp32 && tensor_op(p.mathType)) continue;
      const cudnnMathType_t math = fp32 ? CUDNN_FMA_MATH : p.mathType;
      IOS_CUDNN_CALL(cudnnSetConvolutionMathType(d.conv.get(), math));
      size_t workspace = 0;
      if (cudnnGetConvolutionForwardWorkspaceSize(ctx.cudnn(0), d.x.get(), d.w.get(), d.conv.get(), d.y.get(), p.algo,
                                                  &workspace) != CUDNN_STATUS_SUCCESS) {
        continue;
      }
      workspace = std::max(workspace, p.memory);
      if (workspace > limit) continue;
      ConvChoice choice;
      choice.algo = p.algo;
      choice.math = math;
      choice.workspace = workspace;
      choice.x_dense = s.x_batch_stride != shape.x_batch_stride;
      choice.y_dense = s.y_batch_stride != shape.y_batch_stride;
      choice.time_ms = p.time;
      if (s.fused && try_call(ctx, s, d, p.algo, workspace, true, x, w, y, z, bias, ws)) {
        choice.fused = true;
        std::lock_guard<std::mutex> lock(cache_mutex);
        cache()[key] = choice;
        return choice;
      }
      if (!plain && try_call(ctx, s, d, p.algo, workspace, false, x, w, y, z, bias, ws)) {
        plain = choice;
        if (!s.fused) break;
      }
    }
    if (plain) {
      if (shape.fused) {
        logger("cuda")->debug("convolution '{}': cuDNN has no fused bias+ReLU for {}; using its own epilogue", label,
                              s.key());
      }
      std::lock_guard<std::mutex> lock(cache_mutex);
      cache()[key] = *plain;
      return *plain;
    }
    last_problem = fmt::format("none of the {} algorithms cuDNN returned runs{}", returned,
                               fp32 ? " in strict FP32" : "");
  }
  internal_error("no cuDNN algorithm for convolution '{}' ({}): {}", label, shape.key(), last_problem);
}

}  // namespace ios::cuda
