#include "cuda/conv.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <climits>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "cuda/check.h"
#include "cuda/launch.h"
#include "cuda/operations.h"

namespace ios::cuda {
namespace {

int to_int(int64_t v, const char* what) {
  IOS_ASSERT(v >= 0 && v <= INT_MAX, "{} = {} does not fit cuDNN's int parameters", what, v);
  return static_cast<int>(v);
}

int64_t product(const ir::Dims& v) {
  int64_t p = 1;
  for (int64_t d : v) p *= d;
  return p;
}

std::vector<int> to_ints(const ir::Dims& v, const char* what) {
  std::vector<int> out;
  out.reserve(v.size());
  for (int64_t d : v) out.push_back(to_int(d, what));
  return out;
}

ir::Shape concat(std::initializer_list<int64_t> front, const ir::Dims& rest) {
  ir::Shape s(front);
  s.insert(s.end(), rest.begin(), rest.end());
  return s;
}

// A filter descriptor of `dims` ([out, in / group, spatial...]) in NCHW order.
void set_filter(cudnnFilterDescriptor_t desc, const ir::Shape& dims, ir::ElementType type) {
  const std::vector<int> d = to_ints(dims, "filter dimension");
  IOS_CUDNN_CALL(cudnnSetFilterNdDescriptor(desc, cudnn_type(type), CUDNN_TENSOR_NCHW,
                                            static_cast<int>(d.size()), d.data()));
}

// A cross-correlation over the spatial axes, computing in float for every
// element type (cuDNN's PSEUDO_HALF / PSEUDO_BFLOAT16 for 16-bit tensors).
void set_conv(cudnnConvolutionDescriptor_t desc, const ir::Dims& pad, const ir::Dims& stride,
              const ir::Dims& dilation, int64_t group, cudnnMathType_t math) {
  const std::vector<int> p = to_ints(pad, "pad"), s = to_ints(stride, "stride"),
                         d = to_ints(dilation, "dilation");
  IOS_CUDNN_CALL(cudnnSetConvolutionNdDescriptor(desc, static_cast<int>(p.size()), p.data(),
                                                 s.data(), d.data(), CUDNN_CROSS_CORRELATION,
                                                 CUDNN_DATA_FLOAT));
  IOS_CUDNN_CALL(cudnnSetConvolutionGroupCount(desc, to_int(group, "group")));
  IOS_CUDNN_CALL(cudnnSetConvolutionMathType(desc, math));
}

std::string join(const ir::Dims& v) { return fmt::format("{}", fmt::join(v, "x")); }

std::mutex cache_mutex;
std::map<std::string, ConvChoice>& cache() {
  static std::map<std::string, ConvChoice> choices;
  return choices;
}

std::map<std::string, ConvTransposeChoice>& transpose_cache() {
  static std::map<std::string, ConvTransposeChoice> choices;
  return choices;
}

bool tensor_op(cudnnMathType_t math) {
  return math == CUDNN_TENSOR_OP_MATH || math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

// Issues the call the engine will make on stream 0, on scratch memory;
// false when cuDNN rejects it (any status but success). No synchronisation:
// the caller times it or clears what a refusal left.
bool issue_call(Context& ctx, const ConvShape& s, const ConvDescriptors& d, cudnnConvolutionFwdAlgo_t algo,
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
  return status == CUDNN_STATUS_SUCCESS;
}

// Mean GPU time (ms) of `issue` on stream 0 over a few runs after an untimed
// one; nullopt when a run is refused.
std::optional<float> time_on_stream(Context& ctx, const std::function<bool()>& issue) {
  constexpr int kRuns = 3;
  if (!issue()) return std::nullopt;
  IOS_CUDA_CALL(cudaStreamSynchronize(ctx.stream(0)));
  Event start = make_event(true), stop = make_event(true);
  IOS_CUDA_CALL(cudaEventRecord(start.get(), ctx.stream(0)));
  for (int i = 0; i < kRuns; ++i) {
    if (!issue()) return std::nullopt;
  }
  IOS_CUDA_CALL(cudaEventRecord(stop.get(), ctx.stream(0)));
  IOS_CUDA_CALL(cudaEventSynchronize(stop.get()));
  float ms = 0.0f;
  IOS_CUDA_CALL(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return ms / kRuns;
}

}  // namespace

ConvShape conv_shape(const Program& p, const ConvOp& op) {
  const Value& x = p.values.at(static_cast<size_t>(op.x));
  const Value& y = p.values.at(static_cast<size_t>(op.y));
  const Constant& w = p.constants.at(static_cast<size_t>(op.weight));
  const size_t rank = x.shape.size();
  IOS_ASSERT(rank >= 3 && rank <= 5 && y.shape.size() == rank && w.shape.size() == rank &&
                 op.kernel.size() == rank - 2 && op.stride.size() == rank - 2 &&
                 op.dilation.size() == rank - 2 && op.pad.size() == rank - 2,
             "convolution '{}': {} -> {} with weights {}", op.label, ir::to_string(x.shape),
             ir::to_string(y.shape), ir::to_string(w.shape));
  // cuDNN's spatial axes (a 1-D convolution as the 2-D one with H = 1).
  const ir::Shape xd = cudnn_dims(x.shape), yd = cudnn_dims(y.shape), wd = cudnn_dims(w.shape);
  ConvShape s;
  s.n = xd[0], s.c = xd[1], s.k = wd[0];
  s.in.assign(xd.begin() + 2, xd.end());
  s.out.assign(yd.begin() + 2, yd.end());
  s.filter.assign(wd.begin() + 2, wd.end());
  s.pad = cudnn_axes(op.pad, 0);
  s.stride = cudnn_axes(op.stride, 1);
  s.dilation = cudnn_axes(op.dilation, 1);
  s.group = op.group;
  s.x_batch_stride = x.batch_stride;
  s.y_batch_stride = y.batch_stride;
  s.fused = op.fused;
  s.has_z = op.z >= 0;
  if (s.has_z) s.z_batch_stride = p.values.at(static_cast<size_t>(op.z)).batch_stride;
  s.type = x.type;
  IOS_ASSERT(y.type == s.type && w.type == s.type, "convolution '{}' mixes element types ({}, {}, weights {})",
             op.label, ir::type_name(x.type), ir::type_name(y.type), ir::type_name(w.type));
  s.x_align = x.alignment();
  s.y_align = y.alignment();
  s.z_align = s.has_z ? p.values.at(static_cast<size_t>(op.z)).alignment() : kBufferAlignment;
  return s;
}

ir::Shape ConvShape::x_dims() const { return concat({n, c}, in); }
ir::Shape ConvShape::y_dims() const { return concat({n, k}, out); }
ir::Shape ConvShape::w_dims() const { return concat({k, c / group}, filter); }
int64_t ConvShape::x_item() const { return c * product(in); }
int64_t ConvShape::y_item() const { return k * product(out); }

std::string ConvShape::key() const {
  std::string text = fmt::format(
      "n{}c{}i{}|k{}f{}|o{}|p{}|s{}|d{}|g{}|bs{},{},{}|f{}z{}|a{},{},{}", n, c, join(in), k,
      join(filter), join(out), join(pad), join(stride), join(dilation), group, x_batch_stride,
      y_batch_stride, z_batch_stride, fused ? 1 : 0, has_z ? 1 : 0, x_align, y_align, z_align);
  if (type != ir::ElementType::kFloat32) text += std::string("|") + ir::type_name(type);
  return text;
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
  set_tensor_nd(d.x.get(), s.x_dims(), s.x_batch_stride, s.type);
  set_tensor_nd(d.y.get(), s.y_dims(), s.y_batch_stride, s.type);
  set_tensor_nd(d.z.get(), s.y_dims(), s.has_z ? s.z_batch_stride : s.y_batch_stride, s.type);
  // The bias [1, k, 1...] of y's rank, in y's type (cuDNN's PSEUDO_HALF /
  // PSEUDO_BFLOAT16 configurations: 16-bit tensors, float compute); the fused
  // call is refused where cuDNN lacks the combination, and the own epilogue
  // runs instead.
  ir::Shape bias(s.spatial() + 2, 1);
  bias[1] = s.k;
  set_tensor_nd(d.bias.get(), bias, s.k, s.type);
  set_filter(d.w.get(), s.w_dims(), s.type);
  set_conv(d.conv.get(), s.pad, s.stride, s.dilation, s.group, math);
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

std::optional<size_t> fastest_attempt(const std::vector<ConvAttempt>& attempts,
                                      const std::function<void()>& clear_error) {
  std::optional<size_t> best;
  float best_ms = 0.0f;
  for (size_t i = 0; i < attempts.size(); ++i) {
    const std::optional<float> ms = attempts[i]();
    if (!ms) {
      clear_error();
      continue;
    }
    if (!best || *ms < best_ms) best = i, best_ms = *ms;
  }
  return best;
}

kernels::EwParams conv_epilogue(const ConvShape& s, void* y, int64_t y_batch_stride, const void* bias,
                                const void* z) {
  const ir::Shape out = s.y_dims();
  kernels::EwParams epilogue = ew_frame(out, y, y_batch_stride, s.type);
  epilogue.x = make_operand(y, out, y_batch_stride, out, s.type);
  ir::Shape bias_shape(out.size(), 1);
  bias_shape[1] = s.k;
  const kernels::EwOperand b = make_operand(bias, bias_shape, s.k, out, s.type);
  add_step(epilogue, ir::OpKind::kAdd, 0, 0, &b);
  if (s.has_z) {
    const kernels::EwOperand zo = make_operand(z, out, s.z_batch_stride, out, s.type);
    add_step(epilogue, ir::OpKind::kAdd, 0, 0, &zo);
  }
  add_step(epilogue, ir::OpKind::kRelu, 0, 0, nullptr);
  return epilogue;
}

ConvChoice choose_conv(Context& ctx, const ConvShape& shape, const std::string& label) {
  // Strict FP32 (no tensor cores) applies to float32 tensors only: a 16-bit
  // convolution runs on tensor cores, accumulating in float.
  const bool fp32 = ctx.math() == ir::MathMode::kFp32 && shape.type == ir::ElementType::kFloat32;
  const std::string key = fmt::format("{}|{}|{}|{}", ctx.key(), ir::math_mode_name(ctx.math()),
                                      ctx.workspace_limit(), shape.key());
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    auto it = cache().find(key);
    if (it != cache().end()) return it->second;
  }
  const size_t limit = ctx.workspace_limit();
  const int64_t x_dense_bs = shape.x_item();
  const int64_t y_dense_bs = shape.y_item();
  const bool strided = shape.x_batch_stride != x_dense_bs || shape.y_batch_stride != y_dense_bs;
  std::string last_problem = "cuDNN returned no algorithm";
  // After a refused call or search: clear the error it may have left (the
  // next launch would report it as its own), and let a sticky one surface.
  auto clear_error = [&] {
    detail::clear_failed_attempt();
    IOS_CUDA_CALL(cudaStreamSynchronize(ctx.stream(0)));
  };
  const auto element_bytes = static_cast<size_t>(ir::bytes_of(shape.type));
  auto bytes = [&](int64_t elements) { return static_cast<size_t>(std::max<int64_t>(elements, 1)) * element_bytes; };
  // cuDNN's choice depends on pointer alignment (vectorised kernels need 16
  // bytes or more): search on scratch pointers aligned exactly like the
  // tensors the engine will pass (slices of concat and merge buffers may be
  // only 4-byte aligned).
  auto aligned = [&](int slot, size_t size, int64_t alignment) {
    char* base = static_cast<char*>(ctx.scratch(slot, size + kBufferAlignment));
    return static_cast<void*>(base + alignment % kBufferAlignment);
  };
  // The engine's tensors as requested (strided x and y).
  void* x = aligned(0, bytes((shape.n - 1) * shape.x_batch_stride + x_dense_bs), shape.x_align);
  void* w = ctx.scratch(1, bytes(ir::num_elements(shape.w_dims())));
  void* y = aligned(2, bytes((shape.n - 1) * shape.y_batch_stride + y_dense_bs), shape.y_align);
  void* z = aligned(3, bytes(shape.has_z ? (shape.n - 1) * shape.z_batch_stride + y_dense_bs : 1), shape.z_align);
  void* bias = ctx.scratch(4, bytes(shape.k));
  void* ws = ctx.scratch(5, std::max<size_t>(limit, 1));

  // Every way to run the convolution, timed on scratch memory, fastest kept:
  // per layout (as requested; dense staging copies around it when x or y is
  // strided) and per algorithm cuDNN's search ranks, the fused call and the
  // plain call followed by the own epilogue. The first fused call that runs
  // may be far slower than a plain one plus the epilogue.
  struct Candidate {
    ConvChoice choice;
    ConvShape layout;
    std::shared_ptr<const ConvDescriptors> d;
  };
  std::vector<Candidate> candidates;
  std::vector<ConvAttempt> attempts;
  constexpr int kAlgorithmsPerLayout = 3;
  for (int staged = 0; staged < (strided ? 2 : 1); ++staged) {
    ConvShape s = shape;
    void* sx = x;
    void* sy = y;
    std::unique_ptr<GpuOp> stage_x, stage_y;
    if (staged == 1) {
      // Only a strided tensor is staged, into a buffer of its own.
      if (s.x_batch_stride != x_dense_bs) {
        sx = ctx.scratch(6, bytes(shape.n * x_dense_bs));
        stage_x = make_copy(x, sx, {shape.n, x_dense_bs}, {shape.x_batch_stride, 1}, {x_dense_bs, 1}, shape.type);
        s.x_align = kBufferAlignment;
      }
      if (s.y_batch_stride != y_dense_bs) {
        sy = ctx.scratch(7, bytes(shape.n * y_dense_bs));
        stage_y = make_copy(sy, y, {shape.n, y_dense_bs}, {y_dense_bs, 1}, {shape.y_batch_stride, 1}, shape.type);
        s.y_align = kBufferAlignment;
      }
      s.x_batch_stride = x_dense_bs;
      s.y_batch_stride = y_dense_bs;
    }
    auto d = std::make_shared<ConvDescriptors>(make_conv_descriptors(s, fp32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int returned = 0;
    const cudnnStatus_t status =
        cudnnFindConvolutionForwardAlgorithmEx(ctx.cudnn(0), d->x.get(), sx, d->w.get(), w, d->conv.get(), d->y.get(),
                                               sy, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf, ws, limit);
    if (status != CUDNN_STATUS_SUCCESS) {
      clear_error();
      last_problem = fmt::format("cudnnFindConvolutionForwardAlgorithmEx: {}", cudnnGetErrorString(status));
      logger("cuda")->debug("convolution '{}' ({}): {}", label, s.key(), last_problem);
      continue;
    }
    IOS_CUDA_CALL(cudaStreamSynchronize(ctx.stream(0)));
    // The staging copies' time, once per layout (shared by its candidates).
    std::optional<float> staging_ms = 0.0f;
    if (stage_x || stage_y) {
      const IssueContext ic{ctx.stream(0), ctx.cudnn(0), ws, limit};
      staging_ms = time_on_stream(ctx, [&] {
        if (stage_x) stage_x->issue(ic);
        if (stage_y) stage_y->issue(ic);
        return true;
      });
    }
    // The own epilogue's time on this layout's output (when fusion was asked).
    std::optional<float> epilogue_ms = 0.0f;
    if (s.fused) {
      const kernels::EwParams epilogue = conv_epilogue(s, sy, s.y_batch_stride, bias, z);
      epilogue_ms = time_on_stream(ctx, [&] { return kernels::elementwise(epilogue, ctx.stream(0)) == cudaSuccess; });
      if (!epilogue_ms) clear_error();
    }
    int algorithms = 0;
    for (int i = 0; i < returned && algorithms < kAlgorithmsPerLayout; ++i) {
      const cudnnConvolutionFwdAlgoPerf_t& p = perf[i];
      if (p.status != CUDNN_STATUS_SUCCESS || p.memory > limit) continue;
      if (fp32 && tensor_op(p.mathType)) continue;
      const cudnnMathType_t math = fp32 ? CUDNN_FMA_MATH : p.mathType;
      auto dm = std::make_shared<ConvDescriptors>(make_conv_descriptors(s, math));
      size_t workspace = 0;
      if (cudnnGetConvolutionForwardWorkspaceSize(ctx.cudnn(0), dm->x.get(), dm->w.get(), dm->conv.get(), dm->y.get(),
                                                  p.algo, &workspace) != CUDNN_STATUS_SUCCESS) {
        clear_error();
        continue;
      }
      workspace = std::max(workspace, p.memory);
      if (workspace > limit) continue;
      ++algorithms;
      ConvChoice choice;
      choice.algo = p.algo;
      choice.math = math;
      choice.workspace = workspace;
      choice.x_dense = s.x_batch_stride != shape.x_batch_stride;
      choice.y_dense = s.y_batch_stride != shape.y_batch_stride;
      for (const bool fused : {true, false}) {
        if (fused && !s.fused) continue;
        Candidate c{choice, s, dm};
        c.choice.fused = fused;
        candidates.push_back(c);
        const float extra_plain = fused ? 0.0f : epilogue_ms.value_or(0.0f);
        attempts.push_back([&ctx, &candidates, idx = candidates.size() - 1, sx, w, sy, z, bias, ws, staging_ms,
                            epilogue_ms, extra_plain, fused]() -> std::optional<float> {
          Candidate& cand = candidates[idx];
          if (!staging_ms || (!fused && !epilogue_ms)) return std::nullopt;
          const std::optional<float> ms = time_on_stream(ctx, [&] {
            return issue_call(ctx, cand.layout, *cand.d, cand.choice.algo, cand.choice.workspace, fused, sx, w, sy, z,
                              bias, ws);
          });
          if (!ms) return std::nullopt;
          cand.choice.time_ms = *ms + *staging_ms + extra_plain;
          return cand.choice.time_ms;
        });
      }
    }
    if (algorithms == 0) {
      last_problem = fmt::format("none of the {} algorithms cuDNN returned runs{}", returned,
                                 fp32 ? " in strict FP32" : "");
    }
  }
  const std::optional<size_t> best = fastest_attempt(attempts, clear_error);
  if (!best) {
    if (!attempts.empty()) last_problem = "cuDNN refused every algorithm it returned when run";
    internal_error("no cuDNN algorithm for convolution '{}' ({}): {}", label, shape.key(), last_problem);
  }
  const ConvChoice chosen = candidates[*best].choice;
  if (shape.fused && !chosen.fused) {
    logger("cuda")->debug("convolution '{}': plain {} + own epilogue is fastest ({:.3f} ms)", label,
                          conv_algo_name(chosen.algo), chosen.time_ms);
  }
  std::lock_guard<std::mutex> lock(cache_mutex);
  cache()[key] = chosen;
  return chosen;
}

// --- ConvTranspose: backward-data convolutions -----------------------------

ir::Shape ConvTransposeShape::x_dims() const { return concat({n, c_in}, in); }
ir::Shape ConvTransposeShape::y_dims() const { return concat({n, c_out}, out); }
ir::Shape ConvTransposeShape::w_dims() const { return concat({c_in, c_out / group}, filter); }

std::string ConvTransposeShape::key() const {
  std::string text =
      fmt::format("transposed|n{}c{}i{}|k{}f{}|o{}|p{}|s{}|d{}|g{}|bs{},{}|a{},{}", n, c_in,
                  join(in), c_out, join(filter), join(out), join(pad), join(stride), join(dilation),
                  group, x_batch_stride, y_batch_stride, x_align, y_align);
  if (type != ir::ElementType::kFloat32) text += std::string("|") + ir::type_name(type);
  return text;
}

ConvTransposeDescriptors make_conv_transpose_descriptors(const ConvTransposeShape& s,
                                                         cudnnMathType_t math) {
  ConvTransposeDescriptors d;
  d.x = make_tensor_desc();
  d.y = make_tensor_desc();
  d.w = make_filter_desc();
  d.conv = make_conv_desc();
  set_tensor_nd(d.x.get(), s.x_dims(), s.x_batch_stride, s.type);
  set_tensor_nd(d.y.get(), s.y_dims(), s.y_batch_stride, s.type);
  set_filter(d.w.get(), s.w_dims(), s.type);
  set_conv(d.conv.get(), s.pad, s.stride, s.dilation, s.group, math);
  return d;
}

const char* conv_transpose_algo_name(cudnnConvolutionBwdDataAlgo_t algo) {
  switch (algo) {
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0:
      return "algo_0";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1:
      return "algo_1";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT:
      return "fft";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING:
      return "fft_tiling";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD:
      return "winograd";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED:
      return "winograd_nonfused";
    default:
      return "unknown";
  }
}

ConvTransposeChoice choose_conv_transpose(Context& ctx, const ConvTransposeShape& shape,
                                          const std::string& label) {
  // As for forward convolutions: strict FP32 is the math of float32 tensors
  // only; 16-bit ones run on tensor cores.
  const bool fp32 = ctx.math() == ir::MathMode::kFp32 && shape.type == ir::ElementType::kFloat32;
  const std::string key = fmt::format("{}|{}|{}|{}", ctx.key(), ir::math_mode_name(ctx.math()),
                                      ctx.workspace_limit(), shape.key());
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    auto it = transpose_cache().find(key);
    if (it != transpose_cache().end()) return it->second;
  }
  const size_t limit = ctx.workspace_limit();
  auto clear_error = [&] {
    detail::clear_failed_attempt();
    IOS_CUDA_CALL(cudaStreamSynchronize(ctx.stream(0)));
  };
  const auto element_bytes = static_cast<size_t>(ir::bytes_of(shape.type));
  auto bytes = [&](int64_t elements) {
    return static_cast<size_t>(std::max<int64_t>(elements, 1)) * element_bytes;
  };
  auto aligned = [&](int slot, size_t size, int64_t alignment) {
    char* base = static_cast<char*>(ctx.scratch(slot, size + kBufferAlignment));
    return static_cast<void*>(base + alignment % kBufferAlignment);
  };
  const int64_t x_item = ir::num_elements(shape.x_dims()) / shape.n;
  const int64_t y_item = ir::num_elements(shape.y_dims()) / shape.n;
  void* x = aligned(0, bytes((shape.n - 1) * shape.x_batch_stride + x_item), shape.x_align);
  void* w = ctx.scratch(1, bytes(ir::num_elements(shape.w_dims())));
  void* y = aligned(2, bytes((shape.n - 1) * shape.y_batch_stride + y_item), shape.y_align);
  void* ws = ctx.scratch(5, std::max<size_t>(limit, 1));
  const cudnnMathType_t search_math = fp32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
  const ConvTransposeDescriptors d = make_conv_transpose_descriptors(shape, search_math);
  std::string last_problem = "cuDNN returned no algorithm";
  std::vector<ConvTransposeChoice> candidates;
  std::vector<std::shared_ptr<const ConvTransposeDescriptors>> descriptors;
  cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  int returned = 0;
  const cudnnStatus_t status = cudnnFindConvolutionBackwardDataAlgorithmEx(
      ctx.cudnn(0), d.w.get(), w, d.x.get(), x, d.conv.get(), d.y.get(), y,
      CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, perf, ws, limit);
  if (status != CUDNN_STATUS_SUCCESS) {
    clear_error();
    last_problem =
        fmt::format("cudnnFindConvolutionBackwardDataAlgorithmEx: {}", cudnnGetErrorString(status));
    returned = 0;
  } else {
    IOS_CUDA_CALL(cudaStreamSynchronize(ctx.stream(0)));
  }
  constexpr int kAlgorithms = 3;
  for (int i = 0; i < returned && static_cast<int>(candidates.size()) < kAlgorithms; ++i) {
    const cudnnConvolutionBwdDataAlgoPerf_t& p = perf[i];
    if (p.status != CUDNN_STATUS_SUCCESS || p.memory > limit) continue;
    if (fp32 && tensor_op(p.mathType)) continue;
    ConvTransposeChoice c;
    c.algo = p.algo;
    c.math = fp32 ? CUDNN_FMA_MATH : p.mathType;
    auto dm =
        std::make_shared<ConvTransposeDescriptors>(make_conv_transpose_descriptors(shape, c.math));
    if (cudnnGetConvolutionBackwardDataWorkspaceSize(ctx.cudnn(0), dm->w.get(), dm->x.get(),
                                                     dm->conv.get(), dm->y.get(), c.algo,
                                                     &c.workspace) != CUDNN_STATUS_SUCCESS) {
      clear_error();
      continue;
    }
    c.workspace = std::max(c.workspace, p.memory);
    if (c.workspace > limit) continue;
    candidates.push_back(c);
    descriptors.push_back(std::move(dm));
  }
  if (candidates.empty()) {
    // Algorithm 0 needs no workspace and takes every geometry cuDNN accepts:
    // the one the backend ran before it searched.
    ConvTransposeChoice c;
    c.math = search_math;
    candidates.push_back(c);
    descriptors.push_back(
        std::make_shared<ConvTransposeDescriptors>(make_conv_transpose_descriptors(shape, c.math)));
  }
  std::vector<ConvAttempt> attempts;
  for (size_t i = 0; i < candidates.size(); ++i) {
    attempts.push_back([&, i]() -> std::optional<float> {
      const ConvTransposeDescriptors& dd = *descriptors[i];
      const ConvTransposeChoice& c = candidates[i];
      const float one = 1.0f, zero = 0.0f;
      const std::optional<float> ms = time_on_stream(ctx, [&] {
        return cudnnConvolutionBackwardData(ctx.cudnn(0), &one, dd.w.get(), w, dd.x.get(), x,
                                            dd.conv.get(), c.algo, ws, c.workspace, &zero,
                                            dd.y.get(), y) == CUDNN_STATUS_SUCCESS;
      });
      if (ms) candidates[i].time_ms = *ms;
      return ms;
    });
  }
  const std::optional<size_t> best = fastest_attempt(attempts, clear_error);
  if (!best) {
    internal_error(
        "no cuDNN backward-data algorithm for ConvTranspose '{}' ({}): {}", label, shape.key(),
        returned > 0 ? "cuDNN refused every algorithm it returned when run" : last_problem);
  }
  const ConvTransposeChoice chosen = candidates[*best];
  std::lock_guard<std::mutex> lock(cache_mutex);
  transpose_cache()[key] = chosen;
  return chosen;
}

}  // namespace ios::cuda
