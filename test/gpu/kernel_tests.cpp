// The backend's kernel-level decisions: which library or kernel runs a
// matrix product and with what launch, the element-wise kernel's 32-bit
// index path, the convolution algorithm choice and its error clearing, and
// the version rule of the device probe. [host] tests check the pure
// functions behind them (no device needed); [gpu] tests run them.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "cuda/version.h"
#include "gpu_util.h"

#ifdef IOS_HAVE_CUDA
#include "cpu/reference.h"
#include "cuda/context.h"
#include "cuda/conv.h"
#include "cuda/cublaslt.h"
#include "cuda/gemm.h"
#include "cuda/kernels.h"
#include "cuda/launch.h"
#include "cuda/resources.h"
#include "onnx/importer.h"
#include "test_paths.h"
#endif

namespace ios::gputest {
namespace {

using ir::OpKind;

// --- Version rule ----------------------------------------------------------------

cuda::RuntimeVersions good_versions() {
  cuda::RuntimeVersions v;
  v.driver = 13000;  // driver 580: CUDA 13.0
  v.runtime = 13000;
  v.cudnn = 91900;
  v.cudnn_built_major = 9;
  v.cudnn_cudart = 13000;
  return v;
}

TEST_CASE("the version rule accepts matching versions and names each mismatch", "[host]") {
  CHECK(cuda::version_problem(good_versions()).empty());
  cuda::RuntimeVersions newer_driver = good_versions();
  newer_driver.driver = 13020;
  CHECK(cuda::version_problem(newer_driver).empty());
  cuda::RuntimeVersions newer_minor_cudnn = good_versions();
  newer_minor_cudnn.cudnn_cudart = 13010;  // another minor release of the same CUDA major
  CHECK(cuda::version_problem(newer_minor_cudnn).empty());
  cuda::RuntimeVersions unknown_cudnn_cuda = good_versions();
  unknown_cudnn_cuda.cudnn_cudart = 0;  // not reported: nothing to refuse
  CHECK(cuda::version_problem(unknown_cudnn_cuda).empty());

  cuda::RuntimeVersions old_driver = good_versions();
  old_driver.driver = 12080;
  CHECK(cuda::version_problem(old_driver) ==
        "the NVIDIA driver supports CUDA 12.8 but ios was built with CUDA 13.0; update the driver");
  old_driver.driver = 12990;  // one step below the runtime still refuses
  CHECK_FALSE(cuda::version_problem(old_driver).empty());

  cuda::RuntimeVersions cudnn8 = good_versions();
  cudnn8.cudnn = 80907;
  CHECK(cuda::version_problem(cudnn8) == "cuDNN 8.9.7 is loaded but ios was built with cuDNN 9; install cuDNN 9");

  cuda::RuntimeVersions cudnn_for_cuda12 = good_versions();
  cudnn_for_cuda12.cudnn_cudart = 12080;
  CHECK(cuda::version_problem(cudnn_for_cuda12) ==
        "the loaded cuDNN 9.19.0 was built for CUDA 12.8 but ios uses CUDA 13.0; install the cuDNN build for CUDA 13 "
        "(e.g. nvidia-cudnn-cu13)");
  // The answer is one line.
  for (const auto& v : {old_driver, cudnn8, cudnn_for_cuda12}) {
    CHECK(cuda::version_problem(v).find('\n') == std::string::npos);
  }
}

#ifdef IOS_HAVE_CUDA

// --- Matrix products: path and launch ---------------------------------------------

TEST_CASE("cuBLASLt is loaded by its soname when a product needs it, or the reason names it", "[host]") {
  CHECK(cuda::cublaslt_library_name() == "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR));
  std::string why;
  const cuda::CublasLt* lt = cuda::load_cublaslt(&why);
  if (lt != nullptr) {
    CHECK(lt->cublasLtMatmul != nullptr);
    // A call through the loaded table answers (no device needed).
    CHECK(std::string(lt->cublasLtGetStatusString(CUBLAS_STATUS_NOT_SUPPORTED)).find("not supported") !=
          std::string::npos);
  } else {
    CHECK(why.find(cuda::cublaslt_library_name()) != std::string::npos);
    CHECK_THROWS_AS(cuda::cublaslt(), NoDeviceError);
  }
}


// A row-major product: A [m, k] (trans_a: stored [k, m]), B [k, n] (trans_b:
// stored [n, k]), Y [m, n], as op_gemm.cpp sets the strides of 2-D operands.
cuda::kernels::GemmParams product(int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b) {
  cuda::kernels::GemmParams p;
  p.m = m, p.n = n, p.k = k;
  p.a_row = trans_a ? 1 : k;
  p.a_col = trans_a ? m : 1;
  p.b_row = trans_b ? 1 : n;
  p.b_col = trans_b ? k : 1;
  p.y_row = n;
  return p;
}

TEST_CASE("a Linear layer (transposed weight, bias) runs on cuBLASLt with the bias epilogue", "[host]") {
  for (int64_t batch : {1, 8}) {
    cuda::kernels::GemmParams p = product(batch, 1000, 2048, false, true);
    p.has_c = true, p.beta = 1.0f, p.c_row = 0, p.c_col = 1;  // op_gemm.cpp's strides for a bias [1000]
    const cuda::GemmPlan plan = cuda::plan_gemm(p);
    INFO("batch " << batch);
    REQUIRE(plan.cublas);
    // cuBLASLt's A is the weight [1000, 2048] row-major = column-major
    // [2048 x 1000] transposed; its B the activations, untransposed.
    CHECK(plan.a.transpose);
    CHECK(plan.a.rows == 2048);
    CHECK(plan.a.cols == 1000);
    CHECK(plan.a.ld == 2048);
    CHECK_FALSE(plan.b.transpose);
    CHECK(plan.b.rows == 2048);
    CHECK(plan.b.cols == batch);
    CHECK(plan.d.rows == 1000);
    CHECK(plan.d.cols == batch);
    CHECK(plan.d.ld == 1000);
    // At batch 1 the bias row is the whole C: a matrix; above, the epilogue.
    CHECK(plan.bias == (batch != 1));
    CHECK(plan.c_matrix == (batch == 1));
  }
}

TEST_CASE("plan_gemm maps layouts to cuBLASLt and keeps the own kernel where cuBLASLt cannot serve", "[host]") {
  SECTION("plain and transposed operands") {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        const cuda::GemmPlan plan = cuda::plan_gemm(product(7, 5, 3, ta, tb));
        INFO("trans_a " << ta << " trans_b " << tb);
        REQUIRE(plan.cublas);
        CHECK(plan.a.transpose == tb);  // cuBLASLt's A is the product's B
        CHECK(plan.b.transpose == ta);
        CHECK(plan.a.ld == (tb ? 3 : 5));
        CHECK(plan.b.ld == (ta ? 7 : 3));
        CHECK_FALSE(plan.c_matrix);
        CHECK_FALSE(plan.bias);
      }
    }
  }
  SECTION("strided-batched with a broadcast weight (attention's MatMul, MatMul by a constant)") {
    cuda::kernels::GemmParams p = product(4, 6, 5, false, false);
    p.batch = 12;
    p.a_batch = 4 * 5, p.b_batch = 0, p.y_batch = 4 * 6;
    const cuda::GemmPlan plan = cuda::plan_gemm(p);
    REQUIRE(plan.cublas);
    CHECK(plan.batch == 12);
    CHECK(plan.a.batch_stride == 0);
    CHECK(plan.b.batch_stride == 20);
    CHECK(plan.d.batch_stride == 24);
  }
  SECTION("a full C with beta is cuBLASLt's C matrix; an output row stride is kept") {
    cuda::kernels::GemmParams p = product(6, 7, 4, true, false);
    p.has_c = true, p.beta = 2.0f, p.alpha = 0.5f, p.c_row = 7, p.c_col = 1;
    p.y_row = 30;  // a slice of a concatenation
    const cuda::GemmPlan plan = cuda::plan_gemm(p);
    REQUIRE(plan.cublas);
    CHECK(plan.c_matrix);
    CHECK(plan.c.ld == 7);
    CHECK(plan.d.ld == 30);
  }
  SECTION("broadcasts cuBLASLt does not add stay on the own kernel") {
    cuda::kernels::GemmParams scalar = product(6, 7, 4, false, false);
    scalar.has_c = true, scalar.beta = 1.0f;  // c_row = c_col = 0
    CHECK_FALSE(cuda::plan_gemm(scalar).cublas);
    CHECK_FALSE(cuda::plan_gemm(scalar).own_reason.empty());
    cuda::kernels::GemmParams column = scalar;
    column.c_row = 1;  // [m, 1]
    CHECK_FALSE(cuda::plan_gemm(column).cublas);
    cuda::kernels::GemmParams scaled_bias = scalar;
    scaled_bias.c_col = 1, scaled_bias.beta = 0.5f;  // bias row times beta != 1
    CHECK_FALSE(cuda::plan_gemm(scaled_bias).cublas);
    scaled_bias.beta = 1.0f;
    CHECK(cuda::plan_gemm(scaled_bias).cublas);
    cuda::kernels::GemmParams zero_beta = scalar;
    zero_beta.beta = 0.0f;  // C not added at all
    CHECK(cuda::plan_gemm(zero_beta).cublas);
  }
  SECTION("general strides and empty products stay on the own kernel") {
    cuda::kernels::GemmParams strided = product(6, 7, 4, false, false);
    strided.a_col = 2;
    CHECK_FALSE(cuda::plan_gemm(strided).cublas);
    cuda::kernels::GemmParams overlapping = product(6, 7, 4, false, false);
    overlapping.b_row = 3;  // rows closer than a row is long
    CHECK_FALSE(cuda::plan_gemm(overlapping).cublas);
    CHECK_FALSE(cuda::plan_gemm(product(6, 7, 0, false, false)).cublas);
    CHECK_FALSE(cuda::plan_gemm(product(0, 7, 4, false, false)).cublas);
  }
}

// What cuBLASLt computes for `plan` (its documented column-major semantics:
// D = alpha op(A) op(B) + beta C + bias, per batch), on host buffers, with
// the checks cuBLASLt makes (op(A) n x k, op(B) k x m, D n x m, ld >= rows).
void emulate_cublaslt(const cuda::GemmPlan& plan, const cuda::kernels::GemmParams& p, float* y) {
  auto element = [](const float* base, const cuda::LtMatrix& mat, int64_t i, int64_t j) {
    return mat.transpose ? base[j + i * mat.ld] : base[i + j * mat.ld];
  };
  auto op_rows = [](const cuda::LtMatrix& mat) { return mat.transpose ? mat.cols : mat.rows; };
  auto op_cols = [](const cuda::LtMatrix& mat) { return mat.transpose ? mat.rows : mat.cols; };
  for (const cuda::LtMatrix* mat : {&plan.a, &plan.b, &plan.d}) REQUIRE(mat->ld >= mat->rows);
  const int64_t rows = plan.d.rows, cols = plan.d.cols, inner = op_cols(plan.a);
  REQUIRE(op_rows(plan.a) == rows);
  REQUIRE(op_rows(plan.b) == inner);
  REQUIRE(op_cols(plan.b) == cols);
  REQUIRE_FALSE(plan.d.transpose);
  if (plan.c_matrix) {
    REQUIRE(plan.c.rows == rows);
    REQUIRE(plan.c.cols == cols);
    REQUIRE(plan.c.ld >= plan.c.rows);
  }
  for (int b = 0; b < plan.batch; ++b) {
    const float* a = static_cast<const float*>(p.b) + b * plan.a.batch_stride;  // cuBLASLt's A is the product's B
    const float* bb = static_cast<const float*>(p.a) + b * plan.b.batch_stride;
    const auto* c = static_cast<const float*>(p.c);
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        double acc = 0.0;
        for (int64_t l = 0; l < inner; ++l) acc += double(element(a, plan.a, i, l)) * element(bb, plan.b, l, j);
        double v = p.alpha * acc;
        if (plan.c_matrix) v += p.beta * double(c[b * plan.c.batch_stride + i + j * plan.c.ld]);
        if (plan.bias) v += c[i];
        y[b * plan.d.batch_stride + i + j * plan.d.ld] = static_cast<float>(v);
      }
    }
  }
}

// The product by its definition in kernels.h (row-major, strides).
void reference_product(const cuda::kernels::GemmParams& p, float* y) {
  const auto* pa = static_cast<const float*>(p.a);
  const auto* pb = static_cast<const float*>(p.b);
  const auto* pc = static_cast<const float*>(p.c);
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) {
        double acc = 0.0;
        for (int64_t l = 0; l < p.k; ++l) {
          acc += double(pa[b * p.a_batch + i * p.a_row + l * p.a_col]) * pb[b * p.b_batch + l * p.b_row + j * p.b_col];
        }
        double v = p.alpha * acc;
        if (p.has_c) v += p.beta * double(pc[b * p.c_batch + i * p.c_row + j * p.c_col]);
        y[b * p.y_batch + i * p.y_row + j] = static_cast<float>(v);
      }
    }
  }
}

TEST_CASE("a cuBLASLt plan computes the product it was made for (column-major emulation)", "[host]") {
  struct Case {
    std::string what;
    cuda::kernels::GemmParams p;
  };
  std::vector<Case> cases;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (int64_t m : {1, 5}) {
        cases.push_back({"m " + std::to_string(m) + " trans_a " + std::to_string(ta) + " trans_b " + std::to_string(tb),
                         product(m, 7, 3, ta, tb)});
      }
    }
  }
  Case linear{"Linear: transposed weight and bias", product(4, 6, 5, false, true)};
  linear.p.has_c = true, linear.p.beta = 1.0f, linear.p.c_col = 1;
  cases.push_back(linear);
  Case full_c{"alpha, beta, full C, output row stride 9", product(4, 6, 5, true, false)};
  full_c.p.has_c = true, full_c.p.alpha = 0.5f, full_c.p.beta = 2.0f, full_c.p.c_row = 6, full_c.p.c_col = 1;
  full_c.p.y_row = 9;
  cases.push_back(full_c);
  Case batched{"strided batch, broadcast B", product(3, 4, 5, false, false)};
  batched.p.batch = 6, batched.p.a_batch = 15, batched.p.b_batch = 0, batched.p.y_batch = 12;
  cases.push_back(batched);
  Case batched_b{"strided batch, broadcast A (MatMul of a constant by activations)", product(3, 4, 5, false, false)};
  batched_b.p.batch = 2, batched_b.p.a_batch = 0, batched_b.p.b_batch = 20, batched_b.p.y_batch = 12;
  cases.push_back(batched_b);

  std::mt19937 rng(11);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (Case& c : cases) {
    INFO(c.what);
    cuda::kernels::GemmParams& p = c.p;
    const cuda::GemmPlan plan = cuda::plan_gemm(p);
    REQUIRE(plan.cublas);
    auto span = [&](int64_t bs, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
      return static_cast<size_t>((p.batch - 1) * bs + (rows - 1) * rs + (cols - 1) * cs + 1);
    };
    std::vector<float> a(span(p.a_batch, p.m, p.k, p.a_row, p.a_col)), b(span(p.b_batch, p.k, p.n, p.b_row, p.b_col));
    std::vector<float> cm(p.has_c ? span(p.c_batch, p.m, p.n, p.c_row, p.c_col) : 1);
    for (auto* v : {&a, &b, &cm}) {
      for (float& x : *v) x = uniform(rng);
    }
    p.a = a.data(), p.b = b.data(), p.c = p.has_c ? cm.data() : nullptr;
    const size_t ys = span(p.y_batch, p.m, p.n, p.y_row, 1);
    std::vector<float> want(ys, -7.0f), got(ys, -7.0f);
    reference_product(p, want.data());
    emulate_cublaslt(plan, p, got.data());
    for (size_t i = 0; i < ys; ++i) {
      if (std::abs(want[i] - got[i]) > 1e-5f) FAIL("element " << i << ": " << got[i] << ", expected " << want[i]);
    }
  }
}

TEST_CASE("the own GEMM kernel's grid stays within CUDA's limits and refuses what it cannot cover", "[host]") {
  using cuda::kernels::gemm_grid;
  const int64_t tile = cuda::kernels::kGemmTile;
  SECTION("batch 1 and small products") {
    const auto g = gemm_grid(1, 1000, 1);
    CHECK(g.error == nullptr);
    CHECK(g.x == (1000 + tile - 1) / tile);
    CHECK(g.y == 1);
    CHECK(g.z == 1);
  }
  SECTION("row tiles at and beyond 65,535") {
    CHECK(gemm_grid(tile * 65535, 16, 1).y == 65535);
    const auto beyond = gemm_grid(tile * 65535 + 1, 16, 1);
    CHECK(beyond.error == nullptr);
    CHECK(beyond.y == 65535);  // the kernel loops over the 65,536th row tile
  }
  SECTION("batches at and beyond 65,535") {
    CHECK(gemm_grid(16, 16, 65535).z == 65535);
    const auto beyond = gemm_grid(16, 16, 65536);
    CHECK(beyond.error == nullptr);
    CHECK(beyond.z == 65535);
    CHECK(gemm_grid(16, 16, int64_t{1} << 40).z == 65535);
  }
  SECTION("column tiles at and beyond 2^31 - 1") {
    const int64_t max_x = cuda::kernels::kMaxGridX;
    const auto at = gemm_grid(1, max_x * tile, 1);
    CHECK(at.error == nullptr);
    CHECK(at.x == max_x);
    const auto beyond = gemm_grid(1, max_x * tile + 1, 1);
    REQUIRE(beyond.error != nullptr);
    CHECK(std::string(beyond.error).find("grid.x") != std::string::npos);
    // The launcher refuses it rather than launching a truncated grid.
    cuda::kernels::GemmParams p;
    p.m = 1, p.n = max_x * tile + 1, p.k = 1;
    CHECK(cuda::kernels::gemm(p, nullptr) == cudaErrorInvalidConfiguration);
  }
  SECTION("empty dimensions launch one block (the launcher skips them)") {
    const auto g = gemm_grid(0, 0, 0);
    CHECK(g.error == nullptr);
    CHECK(g.x == 1);
    CHECK(g.y == 1);
    CHECK(g.z == 1);
  }
}

// --- Element-wise: 32-bit index path ---------------------------------------------

TEST_CASE("IntDivider divides exactly like integer division below 2^31", "[host]") {
  std::mt19937 rng(7);
  std::vector<uint32_t> divisors = {1, 2, 3, 5, 7, 49, 64, 100, 196, 3136, 65535, 65536, 65537,
                                    (1u << 30) - 1, 1u << 30, (1u << 31) - 1};
  for (int i = 0; i < 200; ++i) divisors.push_back(1 + rng() % ((1u << 31) - 1));
  for (uint32_t d : divisors) {
    const cuda::kernels::IntDivider f(d);
    std::vector<uint32_t> dividends = {0, 1, d - 1, d, (1u << 31) - 1, (1u << 31) - 2};
    if (d < (1u << 30)) dividends.push_back(2 * d), dividends.push_back(2 * d - 1);
    for (int i = 0; i < 200; ++i) dividends.push_back(rng() % (1u << 31));
    for (uint32_t n : dividends) {
      if (n >= (1u << 31)) continue;
      if (f.div(n) != n / d || f.mod(n) != n % d) {
        FAIL("IntDivider(" << d << ") of " << n << ": " << f.div(n) << " r " << f.mod(n) << ", expected " << n / d
                           << " r " << n % d);
      }
    }
  }
}

// An element-wise chain on [n, c, h, w] with a per-channel operand.
cuda::kernels::EwParams channel_add(int64_t n, int64_t c, int64_t hw, int64_t batch_stride) {
  const ir::Shape out{n, c, hw, 1};
  cuda::kernels::EwParams p = cuda::ew_frame(out, nullptr, batch_stride);
  p.x = cuda::make_operand(nullptr, out, batch_stride, out);
  const cuda::kernels::EwOperand bias = cuda::make_operand(nullptr, {1, c, 1, 1}, c, out);
  cuda::add_step(p, OpKind::kAdd, 0, 0, &bias);
  return p;
}

TEST_CASE("the element-wise kernel indexes in 32 bits exactly when every offset is below 2^31", "[host]") {
  const int64_t limit = int64_t{1} << 31;
  // [n, 8, hw]: the largest dense tensor below 2^31 elements and the first at it.
  CHECK(cuda::kernels::ew_index_bits(channel_add(1, 8, limit / 8 - 1, 8 * (limit / 8 - 1))) == 32);
  CHECK(cuda::kernels::ew_index_bits(channel_add(1, 8, limit / 8, limit)) == 64);
  // Small items far apart (a slice of a huge concatenation): the offset decides.
  const int64_t item = 64;
  CHECK(cuda::kernels::ew_index_bits(channel_add(2, 1, item, limit - item)) == 32);
  CHECK(cuda::kernels::ew_index_bits(channel_add(2, 1, item, limit - item + 1)) == 64);
  // A broadcast operand with a generic stride past 2^31.
  cuda::kernels::EwParams generic = channel_add(2, 4, 16, 64);
  cuda::kernels::EwOperand far;
  far.mode = cuda::kernels::kGeneric;
  far.strides[0] = limit / 2;
  generic.operands[generic.num_operands++] = far;
  generic.generic = true;
  CHECK(cuda::kernels::ew_index_bits(generic) == 32);  // offset (2 - 1) * 2^30
  generic.operands[generic.num_operands - 1].strides[0] = limit;
  CHECK(cuda::kernels::ew_index_bits(generic) == 64);
  generic.operands[generic.num_operands - 1].strides[0] = -1;  // never in 32 bits
  CHECK(cuda::kernels::ew_index_bits(generic) == 64);
}

// --- Convolution choice: the attempt sequence -------------------------------------

TEST_CASE("the convolution choice keeps the fastest attempt and clears the error each refusal leaves", "[host]") {
  // A fake CUDA error state: a refused attempt leaves an error behind, which
  // the next attempt's first launch would report as its own unless cleared.
  bool pending_error = false;
  int clears = 0;
  std::vector<std::string> log;
  auto attempt = [&](std::string name, std::optional<float> ms) -> cuda::ConvAttempt {
    return [&, name, ms]() -> std::optional<float> {
      if (pending_error) {
        log.push_back(name + ": saw a stale error");
        return std::nullopt;
      }
      log.push_back(name);
      if (!ms) pending_error = true;
      return ms;
    };
  };
  auto clear = [&] {
    ++clears;
    pending_error = false;
  };
  SECTION("a refused fused call between candidates does not poison the next") {
    const std::vector<cuda::ConvAttempt> attempts = {attempt("fused algo 0", std::nullopt),
                                                     attempt("plain algo 0 + epilogue", 0.9f),
                                                     attempt("fused algo 1", 2.0f),
                                                     attempt("staged fused algo 0", std::nullopt),
                                                     attempt("staged plain algo 1 + epilogue", 0.4f)};
    const std::optional<size_t> best = cuda::fastest_attempt(attempts, clear);
    REQUIRE(best.has_value());
    CHECK(*best == 4);  // the fastest, not the first that runs
    CHECK(clears == 2);
    CHECK(log == std::vector<std::string>{"fused algo 0", "plain algo 0 + epilogue", "fused algo 1",
                                          "staged fused algo 0", "staged plain algo 1 + epilogue"});
  }
  SECTION("a slow fused call loses to a plain call and its epilogue") {
    const std::vector<cuda::ConvAttempt> attempts = {attempt("fused", 3.0f), attempt("plain + epilogue", 1.0f)};
    CHECK(cuda::fastest_attempt(attempts, clear) == std::optional<size_t>(1));
    CHECK(clears == 0);
  }
  SECTION("equal times keep the first") {
    const std::vector<cuda::ConvAttempt> attempts = {attempt("a", 1.0f), attempt("b", 1.0f)};
    CHECK(cuda::fastest_attempt(attempts, clear) == std::optional<size_t>(0));
  }
  SECTION("nothing runs") {
    const std::vector<cuda::ConvAttempt> attempts = {attempt("a", std::nullopt), attempt("b", std::nullopt)};
    CHECK_FALSE(cuda::fastest_attempt(attempts, clear).has_value());
    CHECK(clears == 2);
    CHECK_FALSE(pending_error);
    CHECK(cuda::fastest_attempt({}, clear) == std::nullopt);
  }
}

// --- On the GPU ------------------------------------------------------------------

// Every distinct Gemm and MatMul of the generated models: its operator, its
// inputs' shapes (constant or not) and its attributes.
struct ProductCase {
  OpKind op = OpKind::kMatMul;
  std::vector<ir::Shape> shapes;
  std::vector<bool> constant;
  ir::GemmAttrs gemm;
  std::string example;  // model and node
  auto key() const { return std::tie(op, shapes, constant, gemm.alpha, gemm.beta, gemm.trans_a, gemm.trans_b); }
  bool operator<(const ProductCase& o) const { return key() < o.key(); }
};

std::set<ProductCase> shipped_products() {
  std::set<ProductCase> cases;
  for (const ShippedModel& shipped : shipped_models(test::models_dir())) {
    for (int64_t batch : {1, 8}) {
      if (!shipped.runs_at(batch)) continue;
      onnx::ImportOptions import;
      import.batch = shipped.import_batch(batch);
      const onnx::ImportedModel model = onnx::import_model(shipped.file.string(), import);
      for (const ir::Node& node : model.graph.nodes()) {
        if (node.op != OpKind::kGemm && node.op != OpKind::kMatMul) continue;
        ProductCase c;
        c.op = node.op;
        for (ir::TensorId t : node.inputs) {
          if (t == ir::kNone) continue;
          c.shapes.push_back(model.graph.tensor(t).shape);
          c.constant.push_back(model.graph.tensor(t).is_constant());
        }
        if (node.op == OpKind::kGemm) c.gemm = node.attr<ir::GemmAttrs>();
        c.example = shipped.file.filename().string() + " node '" + node.name + "'";
        cases.insert(c);
      }
    }
  }
  return cases;
}

TEST_CASE("every Gemm and MatMul shape of the generated models runs on cuBLASLt and matches the CPU", "[gpu][ops]") {
  INFO("models directory: " << test::models_dir());
  REQUIRE_FALSE(shipped_models(test::models_dir()).empty());  // scripts/make-models.sh generates them
  const std::set<ProductCase> cases = shipped_products();
  REQUIRE_FALSE(cases.empty());
  for (const ProductCase& c : cases) {
    std::string what = std::string(c.op == OpKind::kGemm ? "Gemm" : "MatMul");
    for (const ir::Shape& s : c.shapes) what += " " + ir::to_string(s);
    what += " (" + c.example + ")";
    INFO(what);
    GraphBuilder b;
    std::vector<ir::TensorId> inputs;
    for (size_t i = 0; i < c.shapes.size(); ++i) {
      const std::string name = "in" + std::to_string(i);
      inputs.push_back(c.constant[i] ? b.weight(name, c.shapes[i], 0.1f) : b.input(name, c.shapes[i]));
    }
    ir::Attrs attrs;
    if (c.op == OpKind::kGemm) attrs = c.gemm;
    b.output(b.node(c.op, "y", inputs, attrs));
    check_against_reference(b.graph(), what);
    // And cuBLASLt ran it, not the own kernel.
    const sched::UnitGraph units = sched::UnitGraph::form(b.graph());
    const exec::ExecPlan plan = exec::lower(units, sequential_schedule(units));
    cuda::Engine engine(units, plan);
    CHECK(engine.describe().find("cublasLt gemm") != std::string::npos);
    CHECK(engine.describe().find("own gemm") == std::string::npos);
  }
}

TEST_CASE("the own GEMM kernel covers broadcasts cuBLASLt does not add", "[gpu][ops]") {
  for (const ir::Shape& c_shape : {ir::Shape{1}, ir::Shape{5, 1}}) {
    GraphBuilder b;
    const auto x = b.input("x", {5, 6});
    ir::GemmAttrs g;
    g.beta = 0.5f;
    b.output(b.node(OpKind::kGemm, "y", {x, b.weight("w", {6, 7}), b.weight("c", c_shape)}, g));
    check_against_reference(b.graph(), "Gemm with C " + ir::to_string(c_shape));
    const sched::UnitGraph units = sched::UnitGraph::form(b.graph());
    cuda::Engine engine(units, exec::lower(units, sequential_schedule(units)));
    CHECK(engine.describe().find("own gemm") != std::string::npos);
  }
}

TEST_CASE("the own GEMM kernel loops over row tiles and batches beyond the grid's 65,535", "[gpu][ops]") {
  struct Case {
    std::string what;
    cuda::kernels::GemmParams p;
  };
  Case batches{"65,537 batches of 3 x 2 x 4", product(3, 2, 4, false, true)};
  batches.p.batch = 65537, batches.p.a_batch = 12, batches.p.b_batch = 8, batches.p.y_batch = 6;
  Case rows{"16 * 65,535 + 20 rows", product(16 * 65535 + 20, 3, 2, false, false)};
  rows.p.has_c = true, rows.p.beta = 0.5f, rows.p.c_col = 1;  // a bias row
  for (const Case& c : std::vector<Case>{batches, rows}) {
    INFO(c.what);
    cuda::kernels::GemmParams p = c.p;
    REQUIRE(cuda::kernels::gemm_grid(p.m, p.n, p.batch).error == nullptr);
    auto span = [&](int64_t bs, int64_t r, int64_t cl, int64_t rs, int64_t cs) {
      return static_cast<size_t>((p.batch - 1) * bs + (r - 1) * rs + (cl - 1) * cs + 1);
    };
    std::vector<float> a(span(p.a_batch, p.m, p.k, p.a_row, p.a_col)), b(span(p.b_batch, p.k, p.n, p.b_row, p.b_col)),
        cm(p.has_c ? span(p.c_batch, p.m, p.n, p.c_row, p.c_col) : 1);
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (auto* v : {&a, &b, &cm}) {
      for (float& x : *v) x = uniform(rng);
    }
    const size_t ys = span(p.y_batch, p.m, p.n, p.y_row, 1);
    cuda::DeviceBuffer da(a.size() * 4), db(b.size() * 4), dc(cm.size() * 4), dy(ys * 4);
    REQUIRE(cudaMemcpy(da.get(), a.data(), a.size() * 4, cudaMemcpyHostToDevice) == cudaSuccess);
    REQUIRE(cudaMemcpy(db.get(), b.data(), b.size() * 4, cudaMemcpyHostToDevice) == cudaSuccess);
    REQUIRE(cudaMemcpy(dc.get(), cm.data(), cm.size() * 4, cudaMemcpyHostToDevice) == cudaSuccess);
    REQUIRE(cudaMemset(dy.get(), 0, ys * 4) == cudaSuccess);
    p.a = static_cast<const float*>(da.get()), p.b = static_cast<const float*>(db.get());
    p.c = p.has_c ? static_cast<const float*>(dc.get()) : nullptr;
    p.y = static_cast<float*>(dy.get());
    REQUIRE(cuda::kernels::gemm(p, nullptr) == cudaSuccess);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    std::vector<float> got(ys), want(ys, 0.0f);
    REQUIRE(cudaMemcpy(got.data(), p.y, ys * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
    cuda::kernels::GemmParams host = p;
    host.a = a.data(), host.b = b.data(), host.c = p.has_c ? cm.data() : nullptr;
    reference_product(host, want.data());
    size_t wrong = 0;
    for (size_t i = 0; i < ys; ++i) wrong += std::abs(got[i] - want[i]) > 1e-5f ? 1 : 0;
    CHECK(wrong == 0);
  }
}

TEST_CASE("the element-wise kernel's 32- and 64-bit paths agree with the host", "[gpu][ops]") {
  // [n, c, h, w] + per-channel bias, * a generic broadcast [1, 1, h, 1], relu;
  // output strided (a slice of a larger buffer).
  const int64_t n = 3, c = 5, h = 7, w = 9, item = c * h * w, y_stride = item + 11;
  const ir::Shape out{n, c, h, w};
  std::vector<float> x(static_cast<size_t>(n * item)), bias(c), row(h);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (float& v : x) v = uniform(rng);
  for (float& v : bias) v = uniform(rng);
  for (float& v : row) v = uniform(rng);
  cuda::DeviceBuffer dx(x.size() * 4), dbias(bias.size() * 4), drow(row.size() * 4),
      dy(static_cast<size_t>(n * y_stride) * 4);
  REQUIRE(cudaMemcpy(dx.get(), x.data(), x.size() * 4, cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(cudaMemcpy(dbias.get(), bias.data(), bias.size() * 4, cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(cudaMemcpy(drow.get(), row.data(), row.size() * 4, cudaMemcpyHostToDevice) == cudaSuccess);
  float* y = static_cast<float*>(dy.get());
  cuda::kernels::EwParams p = cuda::ew_frame(out, y, y_stride);
  p.x = cuda::make_operand(static_cast<const float*>(dx.get()), out, item, out);
  const auto b_op = cuda::make_operand(static_cast<const float*>(dbias.get()), {1, c, 1, 1}, c, out);
  cuda::add_step(p, OpKind::kAdd, 0, 0, &b_op);
  const auto r_op = cuda::make_operand(static_cast<const float*>(drow.get()), {1, 1, h, 1}, h, out);
  cuda::add_step(p, OpKind::kMul, 0, 0, &r_op);
  cuda::add_step(p, OpKind::kRelu, 0, 0, nullptr);
  REQUIRE(p.generic);  // the [1, 1, h, 1] operand needs full index decomposition
  REQUIRE(cuda::kernels::ew_index_bits(p) == 32);

  std::vector<float> expected(x.size());
  for (int64_t i = 0; i < n * item; ++i) {
    const int64_t ch = (i % item) / (h * w), hh = (i % (h * w)) / w;
    expected[static_cast<size_t>(i)] = std::max(0.0f, (x[static_cast<size_t>(i)] + bias[ch]) * row[hh]);
  }
  for (int bits : {32, 64}) {
    for (bool generic : {true, false}) {
      INFO(bits << "-bit, " << (generic ? "generic" : "simple") << " indexing");
      cuda::kernels::EwParams q = p;
      q.index_bits = bits;
      if (!generic) q.num_steps = 1;  // x + bias only: no generic operand
      q.generic = generic;
      REQUIRE(cudaMemset(y, 0, static_cast<size_t>(n * y_stride) * 4) == cudaSuccess);
      REQUIRE(cuda::kernels::elementwise(q, nullptr) == cudaSuccess);
      std::vector<float> got(static_cast<size_t>(n * y_stride));
      REQUIRE(cudaMemcpy(got.data(), y, got.size() * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
      int wrong = 0;
      for (int64_t i = 0; i < n * item; ++i) {
        const int64_t ch = (i % item) / (h * w);
        const float want = generic ? expected[static_cast<size_t>(i)] : x[static_cast<size_t>(i)] + bias[ch];
        const float have = got[static_cast<size_t>((i / item) * y_stride + i % item)];
        wrong += have != want ? 1 : 0;
      }
      CHECK(wrong == 0);
      // The gap between items is untouched.
      CHECK(got[static_cast<size_t>(item)] == 0.0f);
    }
  }
  // Forcing 32 bits where offsets do not fit is refused, not run wrong.
  cuda::kernels::EwParams too_far = p;
  too_far.y_batch_stride = int64_t{1} << 31;
  too_far.index_bits = 32;
  CHECK(cuda::kernels::elementwise(too_far, nullptr) == cudaErrorInvalidValue);
}

TEST_CASE("convolution choice picks a working algorithm and leaves no CUDA error behind", "[gpu][ops]") {
  for (ir::MathMode math : {ir::MathMode::kTf32, ir::MathMode::kFp32}) {
    cuda::Context ctx(0, math, size_t{64} << 20);
    cuda::ConvShape s;
    s.n = 2, s.c = 32, s.in = {14, 14}, s.k = 48, s.filter = {3, 3}, s.out = {14, 14},
    s.pad = {1, 1};
    s.x_batch_stride = s.x_item();
    s.y_batch_stride = 96 * 14 * 14;  // y is a channel slice of a concatenation
    s.fused = true;
    const cuda::ConvChoice choice = cuda::choose_conv(ctx, s, "test conv");
    INFO(ir::math_mode_name(math) << ": " << cuda::conv_algo_name(choice.algo));
    CHECK(choice.time_ms > 0.0f);
    CHECK(choice.workspace <= ctx.workspace_limit());
    CHECK(cudaGetLastError() == cudaSuccess);
    if (math == ir::MathMode::kFp32) CHECK(choice.math == CUDNN_FMA_MATH);
    // The choice is remembered for the same shape.
    const cuda::ConvChoice again = cuda::choose_conv(ctx, s, "test conv");
    CHECK(again.algo == choice.algo);
    CHECK(again.fused == choice.fused);
  }
}

#endif  // IOS_HAVE_CUDA

}  // namespace
}  // namespace ios::gputest
