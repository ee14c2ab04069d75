#include "cuda/gemm.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <map>
#include <mutex>
#include <optional>

#include "core/error.h"
#include "core/log.h"
#include "cuda/check.h"
#include "cuda/cublaslt.h"
#include "cuda/cuda_types.h"
#include "cuda/program.h"

namespace ios::cuda {
namespace {

// A column-major view of a row-major operand of `rows` x `cols` with
// element strides (row, col): row-major (col == 1) is the transpose stored
// column-major, untransposed; transposed storage (row == 1) is column-major
// and cuBLASLt transposes it. Neither (a general stride, or a broadcast):
// no view. A single row or column has a free stride; the leading dimension
// is then the smallest valid one.
std::optional<LtMatrix> column_major(int64_t rows, int64_t cols, int64_t row, int64_t col, int64_t batch) {
  LtMatrix m;
  m.batch_stride = batch;
  if (col == 1 && (row >= cols || rows == 1)) {
    m.transpose = false;  // stored [cols x rows] column-major = the operand transposed
    m.rows = cols, m.cols = rows, m.ld = rows == 1 ? std::max<int64_t>(cols, 1) : row;
    return m;
  }
  if (row == 1 && (col >= rows || cols == 1)) {
    m.transpose = true;  // stored [rows x cols] column-major: cuBLASLt transposes it back
    m.rows = rows, m.cols = cols, m.ld = cols == 1 ? std::max<int64_t>(rows, 1) : col;
    return m;
  }
  return std::nullopt;
}

GemmPlan own(std::string why) {
  GemmPlan plan;
  plan.own_reason = std::move(why);
  return plan;
}

// The loaded library (choose_gemm() makes no cuBLASLt plan without it).
const CublasLt& lt() {
  static const CublasLt& loaded = cublaslt();
  return loaded;
}

std::mutex cache_mutex;
std::map<std::string, GemmChoice>& cache() {
  static std::map<std::string, GemmChoice> choices;
  return choices;
}

void make_layout(cublasLtMatrixLayout_t* out, const LtMatrix& m, int batch, ir::ElementType type) {
  IOS_CUBLAS_CALL(lt().cublasLtMatrixLayoutCreate(out, cublas_type(type), static_cast<uint64_t>(m.rows),
                                             static_cast<uint64_t>(m.cols), m.ld));
  if (batch > 1) {
    const int32_t count = batch;
    const int64_t stride = m.batch_stride;
    IOS_CUBLAS_CALL(lt().cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
    IOS_CUBLAS_CALL(
        lt().cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  }
}

// Elements an operand addressed by (batch, row, col) strides spans.
int64_t extent(int64_t batch, int64_t rows, int64_t cols, int64_t bs, int64_t rs, int64_t cs) {
  return (batch - 1) * bs + (rows - 1) * rs + (cols - 1) * cs + 1;
}

std::string plan_key(const kernels::GemmParams& p) {
  std::string key = fmt::format("m{}n{}k{}b{}|a{},{},{}|b{},{},{}|c{}:{},{},{}|y{},{}|{}", p.m, p.n, p.k, p.batch,
                                p.a_batch, p.a_row, p.a_col, p.b_batch, p.b_row, p.b_col, p.has_c ? 1 : 0, p.c_batch,
                                p.c_row, p.c_col, p.y_batch, p.y_row, p.beta);
  if (p.type != ir::ElementType::kFloat32) key += std::string("|") + ir::type_name(p.type);  // float32 keys unchanged
  return key;
}

}  // namespace

struct LtProduct::Descriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  ~Descriptors() {
    if (a) IOS_CUBLAS_CALL_NOTHROW(lt().cublasLtMatrixLayoutDestroy(a));
    if (b) IOS_CUBLAS_CALL_NOTHROW(lt().cublasLtMatrixLayoutDestroy(b));
    if (c) IOS_CUBLAS_CALL_NOTHROW(lt().cublasLtMatrixLayoutDestroy(c));
    if (d) IOS_CUBLAS_CALL_NOTHROW(lt().cublasLtMatrixLayoutDestroy(d));
    if (op) IOS_CUBLAS_CALL_NOTHROW(lt().cublasLtMatmulDescDestroy(op));
  }
};

LtProduct::LtProduct(const GemmChoice& choice, const kernels::GemmParams& p)
    : choice_(choice), d_(std::make_unique<Descriptors>()) {
  const GemmPlan& plan = choice.plan;
  IOS_ASSERT(plan.cublas, "a product planned for the own kernel ({}) run on cuBLASLt", plan.own_reason);
  // A 16-bit product: A, B, C and D in the type, float accumulation and
  // float alpha/beta (CUBLAS_COMPUTE_32F, scale type CUDA_R_32F), on tensor
  // cores; the bias epilogue reads the bias in D's type (cuBLASLt's default
  // bias type for 16-bit D). TF32 concerns float32 products only.
  const bool tf32 = choice.tf32 && p.type == ir::ElementType::kFloat32;
  IOS_CUBLAS_CALL(lt().cublasLtMatmulDescCreate(&d_->op, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                                           CUDA_R_32F));
  const int32_t ta = plan.a.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int32_t tb = plan.b.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  IOS_CUBLAS_CALL(lt().cublasLtMatmulDescSetAttribute(d_->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  IOS_CUBLAS_CALL(lt().cublasLtMatmulDescSetAttribute(d_->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  if (plan.bias) {
    const int32_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    IOS_CUBLAS_CALL(
        lt().cublasLtMatmulDescSetAttribute(d_->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    const void* bias = p.c;  // may be null while choosing: heuristics do not read it
    IOS_CUBLAS_CALL(lt().cublasLtMatmulDescSetAttribute(d_->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  }
  make_layout(&d_->a, plan.a, plan.batch, p.type);
  make_layout(&d_->b, plan.b, plan.batch, p.type);
  make_layout(&d_->c, plan.c_matrix ? plan.c : plan.d, plan.batch, p.type);
  make_layout(&d_->d, plan.d, plan.batch, p.type);
}

LtProduct::~LtProduct() = default;

cublasLtMatmulDesc_t LtProduct::descriptor() const { return d_->op; }

cublasLtMatrixLayout_t LtProduct::layout(int i) const {
  const cublasLtMatrixLayout_t layouts[4] = {d_->a, d_->b, d_->c, d_->d};
  return layouts[i];
}

cublasStatus_t LtProduct::run(const kernels::GemmParams& p, void* workspace, cudaStream_t stream) const {
  const float alpha = p.alpha;
  const float beta = choice_.plan.c_matrix ? p.beta : 0.0f;
  // cuBLASLt's A is the product's B (gemm.h).
  return lt().cublasLtMatmul(choice_.handle, d_->op, &alpha, p.b, d_->a, p.a, d_->b, &beta,
                        choice_.plan.c_matrix ? p.c : p.y, d_->c, p.y, d_->d, &choice_.algo, workspace,
                        choice_.workspace, stream);
}

GemmPlan plan_gemm(const kernels::GemmParams& p) {
  if (p.m <= 0 || p.n <= 0 || p.k <= 0 || p.batch <= 0) return own("an empty dimension");
  if (p.batch > INT_MAX) return own("more batches than cuBLASLt counts");
  const auto a = column_major(p.m, p.k, p.a_row, p.a_col, p.a_batch);
  if (!a) return own("A is neither row- nor column-major");
  const auto b = column_major(p.k, p.n, p.b_row, p.b_col, p.b_batch);
  if (!b) return own("B is neither row- nor column-major");
  const auto y = column_major(p.m, p.n, p.y_row, 1, p.y_batch);
  if (!y || y->transpose) return own("Y is not row-major");
  GemmPlan plan;
  plan.a = *b;  // cuBLASLt's A is the product's B (gemm.h)
  plan.b = *a;
  plan.d = *y;
  plan.batch = static_cast<int>(p.batch);
  if (p.has_c && p.beta != 0.0f) {
    const auto c = column_major(p.m, p.n, p.c_row, p.c_col, p.c_batch);
    if (c && !c->transpose) {
      plan.c = *c;  // a full matrix (per batch, or one for all)
      plan.c_matrix = true;
    } else if (p.c_row == 0 && p.c_col == 1 && p.beta == 1.0f && p.batch == 1) {
      plan.bias = true;  // one row for every row: Linear's bias
    } else {
      return own("C is broadcast in a way cuBLASLt does not add");
    }
  }
  plan.cublas = true;
  return plan;
}

uint32_t gemm_alignment(int64_t element_offset, ir::ElementType type) {
  return static_cast<uint32_t>(pointer_alignment(element_offset, ir::bytes_of(type)));
}

GemmChoice choose_gemm(Context& ctx, const kernels::GemmParams& p, uint32_t align_a, uint32_t align_b,
                       uint32_t align_c, uint32_t align_y, const std::string& label) {
  GemmChoice choice;
  choice.plan = plan_gemm(p);
  choice.tf32 = ctx.math() == ir::MathMode::kTf32;
  choice.align_a = align_a, choice.align_b = align_b, choice.align_c = align_c, choice.align_y = align_y;
  if (choice.plan.bias && align_c < 16) {
    // cuBLASLt's epilogue reads the bias vectorised: a bias that is not a
    // constant (those are buffer-aligned) may sit anywhere in the arena.
    choice.plan = GemmPlan{};
    choice.plan.own_reason = "a bias row less than 16-byte aligned";
  }
  std::string missing;
  if (choice.plan.cublas && load_cublaslt(&missing) == nullptr) {
    choice.plan = GemmPlan{};
    choice.plan.own_reason = missing;  // the loader warned once
  }
  if (!choice.plan.cublas) {
    logger("cuda")->debug("product '{}' runs on the own kernel: {}", label, choice.plan.own_reason);
    return choice;
  }
  const std::string key = fmt::format("{}|{}|{}|{}|{},{},{},{}", ctx.key(), ir::math_mode_name(ctx.math()),
                                      ctx.workspace_limit(), plan_key(p), align_a, align_b, align_c, align_y);
  choice.handle = ctx.cublaslt();
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    auto it = cache().find(key);
    if (it != cache().end()) {
      GemmChoice cached = it->second;
      cached.handle = choice.handle;
      return cached;
    }
  }
  auto remember = [&](const GemmChoice& c) {
    std::lock_guard<std::mutex> lock(cache_mutex);
    cache()[key] = c;
    return c;
  };

  // Scratch operands aligned exactly like the engine's pointers (the
  // heuristic's answer depends on alignment).
  const auto element_bytes = static_cast<size_t>(ir::bytes_of(p.type));
  auto bytes = [&](int64_t elements) { return static_cast<size_t>(std::max<int64_t>(elements, 1)) * element_bytes; };
  auto aligned = [&](int slot, int64_t elements, uint32_t alignment) {
    char* base = static_cast<char*>(ctx.scratch(slot, bytes(elements) + kBufferAlignment));
    return static_cast<void*>(base + alignment % kBufferAlignment);
  };
  kernels::GemmParams trial = p;
  trial.a = aligned(0, extent(p.batch, p.m, p.k, p.a_batch, p.a_row, p.a_col), align_a);
  trial.b = aligned(1, extent(p.batch, p.k, p.n, p.b_batch, p.b_row, p.b_col), align_b);
  trial.c = p.has_c ? aligned(2, extent(p.batch, p.m, p.n, p.c_batch, p.c_row, p.c_col), align_c) : nullptr;
  trial.y = aligned(3, extent(p.batch, p.m, p.n, p.y_batch, p.y_row, 1), align_y);
  const size_t limit = std::min(ctx.workspace_limit(), kGemmWorkspaceLimit);
  void* workspace = ctx.scratch(4, std::max<size_t>(limit, 1));

  LtProduct descriptors(choice, trial);
  cublasLtMatmulPreference_t pref = nullptr;
  IOS_CUBLAS_CALL(lt().cublasLtMatmulPreferenceCreate(&pref));
  struct PrefGuard {
    cublasLtMatmulPreference_t p;
    ~PrefGuard() { IOS_CUBLAS_CALL_NOTHROW(lt().cublasLtMatmulPreferenceDestroy(p)); }
  } guard{pref};
  const uint64_t max_workspace = limit;
  IOS_CUBLAS_CALL(lt().cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                       &max_workspace, sizeof(max_workspace)));
  // cuBLASLt's A is the product's B.
  const uint32_t lt_align[4] = {align_b, align_a, choice.plan.c_matrix ? align_c : align_y, align_y};
  const cublasLtMatmulPreferenceAttributes_t lt_attr[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i) {
    IOS_CUBLAS_CALL(lt().cublasLtMatmulPreferenceSetAttribute(pref, lt_attr[i], &lt_align[i], sizeof(lt_align[i])));
  }
  constexpr int kCandidates = 8;
  cublasLtMatmulHeuristicResult_t results[kCandidates] = {};
  int returned = 0;
  const cublasStatus_t status =
      lt().cublasLtMatmulAlgoGetHeuristic(choice.handle, descriptors.descriptor(), descriptors.layout(0),
                                     descriptors.layout(1), descriptors.layout(2), descriptors.layout(3), pref,
                                     kCandidates, results, &returned);
  std::string problem = status == CUBLAS_STATUS_SUCCESS ? "cuBLASLt has no algorithm for it"
                                                        : fmt::format("cublasLtMatmulAlgoGetHeuristic: {}",
                                                                      lt().cublasLtGetStatusString(status));
  if (status != CUBLAS_STATUS_SUCCESS) detail::clear_failed_attempt();
  for (int i = 0; status == CUBLAS_STATUS_SUCCESS && i < returned; ++i) {
    if (results[i].state != CUBLAS_STATUS_SUCCESS || results[i].workspaceSize > limit) continue;
    GemmChoice candidate = choice;
    candidate.algo = results[i].algo;
    candidate.workspace = results[i].workspaceSize;
    // The call the engine will make, once, on the scratch operands.
    const LtProduct product(candidate, trial);
    const cublasStatus_t run = product.run(trial, workspace, ctx.stream(0));
    const cudaError_t sync = cudaStreamSynchronize(ctx.stream(0));
    if (run == CUBLAS_STATUS_SUCCESS && sync == cudaSuccess) return remember(candidate);
    problem = run != CUBLAS_STATUS_SUCCESS ? fmt::format("cublasLtMatmul: {}", lt().cublasLtGetStatusString(run))
                                           : fmt::format("cublasLtMatmul: {}", cudaGetErrorName(sync));
    detail::clear_failed_attempt();
    // A sticky error (the context is lost) must not pass for a refusal.
    IOS_CUDA_CALL(cudaStreamSynchronize(ctx.stream(0)));
  }
  logger("cuda")->debug("product '{}' runs on the own kernel: {}", label, problem);
  GemmChoice fallback = choice;
  fallback.plan = GemmPlan{};
  fallback.plan.own_reason = problem;
  return remember(fallback);
}

}  // namespace ios::cuda
