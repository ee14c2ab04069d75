// The math of every element-wise operator, written once for every backend.
//
// Each operator is a functor over float; the CPU kernels (cpu/kernels.cpp)
// run it in their loops and the CUDA element-wise kernel (cuda/kernels.cu)
// in its device code, so both backends compute the same expression. Plain C++
// compiles this header too: IOS_HOST_DEVICE is empty outside nvcc. It needs
// nothing but <cmath> and ir/op_kind.h, so device code can include it.
//
// min/max are written as the comparisons std::min/std::max make (not
// fminf/fmaxf), so a NaN propagates the same way on every backend.
//
// Adding an element-wise operator: its functor and its case in
// visit_unary/visit_binary here, and its entry in the operator table
// (ir/op_info.cpp). The backends' kernel tables pick it up from here.
#pragma once

#include <cmath>

#include "ir/element_type.h"
#include "ir/op_kind.h"

#if defined(__CUDACC__)
#define IOS_HOST_DEVICE __host__ __device__
#else
#define IOS_HOST_DEVICE
#endif

namespace ios::ir::ew {

// The scalar attributes of a unary operator: Clip's {min, max}, HardSigmoid's
// {alpha, beta}, Gelu's form (p0 = 1: the tanh approximation); unused by the
// others.
struct Params {
  float p0 = 0.0f;
  float p1 = 0.0f;
};

IOS_HOST_DEVICE inline float min_of(float a, float b) { return b < a ? b : a; }  // std::min
IOS_HOST_DEVICE inline float max_of(float a, float b) { return a < b ? b : a; }  // std::max

// The library functions for float (the kernels) and for double (constant
// folding at import, which computes in double as before it shared this
// math): the functors below that folding uses are templates over the two.
IOS_HOST_DEVICE inline float sqrt_of(float x) { return ::sqrtf(x); }
IOS_HOST_DEVICE inline double sqrt_of(double x) { return ::sqrt(x); }
IOS_HOST_DEVICE inline float erf_of(float x) { return ::erff(x); }
IOS_HOST_DEVICE inline double erf_of(double x) { return ::erf(x); }
IOS_HOST_DEVICE inline float exp_of(float x) { return ::expf(x); }
IOS_HOST_DEVICE inline double exp_of(double x) { return ::exp(x); }

// log(1 + e^x) without overflow for large x (e^x is inf beyond 88) and
// without the loss of log1p's precision for very negative x.
IOS_HOST_DEVICE inline float softplus_of(float x) {
  return x > 20.0f ? x : ::log1pf(::expf(x));
}

// --- Unary: y = f(x, params). ---------------------------------------------

struct Relu {
  IOS_HOST_DEVICE float operator()(float x, const Params&) const { return x > 0.0f ? x : 0.0f; }
};
struct Clip {  // p0 = min, p1 = max
  IOS_HOST_DEVICE float operator()(float x, const Params& p) const { return min_of(max_of(x, p.p0), p.p1); }
};
struct Sigmoid {
  IOS_HOST_DEVICE float operator()(float x, const Params&) const { return 1.0f / (1.0f + ::expf(-x)); }
};
struct HardSigmoid {  // p0 = alpha, p1 = beta
  IOS_HOST_DEVICE float operator()(float x, const Params& p) const {
    return min_of(1.0f, max_of(0.0f, p.p0 * x + p.p1));
  }
};
struct HardSwish {
  IOS_HOST_DEVICE float operator()(float x, const Params&) const {
    return x * min_of(1.0f, max_of(0.0f, x * (1.0f / 6.0f) + 0.5f));
  }
};
struct Tanh {
  IOS_HOST_DEVICE float operator()(float x, const Params&) const { return ::tanhf(x); }
};
struct Sqrt {
  template <typename T>
  IOS_HOST_DEVICE T operator()(T x, const Params&) const { return sqrt_of(x); }
};
struct Reciprocal {
  template <typename T>
  IOS_HOST_DEVICE T operator()(T x, const Params&) const { return T(1) / x; }
};
struct Erf {
  template <typename T>
  IOS_HOST_DEVICE T operator()(T x, const Params&) const { return erf_of(x); }
};
struct Exp {
  template <typename T>
  IOS_HOST_DEVICE T operator()(T x, const Params&) const { return exp_of(x); }
};
struct Gelu {  // p0 = 0: x/2 (1 + erf(x/sqrt(2))); p0 = 1: the tanh approximation
  IOS_HOST_DEVICE float operator()(float x, const Params& p) const {
    if (p.p0 != 0.0f) return 0.5f * x * (1.0f + ::tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
    return 0.5f * x * (1.0f + ::erff(x * 0.7071067812f));
  }
};

// Activations with alpha (p0) and, for Selu, gamma (p1); ONNX's definitions.
struct LeakyRelu {
  IOS_HOST_DEVICE float operator()(float x, const Params& p) const { return x < 0.0f ? p.p0 * x : x; }
};
struct Elu {
  IOS_HOST_DEVICE float operator()(float x, const Params& p) const { return x < 0.0f ? p.p0 * ::expm1f(x) : x; }
};
struct Selu {
  IOS_HOST_DEVICE float operator()(float x, const Params& p) const {
    return p.p1 * (x <= 0.0f ? p.p0 * ::expm1f(x) : x);
  }
};
struct Celu {  // max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
  IOS_HOST_DEVICE float operator()(float x, const Params& p) const {
    return x < 0.0f ? p.p0 * ::expm1f(x / p.p0) : x;
  }
};
struct ThresholdedRelu {
  IOS_HOST_DEVICE float operator()(float x, const Params& p) const { return x > p.p0 ? x : 0.0f; }
};
struct Softplus {
  IOS_HOST_DEVICE float operator()(float x, const Params&) const { return softplus_of(x); }
};
struct Softsign {
  IOS_HOST_DEVICE float operator()(float x, const Params&) const { return x / (1.0f + ::fabsf(x)); }
};
struct Mish {  // x * tanh(softplus(x))
  IOS_HOST_DEVICE float operator()(float x, const Params&) const { return x * ::tanhf(softplus_of(x)); }
};
struct Neg {
  template <typename T>
  IOS_HOST_DEVICE T operator()(T x, const Params&) const { return -x; }
};
struct Abs {
  template <typename T>
  IOS_HOST_DEVICE T operator()(T x, const Params&) const { return x < T(0) ? -x : x; }
};

struct Cast {  // p0: the target ElementType's number; the value as a tensor of it stores it
  IOS_HOST_DEVICE float operator()(float x, const Params& p) const {
    return round_to(x, static_cast<ElementType>(static_cast<int>(p.p0)));
  }
};

// --- Binary: y = f(a, b), operands broadcast by the kernel. ------------------

struct Add {
  template <typename T>
  IOS_HOST_DEVICE T operator()(T a, T b) const { return a + b; }
};
struct Mul {
  template <typename T>
  IOS_HOST_DEVICE T operator()(T a, T b) const { return a * b; }
};
// Sub, Div and Pow are not commutative: a is the node's input 0, b its input 1
// (a fused step whose chain value is input 1 says so, cuda::EwStep).
struct Sub {
  template <typename T>
  IOS_HOST_DEVICE T operator()(T a, T b) const { return a - b; }
};
struct Div {
  template <typename T>
  IOS_HOST_DEVICE T operator()(T a, T b) const { return a / b; }
};
struct Pow {  // b: the constant exponent; a square (LayerNorm's variance) is a * a on every backend
  IOS_HOST_DEVICE float operator()(float a, float b) const { return b == 2.0f ? a * a : ::powf(a, b); }
};

struct PRelu {  // a: x, b: the slope
  IOS_HOST_DEVICE float operator()(float a, float b) const { return a < 0.0f ? a * b : a; }
};
struct Max {
  IOS_HOST_DEVICE float operator()(float a, float b) const { return max_of(a, b); }
};
struct Min {
  IOS_HOST_DEVICE float operator()(float a, float b) const { return min_of(a, b); }
};

// Calls visit(F{}) with the functor of unary operator `op`; returns false
// (calling nothing) when `op` is not a unary element-wise operator with math
// here. Kernels dispatch once per tensor and loop inside `visit`.
template <typename Visitor>
IOS_HOST_DEVICE bool visit_unary(OpKind op, Visitor&& visit) {
  switch (op) {
    case OpKind::kRelu: visit(Relu{}); return true;
    case OpKind::kClip: visit(Clip{}); return true;
    case OpKind::kSigmoid: visit(Sigmoid{}); return true;
    case OpKind::kHardSigmoid: visit(HardSigmoid{}); return true;
    case OpKind::kHardSwish: visit(HardSwish{}); return true;
    case OpKind::kTanh: visit(Tanh{}); return true;
    case OpKind::kSqrt: visit(Sqrt{}); return true;
    case OpKind::kReciprocal: visit(Reciprocal{}); return true;
    case OpKind::kErf: visit(Erf{}); return true;
    case OpKind::kExp: visit(Exp{}); return true;
    case OpKind::kGelu: visit(Gelu{}); return true;
    case OpKind::kLeakyRelu: visit(LeakyRelu{}); return true;
    case OpKind::kElu: visit(Elu{}); return true;
    case OpKind::kSelu: visit(Selu{}); return true;
    case OpKind::kCelu: visit(Celu{}); return true;
    case OpKind::kThresholdedRelu: visit(ThresholdedRelu{}); return true;
    case OpKind::kSoftplus: visit(Softplus{}); return true;
    case OpKind::kSoftsign: visit(Softsign{}); return true;
    case OpKind::kMish: visit(Mish{}); return true;
    case OpKind::kNeg: visit(Neg{}); return true;
    case OpKind::kAbs: visit(Abs{}); return true;
    case OpKind::kCast:
      visit(Cast{});
      return true;
    default: return false;
  }
}

template <typename Visitor>
IOS_HOST_DEVICE bool visit_binary(OpKind op, Visitor&& visit) {
  switch (op) {
    case OpKind::kAdd: visit(Add{}); return true;
    case OpKind::kMul: visit(Mul{}); return true;
    case OpKind::kSub: visit(Sub{}); return true;
    case OpKind::kDiv: visit(Div{}); return true;
    case OpKind::kPow: visit(Pow{}); return true;
    case OpKind::kPRelu: visit(PRelu{}); return true;
    case OpKind::kMax: visit(Max{}); return true;
    case OpKind::kMin: visit(Min{}); return true;
    default: return false;
  }
}

struct IgnoreFunctor {
  template <typename F>
  IOS_HOST_DEVICE void operator()(F) const {}
};

// Whether this header has the math of `op` (the backends' kernel tables and
// their tests ask).
IOS_HOST_DEVICE inline bool has_unary(OpKind op) { return visit_unary(op, IgnoreFunctor{}); }
IOS_HOST_DEVICE inline bool has_binary(OpKind op) { return visit_binary(op, IgnoreFunctor{}); }

}  // namespace ios::ir::ew
