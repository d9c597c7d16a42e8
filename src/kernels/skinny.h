// Skinny products (n <= kSkinnyMaxN columns of C, kernel.h's SkinnyKernel):
// C = alpha op(A) op(B) + beta C with op(A) read in place, once. Such a
// product does 2n flops per element of A, so it is bound by streaming A
// from memory (DiT's adaLN Linear: a 2304 x 384 weight against a batch of
// 8); packing A would read it, write a copy and read that again, and the
// microkernel's 12-column tile would be mostly padding.
//
// op(B) is contiguous in k (kernel.h's SkinnyKernel: the driver copies it
// otherwise, n x k elements). op(A) = A (ta = N): C's rows in blocks of
// three vectors, NB <= 8 columns at a time; each k step loads a column of
// the block and broadcasts op(B)'s NB values. op(A) = A^T: op(A)'s rows are
// contiguous in k, so R = 4 rows by NB <= 4 columns are dot products along
// k, vectorised over k and summed across lanes at the end.
//
// W is a vector-traits type as in simd_tile.h, plus reduce_add.
#pragma once

#include <xmmintrin.h>

#include <algorithm>

#include "kernels/kernel.h"

// GCC 12 warns that the undefined vector inside _mm512_reduce_add_ps/pd's
// shuffles "may be used uninitialized" once inlined here: a false positive
// (the instruction overwrites it), silenced for this header only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace hcops {
namespace kernels {
namespace skinny {

// How far ahead (in k steps) the ta = N loop prefetches op(A)'s columns: they
// are lda apart, a stride the hardware prefetchers follow poorly.
constexpr long kPrefetchSteps = 16;
// How far ahead (in rows of op(A)) the ta = T loop prefetches: a row of
// DiT's k = 384 is only 24 lines, too short a stream for the prefetchers to
// be ahead of (TN 2304x8x384 from memory, 1 thread: 15-22 GFLOPS without,
// 29-35 with; 4 and 16 rows ahead were within that noise).
constexpr long kPrefetchRows = 8;

// C's rows [0, rows) (rows <= 3 lanes) by NB columns, op(A) = A.
template <typename W, typename T, int NB, bool kFull>
__attribute__((always_inline)) inline void n_block(long k, T alpha, const T *__restrict a, long lda,
                                                   const T *__restrict b, long csb, T beta, T *__restrict c,
                                                   long ldc, int rows) {
  constexpr int L = W::lanes;
  const typename W::Mask m0 = W::mask(std::clamp(rows, 0, L)), m1 = W::mask(std::clamp(rows - L, 0, L)),
                         m2 = W::mask(std::clamp(rows - 2 * L, 0, L));
  typename W::V c0[NB], c1[NB], c2[NB];
#pragma GCC unroll 8
  for (int j = 0; j < NB; ++j) c0[j] = c1[j] = c2[j] = W::zero();
  for (long p = 0; p < k; ++p, a += lda, ++b) {
    _mm_prefetch(reinterpret_cast<const char *>(a + kPrefetchSteps * lda), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char *>(a + kPrefetchSteps * lda + L), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char *>(a + kPrefetchSteps * lda + 2 * L), _MM_HINT_T0);
    const auto a0 = kFull ? W::loadu(a) : W::loadu(a, m0);
    const auto a1 = kFull ? W::loadu(a + L) : W::loadu(a + L, m1);
    const auto a2 = kFull ? W::loadu(a + 2 * L) : W::loadu(a + 2 * L, m2);
#pragma GCC unroll 8
    for (int j = 0; j < NB; ++j) {
      const auto bj = W::set1(b[j * csb]);
      c0[j] = W::fmadd(a0, bj, c0[j]);
      c1[j] = W::fmadd(a1, bj, c1[j]);
      c2[j] = W::fmadd(a2, bj, c2[j]);
    }
  }
  const auto va = W::set1(alpha), vb = W::set1(beta);
#pragma GCC unroll 8
  for (int j = 0; j < NB; ++j) {
    T *cj = c + j * ldc;
    auto r0 = W::mul(va, c0[j]), r1 = W::mul(va, c1[j]), r2 = W::mul(va, c2[j]);
    if (beta != T(0)) {  // beta = 0 never reads C
      r0 = W::fmadd(vb, kFull ? W::loadu(cj) : W::loadu(cj, m0), r0);
      r1 = W::fmadd(vb, kFull ? W::loadu(cj + L) : W::loadu(cj + L, m1), r1);
      r2 = W::fmadd(vb, kFull ? W::loadu(cj + 2 * L) : W::loadu(cj + 2 * L, m2), r2);
    }
    if (kFull) {
      W::storeu(cj, r0);
      W::storeu(cj + L, r1);
      W::storeu(cj + 2 * L, r2);
    } else {
      W::storeu(cj, r0, m0);
      W::storeu(cj + L, r1, m1);
      W::storeu(cj + 2 * L, r2, m2);
    }
  }
}

// R rows of op(A) = A^T (each contiguous in k, lda apart) by NB columns of
// op(B) (contiguous in k, csb apart).
template <typename W, typename T, int R, int NB>
__attribute__((always_inline)) inline void t_block(long k, T alpha, const T *__restrict a, long lda,
                                                   const T *__restrict b, long csb, T beta, T *__restrict c,
                                                   long ldc) {
  constexpr int L = W::lanes;
  typename W::V acc[R][NB];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) acc[r][j] = W::zero();
  long p = 0;
  for (; p + L <= k; p += L) {
    typename W::V bv[NB];
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) bv[j] = W::loadu(b + j * csb + p);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      _mm_prefetch(reinterpret_cast<const char *>(a + (r + kPrefetchRows) * lda + p), _MM_HINT_T0);
      const auto ar = W::loadu(a + r * lda + p);
#pragma GCC unroll 4
      for (int j = 0; j < NB; ++j) acc[r][j] = W::fmadd(ar, bv[j], acc[r][j]);
    }
  }
  if (p < k) {  // masked lanes are zero and never read (no fault past the end)
    const typename W::Mask m = W::mask(static_cast<int>(k - p));
    typename W::V bv[NB];
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) bv[j] = W::loadu(b + j * csb + p, m);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const auto ar = W::loadu(a + r * lda + p, m);
#pragma GCC unroll 4
      for (int j = 0; j < NB; ++j) acc[r][j] = W::fmadd(ar, bv[j], acc[r][j]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) {
      T &cij = c[r + j * ldc];
      const T s = alpha * W::reduce_add(acc[r][j]);
      cij = beta == T(0) ? s : s + beta * cij;
    }
}

// Columns [0, n) of rows [0, m) with op(A) = A, NB-wide passes then the rest.
template <typename W, typename T, int NB>
void n_rows(long m, long n, long k, T alpha, const T *a, long lda, const T *b, long csb, T beta, T *c, long ldc) {
  constexpr long RB = 3 * W::lanes;
  for (long i = 0; i < m; i += RB) {
    const int rows = static_cast<int>(std::min(RB, m - i));
    long j = 0;
    for (; j + NB <= n; j += NB) {
      if (rows == RB) n_block<W, T, NB, true>(k, alpha, a + i, lda, b + j * csb, csb, beta, c + i + j * ldc, ldc, rows);
      else n_block<W, T, NB, false>(k, alpha, a + i, lda, b + j * csb, csb, beta, c + i + j * ldc, ldc, rows);
    }
    if constexpr (NB > 1) {
      if (j < n) {  // the last n % NB columns: one pass of that width
        const long left = n - j;
        const T *bj = b + j * csb;
        T *cj = c + i + j * ldc;
        switch (left) {
#define HCOPS_SKINNY_N_CASE(w)                                                                    \
  case w:                                                                                         \
    if constexpr (w < NB) n_block<W, T, w, false>(k, alpha, a + i, lda, bj, csb, beta, cj, ldc, rows);      \
    break;
          HCOPS_SKINNY_N_CASE(1)
          HCOPS_SKINNY_N_CASE(2)
          HCOPS_SKINNY_N_CASE(3)
          HCOPS_SKINNY_N_CASE(4)
          HCOPS_SKINNY_N_CASE(5)
          HCOPS_SKINNY_N_CASE(6)
          HCOPS_SKINNY_N_CASE(7)
#undef HCOPS_SKINNY_N_CASE
          default: break;
        }
      }
    }
  }
}

// Rows [0, m) of op(A) = A^T: groups of 4 rows, then the last m % 4 one at a
// time; columns in groups of 4, then the rest one at a time.
template <typename W, typename T, int R>
void t_rows_of(long k, long n, T alpha, const T *a, long lda, const T *b, long csb, T beta, T *c, long ldc) {
  long j = 0;
  for (; j + 4 <= n; j += 4) t_block<W, T, R, 4>(k, alpha, a, lda, b + j * csb, csb, beta, c + j * ldc, ldc);
  for (; j < n; ++j) t_block<W, T, R, 1>(k, alpha, a, lda, b + j * csb, csb, beta, c + j * ldc, ldc);
}

template <typename W, typename T>
void t_rows(long m, long n, long k, T alpha, const T *a, long lda, const T *b, long csb, T beta, T *c, long ldc) {
  long i = 0;
  for (; i + 4 <= m; i += 4) t_rows_of<W, T, 4>(k, n, alpha, a + i * lda, lda, b, csb, beta, c + i, ldc);
  for (; i < m; ++i) t_rows_of<W, T, 1>(k, n, alpha, a + i * lda, lda, b, csb, beta, c + i, ldc);
}

// The SkinnyKernel entry point (kernel.h) for traits W.
template <typename W, typename T>
void kernel(Trans ta, long m, long n, long k, T alpha, const T *a, long lda, const T *b, long csb, T beta, T *c,
            long ldc) {
  if (ta == Trans::N) n_rows<W, T, 8>(m, n, k, alpha, a, lda, b, csb, beta, c, ldc);
  else t_rows<W, T>(m, n, k, alpha, a, lda, b, csb, beta, c, ldc);
}

}  // namespace skinny
}  // namespace kernels
}  // namespace hcops

#pragma GCC diagnostic pop
