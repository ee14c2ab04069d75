// The backend's own kernels (kernels.h). Straightforward grid-stride loops:
// these are memory-bound epilogues and layout operations, plus one tiled
// GEMM for the matrix products cuBLASLt cannot serve (gemm.h). Each is a
// template over the storage types it reads and writes (float, __half,
// __nv_bfloat16; element_io.cuh), computing in float.
#include <cfloat>
#include <type_traits>

#include "cuda/element_io.cuh"
#include "cuda/kernels.h"
#include "ir/elementwise.h"

namespace ios::cuda::kernels {
namespace {

constexpr int kThreads = 256;

int blocks_for(int64_t total) {
  const int64_t blocks = (total + kThreads - 1) / kThreads;
  // A grid-stride loop covers the rest; 64K blocks keep every SM busy.
  return static_cast<int>(blocks < 65535 ? (blocks < 1 ? 1 : blocks) : 65535);
}

// One step of an element-wise chain: the operator's functor from
// ir/elementwise.h (binary ones take the step's operand as b, or as a when
// the step says the operand comes first).
__device__ __forceinline__ float apply_step(const EwStepParams& st, float v, float operand) {
  float out = v;
  if (ir::ew::visit_binary(st.kind, [&](auto f) { out = st.operand_first ? f(operand, v) : f(v, operand); }))
    return out;
  ir::ew::visit_unary(st.kind, [&](auto f) { out = f(v, ir::ew::Params{st.p0, st.p1}); });
  return out;
}

// Index arithmetic of the element-wise kernel: 64-bit (plain division) or
// 32-bit (the launcher's precomputed IntDividers; ew_index_bits said every
// offset fits).
struct EwDividers {
  IntDivider item, hw, dims[kMaxDims];
};

struct Index64 {
  using T = int64_t;
  __device__ static T div(T n, int64_t d, const IntDivider&) { return n / d; }
};
struct Index32 {
  using T = uint32_t;
  __device__ static T div(T n, int64_t, const IntDivider& f) { return f.div(n); }
};

template <typename I>
__device__ __forceinline__ typename I::T simple_offset(const EwOperand& op, typename I::T n, typename I::T r,
                                                       const EwParams& p, const EwDividers& dv) {
  using T = typename I::T;
  switch (op.mode) {
    case kFull: return n * static_cast<T>(op.batch_stride) + r;
    case kChannel: return I::div(r, p.hw, dv.hw);
    case kBatchChannel: return n * static_cast<T>(op.batch_stride) + I::div(r, p.hw, dv.hw);
    default: return 0;
  }
}

template <typename I>
__device__ __forceinline__ typename I::T generic_offset(const EwOperand& op, const typename I::T* coords,
                                                        typename I::T n, typename I::T r, const EwParams& p,
                                                        const EwDividers& dv) {
  using T = typename I::T;
  if (op.mode != kGeneric) return simple_offset<I>(op, n, r, p, dv);
  T off = 0;
  for (int d = 0; d < p.rank; ++d) off += coords[d] * static_cast<T>(op.strides[d]);
  return off;
}

template <typename I, typename TX, typename TY>
__global__ void elementwise_kernel(const EwParams p, const EwDividers dv) {
  using T = typename I::T;
  const TX* xs = static_cast<const TX*>(p.x.ptr);
  TY* ys = static_cast<TY*>(p.y);
  const T total = static_cast<T>(p.total);
  const T item = static_cast<T>(p.item);
  const T stride = static_cast<T>(blockDim.x) * gridDim.x;
  for (T i = static_cast<T>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const T n = I::div(i, p.item, dv.item);
    const T r = i - n * item;
    float v;
    if (!p.generic) {
      v = to_float(xs[simple_offset<I>(p.x, n, r, p, dv)]);
      for (int s = 0; s < p.num_steps; ++s) {
        const EwStepParams& st = p.steps[s];
        const EwOperand& op = p.operands[st.operand >= 0 ? st.operand : 0];
        const float o = st.operand >= 0 ? load_as_float(op.ptr, op.type, simple_offset<I>(op, n, r, p, dv)) : 0.0f;
        v = apply_step(st, v, o);
      }
    } else {
      T coords[kMaxDims];
      T rest = i;
      for (int d = p.rank - 1; d >= 0; --d) {
        const T q = I::div(rest, p.dims[d], dv.dims[d]);
        coords[d] = rest - q * static_cast<T>(p.dims[d]);
        rest = q;
      }
      v = to_float(xs[generic_offset<I>(p.x, coords, n, r, p, dv)]);
      for (int s = 0; s < p.num_steps; ++s) {
        const EwStepParams& st = p.steps[s];
        const EwOperand& op = p.operands[st.operand >= 0 ? st.operand : 0];
        const float o =
            st.operand >= 0 ? load_as_float(op.ptr, op.type, generic_offset<I>(op, coords, n, r, p, dv)) : 0.0f;
        v = apply_step(st, v, o);
      }
    }
    ys[n * static_cast<T>(p.y_batch_stride) + r] = from_float<TY>(v);
  }
}

template <typename TS, typename TD>
__global__ void copy_kernel(const CopyParams p) {
  const TS* s = static_cast<const TS*>(p.src);
  TD* t = static_cast<TD*>(p.dst);
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.total; i += stride) {
    int64_t rest = i, src = 0, dst = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t c = rest % p.dims[d];
      rest /= p.dims[d];
      src += c * p.src_strides[d];
      dst += c * p.dst_strides[d];
    }
    if constexpr (std::is_same_v<TS, TD>) {
      t[dst] = s[src];  // the bits, unconverted
    } else {
      t[dst] = from_float<TD>(to_float(s[src]));
    }
  }
}

template <typename T>
__global__ void pad_kernel(const PadParams p) {
  const T* s = static_cast<const T*>(p.src);
  T* t = static_cast<T*>(p.dst);
  const T value = from_float<T>(p.value);
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.total; i += stride) {
    int64_t rest = i, src = 0, dst = 0;
    bool inside = true;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t o = rest % p.out_dims[d];
      rest /= p.out_dims[d];
      dst += o * p.dst_strides[d];
      int64_t c = o - p.begin[d];
      const int64_t size = p.in_dims[d];
      if (c < 0 || c >= size) {
        if (p.mode == kPadConstant) {
          inside = false;
        } else if (p.mode == kPadEdge) {
          c = c < 0 ? 0 : size - 1;
        } else {  // reflect, without repeating the edge
          const int64_t period = size > 1 ? 2 * (size - 1) : 1;
          c = c % period;
          if (c < 0) c += period;
          if (c >= size) c = period - c;
        }
      }
      src += c * p.src_strides[d];
    }
    t[dst] = inside ? s[src] : value;
  }
}

// The taps of output index `o` on axis `d` of a resize (one of weight 1 on
// an axis the tensors lack).
__device__ ir::resize::LinearTaps resize_taps(const ResizeParams& p, int d, int64_t o) {
  ir::resize::LinearTaps t;
  if (d < 3 - p.rank) return t;
  if (p.mode == ir::resize::Mode::kLinear)
    return ir::resize::linear_taps(p.coordinates, o, p.scale[d], p.in[d], p.out[d]);
  t.i0 = ir::resize::nearest_index(p.coordinates, p.nearest, o, p.scale[d], p.in[d], p.out[d]);
  return t;
}

template <typename T>
__global__ void resize_kernel(const ResizeParams p) {
  const int64_t out_volume = p.out[0] * p.out[1] * p.out[2];
  const int64_t in_volume = p.in[0] * p.in[1] * p.in[2];
  const int64_t total = p.n * p.c * out_volume;
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t ox = i % p.out[2];
    const int64_t oy = (i / p.out[2]) % p.out[1];
    const int64_t ot = (i / (p.out[2] * p.out[1])) % p.out[0];
    const int64_t ch = (i / out_volume) % p.c;
    const int64_t b = i / (out_volume * p.c);
    const T* x = static_cast<const T*>(p.x) + b * p.x_batch_stride + ch * in_volume;
    T* y = static_cast<T*>(p.y) + b * p.y_batch_stride + ch * out_volume +
           (ot * p.out[1] + oy) * p.out[2] + ox;
    const auto tt = resize_taps(p, 0, ot);
    const auto ty = resize_taps(p, 1, oy);
    const auto tx = resize_taps(p, 2, ox);
    const int64_t plane = p.in[1] * p.in[2];
    if (p.mode == ir::resize::Mode::kLinear) {
      // Bilinear within a plane (ONNX Runtime's order); trilinear blends the
      // two planes' bilinear values, as the CPU reference does.
      auto plane_value = [&](int64_t t) {
        const T* in = x + t * plane;
        return ir::resize::bilinear(
            ty, tx, to_float(in[ty.i0 * p.in[2] + tx.i0]), to_float(in[ty.i0 * p.in[2] + tx.i1]),
            to_float(in[ty.i1 * p.in[2] + tx.i0]), to_float(in[ty.i1 * p.in[2] + tx.i1]));
      };
      *y = from_float<T>(p.rank < 3 ? plane_value(tt.i0)
                                    : tt.w0 * plane_value(tt.i0) + tt.w1 * plane_value(tt.i1));
    } else {
      *y = x[tt.i0 * plane + ty.i0 * p.in[2] + tx.i0];
    }
  }
}

// One output per thread: the window's taps inside the input, in T, H, W
// order (the CPU reference's), accumulated in float.
template <typename T>
__global__ void pool_kernel(const PoolParams p) {
  const int64_t out_volume = p.out[0] * p.out[1] * p.out[2];
  const int64_t in_volume = p.in[0] * p.in[1] * p.in[2];
  const int64_t total = p.n * p.c * out_volume;
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    int64_t o[3];
    o[2] = i % p.out[2];
    o[1] = (i / p.out[2]) % p.out[1];
    o[0] = (i / (p.out[2] * p.out[1])) % p.out[0];
    const int64_t ch = (i / out_volume) % p.c;
    const int64_t nn = i / (out_volume * p.c);
    int64_t first[3];
    int64_t padded_count = 1;
    for (int d = 0; d < 3; ++d) {
      first[d] = o[d] * p.stride[d] - p.pad_begin[d];
      int64_t inside = 0;
      for (int64_t k = 0; k < p.kernel[d]; ++k)
        inside += first[d] + k * p.dilation[d] < p.in[d] + p.pad_end[d] ? 1 : 0;
      padded_count *= inside;
    }
    const T* volume = static_cast<const T*>(p.x) + nn * p.x_batch_stride + ch * in_volume;
    float acc = p.mode == kPoolMax ? -INFINITY : 0.0f;
    int64_t taps = 0;
    for (int64_t ka = 0; ka < p.kernel[0]; ++ka) {
      const int64_t it = first[0] + ka * p.dilation[0];
      if (it < 0 || it >= p.in[0]) continue;
      for (int64_t ki = 0; ki < p.kernel[1]; ++ki) {
        const int64_t ih = first[1] + ki * p.dilation[1];
        if (ih < 0 || ih >= p.in[1]) continue;
        for (int64_t kj = 0; kj < p.kernel[2]; ++kj) {
          const int64_t iw = first[2] + kj * p.dilation[2];
          if (iw < 0 || iw >= p.in[2]) continue;
          const float v = to_float(volume[(it * p.in[1] + ih) * p.in[2] + iw]);
          if (p.mode == kPoolMax) {
            acc = (v > acc || v != v) ? v : acc;
          } else {
            acc += v;
          }
          ++taps;
        }
      }
    }
    float out = acc;
    if (p.mode != kPoolMax) {
      const int64_t count = p.mode == kPoolAverageInclude ? padded_count : taps;
      out = count > 0 ? acc / static_cast<float>(count) : 0.0f;
    }
    static_cast<T*>(
        p.y)[nn * p.y_batch_stride + ch * out_volume + (o[0] * p.out[1] + o[1]) * p.out[2] + o[2]] =
        from_float<T>(out);
  }
}

template <typename T>
__global__ void reduce_mean_kernel(const ReduceParams p) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < p.out_total; o += stride) {
    // Coordinates of the kept dimensions (reduced ones are 0).
    int64_t rest = o, base = 0, out = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      if (p.reduced[d]) continue;
      const int64_t c = rest % p.dims[d];
      rest /= p.dims[d];
      base += c * p.x_strides[d];
      out += c * p.y_strides[d];
    }
    // ReduceLogSumExp subtracts the maximum first, so that no exp overflows;
    // with every input -inf or a +inf it subtracts nothing (no inf - inf).
    float shift = 0.0f;
    if (p.op == kReduceLogSumExp) {
      float mx = -INFINITY;
      for (int64_t j = 0; j < p.count; ++j) {
        int64_t r = j, off = base;
        for (int d = p.rank - 1; d >= 0; --d) {
          if (!p.reduced[d]) continue;
          off += (r % p.dims[d]) * p.x_strides[d];
          r /= p.dims[d];
        }
        const float v = to_float(static_cast<const T*>(p.x)[off]);
        mx = mx < v ? v : mx;
      }
      shift = isfinite(mx) ? mx : 0.0f;
    }
    float acc = p.op == kReduceProd ? 1.0f : p.op == kReduceMax ? -INFINITY : p.op == kReduceMin ? INFINITY : 0.0f;
    for (int64_t j = 0; j < p.count; ++j) {
      int64_t r = j, off = base;
      for (int d = p.rank - 1; d >= 0; --d) {
        if (!p.reduced[d]) continue;
        off += (r % p.dims[d]) * p.x_strides[d];
        r /= p.dims[d];
      }
      const float v = to_float(static_cast<const T*>(p.x)[off]);
      switch (p.op) {  // max and min compare as std::max/std::min (ir/elementwise.h)
        case kReduceProd: acc *= v; break;
        case kReduceMax: acc = acc < v ? v : acc; break;
        case kReduceMin: acc = v < acc ? v : acc; break;
        case kReduceL1: acc += fabsf(v); break;
        case kReduceL2:
        case kReduceSumSquare: acc += v * v; break;
        case kReduceLogSumExp: acc += expf(v - shift); break;
        default: acc += v; break;
      }
    }
    float r = acc;
    if (p.op == kReduceMean) r = acc / static_cast<float>(p.count);
    if (p.op == kReduceL2) r = sqrtf(acc);
    if (p.op == kReduceLogSumExp) r = shift + logf(acc);
    static_cast<T*>(p.y)[out] = from_float<T>(r);
  }
}

constexpr int kTile = kGemmTile;

// Row tiles and batches beyond the grid's 65,535 are looped over.
template <typename T>
__global__ void gemm_kernel(const GemmParams p) {
  __shared__ float as[kTile][kTile + 1];
  __shared__ float bs[kTile][kTile + 1];
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kTile + threadIdx.x;
  for (int64_t batch = blockIdx.z; batch < p.batch; batch += gridDim.z) {
    const T* a = static_cast<const T*>(p.a) + batch * p.a_batch;
    const T* b = static_cast<const T*>(p.b) + batch * p.b_batch;
    for (int64_t row0 = static_cast<int64_t>(blockIdx.y) * kTile; row0 < p.m;
         row0 += static_cast<int64_t>(gridDim.y) * kTile) {
      const int64_t row = row0 + threadIdx.y;
      float acc = 0.0f;
      for (int64_t k0 = 0; k0 < p.k; k0 += kTile) {
        const int64_t ka = k0 + threadIdx.x;  // A tile: rows of this block, columns k0..
        const int64_t kb = k0 + threadIdx.y;  // B tile: rows k0.., columns of this block
        as[threadIdx.y][threadIdx.x] = (row < p.m && ka < p.k) ? to_float(a[row * p.a_row + ka * p.a_col]) : 0.0f;
        bs[threadIdx.y][threadIdx.x] = (kb < p.k && col < p.n) ? to_float(b[kb * p.b_row + col * p.b_col]) : 0.0f;
        __syncthreads();
#pragma unroll
        for (int t = 0; t < kTile; ++t) acc += as[threadIdx.y][t] * bs[t][threadIdx.x];
        __syncthreads();
      }
      if (row < p.m && col < p.n) {
        float v = p.alpha * acc;
        if (p.c != nullptr)
          v += p.beta * to_float(static_cast<const T*>(p.c)[batch * p.c_batch + row * p.c_row + col * p.c_col]);
        static_cast<T*>(p.y)[batch * p.y_batch + row * p.y_row + col] = from_float<T>(v);
      }
    }
  }
}

}  // namespace

template <typename T>
__global__ void fill_uniform_kernel(T* p, int64_t n, uint64_t seed) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    // splitmix64 of (seed, i)
    uint64_t z = seed + 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(i + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    p[i] = from_float<T>(static_cast<float>(z >> 40) / 16777216.0f * 2.0f - 1.0f);
  }
}

cudaError_t fill_uniform(void* p, ir::ElementType type, int64_t n, uint64_t seed, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  dispatch_type(type, [&](auto t) {
    using T = typename decltype(t)::type;
    fill_uniform_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(p), n, seed);
  });
  return cudaGetLastError();
}

namespace {

// The largest element offset `op` is read at (-1: it has a negative stride).
int64_t max_offset(const EwOperand& op, const EwParams& p, int64_t items) {
  switch (op.mode) {
    case kFull: return op.batch_stride < 0 ? -1 : (items - 1) * op.batch_stride + p.item - 1;
    case kChannel: return p.channels - 1;
    case kBatchChannel: return op.batch_stride < 0 ? -1 : (items - 1) * op.batch_stride + p.channels - 1;
    case kGeneric: {
      int64_t off = 0;
      for (int d = 0; d < p.rank; ++d) {
        if (op.strides[d] < 0) return -1;
        off += (p.dims[d] - 1) * op.strides[d];
      }
      return off;
    }
    default: return 0;
  }
}

}  // namespace

namespace {

// The chain kernel for x's and y's types (the same but in a type-changing Cast).
template <typename I>
void launch_elementwise(const EwParams& params, const EwDividers& dv, cudaStream_t stream) {
  dispatch_type(params.x.type, [&](auto tx) {
    dispatch_type(params.y_type, [&](auto ty) {
      using TX = typename decltype(tx)::type;
      using TY = typename decltype(ty)::type;
      elementwise_kernel<I, TX, TY><<<blocks_for(params.total), kThreads, 0, stream>>>(params, dv);
    });
  });
}

}  // namespace

int ew_index_bits(const EwParams& p) {
  constexpr int64_t kLimit = int64_t{1} << 31;  // every index and offset below this
  if (p.total <= 0 || p.item <= 0) return 64;
  if (p.total >= kLimit) return 64;
  const int64_t items = p.total / p.item;
  auto fits = [&](int64_t off) { return off >= 0 && off < kLimit; };
  if (p.y_batch_stride < 0 || !fits((items - 1) * p.y_batch_stride + p.item - 1)) return 64;
  if (!fits(max_offset(p.x, p, items))) return 64;
  for (int i = 0; i < p.num_operands; ++i) {
    if (!fits(max_offset(p.operands[i], p, items))) return 64;
  }
  return 32;
}

cudaError_t elementwise(const EwParams& params, cudaStream_t stream) {
  if (params.total == 0) return cudaSuccess;
  const int bits = params.index_bits != 0 ? params.index_bits : ew_index_bits(params);
  if (bits == 32) {
    if (ew_index_bits(params) != 32) return cudaErrorInvalidValue;  // forced, but it does not fit
    EwDividers dv;
    dv.item = IntDivider(static_cast<uint32_t>(params.item));
    dv.hw = IntDivider(static_cast<uint32_t>(params.hw > 0 ? params.hw : 1));
    for (int d = 0; d < params.rank; ++d) dv.dims[d] = IntDivider(static_cast<uint32_t>(params.dims[d] > 0 ? params.dims[d] : 1));
    launch_elementwise<Index32>(params, dv, stream);
  } else {
    launch_elementwise<Index64>(params, EwDividers{}, stream);
  }
  return cudaGetLastError();
}

cudaError_t copy(const CopyParams& params, cudaStream_t stream) {
  if (params.total == 0) return cudaSuccess;
  dispatch_type(params.src_type, [&](auto ts) {
    dispatch_type(params.dst_type, [&](auto td) {
      using TS = typename decltype(ts)::type;
      using TD = typename decltype(td)::type;
      copy_kernel<TS, TD><<<blocks_for(params.total), kThreads, 0, stream>>>(params);
    });
  });
  return cudaGetLastError();
}

cudaError_t pad(const PadParams& params, cudaStream_t stream) {
  if (params.total == 0) return cudaSuccess;
  dispatch_type(params.type, [&](auto t) {
    pad_kernel<typename decltype(t)::type><<<blocks_for(params.total), kThreads, 0, stream>>>(params);
  });
  return cudaGetLastError();
}

cudaError_t pool(const PoolParams& params, cudaStream_t stream) {
  const int64_t total = params.n * params.c * params.out[0] * params.out[1] * params.out[2];
  if (total == 0) return cudaSuccess;
  dispatch_type(params.type, [&](auto t) {
    pool_kernel<typename decltype(t)::type><<<blocks_for(total), kThreads, 0, stream>>>(params);
  });
  return cudaGetLastError();
}

cudaError_t resize(const ResizeParams& params, cudaStream_t stream) {
  const int64_t total = params.n * params.c * params.out[0] * params.out[1] * params.out[2];
  if (total == 0) return cudaSuccess;
  dispatch_type(params.type, [&](auto t) {
    resize_kernel<typename decltype(t)::type><<<blocks_for(total), kThreads, 0, stream>>>(params);
  });
  return cudaGetLastError();
}

cudaError_t reduce_mean(const ReduceParams& params, cudaStream_t stream) {
  if (params.out_total == 0) return cudaSuccess;
  dispatch_type(params.type, [&](auto t) {
    reduce_mean_kernel<typename decltype(t)::type><<<blocks_for(params.out_total), kThreads, 0, stream>>>(params);
  });
  return cudaGetLastError();
}

GemmGrid gemm_grid(int64_t m, int64_t n, int64_t batch) {
  GemmGrid g;
  if (m < 0 || n < 0 || batch < 0) {
    g.error = "a negative dimension";
    return g;
  }
  const int64_t col_tiles = (n + kTile - 1) / kTile;
  const int64_t row_tiles = (m + kTile - 1) / kTile;
  if (col_tiles > kMaxGridX) {
    g.error = "more than 2^31 - 1 column tiles (grid.x)";
    return g;
  }
  g.x = col_tiles < 1 ? 1 : col_tiles;
  g.y = row_tiles < 1 ? 1 : (row_tiles > kMaxGridYZ ? kMaxGridYZ : row_tiles);
  g.z = batch < 1 ? 1 : (batch > kMaxGridYZ ? kMaxGridYZ : batch);
  return g;
}

cudaError_t gemm(const GemmParams& params, cudaStream_t stream) {
  if (params.m == 0 || params.n == 0 || params.batch == 0) return cudaSuccess;
  const GemmGrid g = gemm_grid(params.m, params.n, params.batch);
  if (g.error != nullptr) return cudaErrorInvalidConfiguration;
  const dim3 block(kTile, kTile);
  const dim3 grid(static_cast<unsigned>(g.x), static_cast<unsigned>(g.y), static_cast<unsigned>(g.z));
  dispatch_type(params.type,
                [&](auto t) { gemm_kernel<typename decltype(t)::type><<<grid, block, 0, stream>>>(params); });
  return cudaGetLastError();
}

}  // namespace ios::cuda::kernels
