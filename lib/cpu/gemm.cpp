#include "cpu/gemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "cpu/parallel.h"

namespace ios::cpu {
namespace {

// Register tile (MR x NR) and cache blocks. With the default K block, a
// KC x NR panel of B (8 KiB) stays in L1 while the micro-kernel runs; an
// MC x KC block of A (120 KiB) stays in L2; a KC x NC block of B (1 MiB) in L3.
constexpr int64_t kMR = 6;
constexpr int64_t kNR = 8;
constexpr int64_t kMC = 120;
constexpr int64_t kNC = 1024;

typedef float v4sf __attribute__((vector_size(16)));

inline v4sf load4(const float* p) {
  v4sf v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline void store4(float* p, v4sf v) { std::memcpy(p, &v, sizeof(v)); }

// Packs rows [i0, i0+mc) x cols [p0, p0+kc) of A into MR-row panels:
// panel r holds, for each k, the MR values A(i0 + r*MR + 0..MR-1, p0 + k).
void pack_a(MatrixRef a, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* out) {
  for (int64_t ir = 0; ir < mc; ir += kMR) {
    const int64_t rows = std::min(kMR, mc - ir);
    for (int64_t k = 0; k < kc; ++k) {
      for (int64_t r = 0; r < kMR; ++r) {
        *out++ = r < rows ? a.at(i0 + ir + r, p0 + k) : 0.0f;
      }
    }
  }
}

// Packs rows [p0, p0+kc) x cols [j0, j0+nc) of B into NR-column panels.
void pack_b(MatrixRef b, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* out) {
  for (int64_t jr = 0; jr < nc; jr += kNR) {
    const int64_t cols = std::min(kNR, nc - jr);
    for (int64_t k = 0; k < kc; ++k) {
      const float* row = b.data + (p0 + k) * b.row_stride + (j0 + jr) * b.col_stride;
      if (cols == kNR && b.col_stride == 1) {
        std::memcpy(out, row, kNR * sizeof(float));
        out += kNR;
      } else {
        for (int64_t c = 0; c < kNR; ++c) *out++ = c < cols ? row[c * b.col_stride] : 0.0f;
      }
    }
  }
}

// C[mr x nr] += Ap (kc x MR panel)^T * Bp (kc x NR panel); twelve 4-wide
// accumulators hold the 6x8 tile.
void micro_kernel(int64_t kc, const float* ap, const float* bp, float* c, int64_t ldc, int64_t mr, int64_t nr) {
  v4sf c00{}, c01{}, c10{}, c11{}, c20{}, c21{}, c30{}, c31{}, c40{}, c41{}, c50{}, c51{};
  for (int64_t k = 0; k < kc; ++k) {
    const v4sf b0 = load4(bp);
    const v4sf b1 = load4(bp + 4);
    c00 += ap[0] * b0;
    c01 += ap[0] * b1;
    c10 += ap[1] * b0;
    c11 += ap[1] * b1;
    c20 += ap[2] * b0;
    c21 += ap[2] * b1;
    c30 += ap[3] * b0;
    c31 += ap[3] * b1;
    c40 += ap[4] * b0;
    c41 += ap[4] * b1;
    c50 += ap[5] * b0;
    c51 += ap[5] * b1;
    ap += kMR;
    bp += kNR;
  }
  const v4sf acc[kMR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  if (mr == kMR && nr == kNR) {
    for (int64_t r = 0; r < kMR; ++r) {
      float* row = c + r * ldc;
      store4(row, load4(row) + acc[r][0]);
      store4(row + 4, load4(row + 4) + acc[r][1]);
    }
    return;
  }
  float tile[kMR][kNR];
  for (int64_t r = 0; r < kMR; ++r) {
    store4(&tile[r][0], acc[r][0]);
    store4(&tile[r][4], acc[r][1]);
  }
  for (int64_t r = 0; r < mr; ++r) {
    for (int64_t j = 0; j < nr; ++j) c[r * ldc + j] += tile[r][j];
  }
}

void gemm_serial(int64_t m, int64_t n, int64_t k, MatrixRef a, MatrixRef b, float* c, int64_t ldc, int64_t k_block) {
  // Long K blocks get narrower B blocks, so a packed B block stays ~1 MiB.
  const int64_t nc_block = std::clamp(kNC * kDefaultKBlock / k_block / kNR * kNR, 8 * kNR, kNC);
  // Per-thread packing buffers, kept between calls on the same thread.
  thread_local std::vector<float> a_pack, b_pack;
  a_pack.resize(static_cast<size_t>((kMC + kMR) * k_block));
  b_pack.resize(static_cast<size_t>((nc_block + kNR) * k_block));
  for (int64_t jc = 0; jc < n; jc += nc_block) {
    const int64_t nc = std::min(nc_block, n - jc);
    for (int64_t pc = 0; pc < k; pc += k_block) {
      const int64_t kc = std::min(k_block, k - pc);
      pack_b(b, pc, kc, jc, nc, b_pack.data());
      for (int64_t ic = 0; ic < m; ic += kMC) {
        const int64_t mc = std::min(kMC, m - ic);
        pack_a(a, ic, mc, pc, kc, a_pack.data());
        for (int64_t jr = 0; jr < nc; jr += kNR) {
          const float* bp = b_pack.data() + jr * kc;
          for (int64_t ir = 0; ir < mc; ir += kMR) {
            micro_kernel(kc, a_pack.data() + ir * kc, bp, c + (ic + ir) * ldc + jc + jr, ldc,
                         std::min(kMR, mc - ir), std::min(kNR, nc - jr));
          }
        }
      }
    }
  }
}

}  // namespace

void gemm_accumulate(int64_t m, int64_t n, int64_t k, MatrixRef a, MatrixRef b, float* c, int64_t ldc,
                     int threads, int64_t k_block) {
  if (m <= 0 || n <= 0 || k <= 0) return;
  k_block = std::max<int64_t>(k_block, 1);
  const int t = threads_for(m * n * k, threads);
  if (t <= 1) {
    gemm_serial(m, n, k, a, b, c, ldc, k_block);
    return;
  }
  // Split the output along its larger side; each thread packs its own panels.
  if (n >= m) {
    parallel_for(n, t, kNR, [&](int64_t j0, int64_t j1) {
      MatrixRef bj{b.data + j0 * b.col_stride, b.row_stride, b.col_stride};
      gemm_serial(m, j1 - j0, k, a, bj, c + j0, ldc, k_block);
    });
  } else {
    parallel_for(m, t, kMR, [&](int64_t i0, int64_t i1) {
      MatrixRef ai{a.data + i0 * a.row_stride, a.row_stride, a.col_stride};
      gemm_serial(i1 - i0, n, k, ai, b, c + i0 * ldc, ldc, k_block);
    });
  }
}

}  // namespace ios::cpu
