// Shallow products (k <= kShallowMaxK, kernel.h's ShallowKernel): C =
// alpha op(A) op(B) + beta C where every element of C is a sum of at most
// 16 products. Such a product writes far more than it computes (DiT's
// adaLN weight gradient, 384 x 2304 x 8: the batch is k); the packed path
// pads k to the tile's depth (32 on AMX), packs both operands and stores C
// a tile at a time through a scratch block: 0.42 ms a call in a bf16 DiT-S/2
// step (Xeon, AMX, 2 threads), against 0.06 ms to write C at the triad
// bandwidth.
//
// Here C is written a column at a time from registers: for each block of
// 32 rows, op(A)'s K columns are held as 2 K f32 vectors; op(B)'s values,
// converted to f32 a chunk of columns at a time into an L1 buffer, are
// broadcast against them, 4 columns of C at a time (8 independent
// accumulator chains of K steps). Inputs of bf16 are widened (exact), the
// sums are f32 as in every kernel, and a bf16 C is rounded once, to nearest
// even as dtype.h (W::store_bf16). No padding ever meets the data: rows past
// m are masked, and k is the template's K exactly.
//
// W: a vector-traits type with lanes = 16 (kernels/avx512/vec.h's F32).
#pragma once

#include <algorithm>
#include <cstdint>

#include "common/dtype.h"
#include "kernels/kernel.h"

// GCC 12 warns inside its own masked-load intrinsics (their undefined
// operand, GCC bug 105593) once inlined here; nothing is uninitialised.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

// In an anonymous namespace, as pack.h: every family that includes this
// gets its own copy, compiled with its own flags.
namespace hcops {
namespace kernels {
namespace shallow {
namespace {

constexpr int kRows = 32;   // rows of C per block: two vectors
constexpr int kCols = 128;  // columns of op(B) converted at a time (8 KiB at K = 16)

template <typename W>
inline typename W::V load(const float *p, typename W::Mask m) {
  return W::loadu(p, m);
}
template <typename W>
inline typename W::V load(const bf16 *p, typename W::Mask m) {
  return W::load_bf16(reinterpret_cast<const uint16_t *>(p), m);
}
template <typename W>
inline void store(float *p, typename W::V v, typename W::Mask m) {
  W::storeu(p, v, m);
}
template <typename W>
inline void store(bf16 *p, typename W::V v, typename W::Mask m) {
  W::store_bf16(reinterpret_cast<uint16_t *>(p), v, m);
}

// NC columns of C's block (rows under masks m0, m1) from op(A)'s block
// (a0, a1: K vectors each) and op(B)'s columns at bcol (K floats apart).
template <typename W, int K, int NC, typename C>
__attribute__((always_inline)) inline void columns(const typename W::V (&a0)[K], const typename W::V (&a1)[K],
                                                   const float *__restrict bcol, float alpha, float beta,
                                                   C *__restrict c, long ldc, typename W::Mask m0,
                                                   typename W::Mask m1) {
  typename W::V acc0[NC], acc1[NC];
#pragma GCC unroll 4
  for (int q = 0; q < NC; ++q) acc0[q] = acc1[q] = W::zero();
#pragma GCC unroll 16
  for (int p = 0; p < K; ++p)
#pragma GCC unroll 4
    for (int q = 0; q < NC; ++q) {
      const auto bq = W::set1(bcol[q * K + p]);
      acc0[q] = W::fmadd(a0[p], bq, acc0[q]);
      acc1[q] = W::fmadd(a1[p], bq, acc1[q]);
    }
  const auto va = W::set1(alpha), vb = W::set1(beta);
#pragma GCC unroll 4
  for (int q = 0; q < NC; ++q) {
    C *cq = c + q * ldc;
    auto r0 = W::mul(va, acc0[q]), r1 = W::mul(va, acc1[q]);
    if (beta != 0.0f) {  // beta = 0 never reads C
      r0 = W::fmadd(vb, load<W>(cq, m0), r0);
      r1 = W::fmadd(vb, load<W>(cq + W::lanes, m1), r1);
    }
    store<W>(cq, r0, m0);
    store<W>(cq + W::lanes, r1, m1);
  }
}

template <typename W, int K, typename A, typename B, typename C>
void product(Trans ta, Trans tb, long m, long n, float alpha, const A *a, long lda, const B *b, long ldb, float beta,
             C *c, long ldc) {
  static_assert(W::lanes * 2 == kRows, "two vectors of 16 rows");
  alignas(64) float bbuf[kCols * K];  // op(B)(p, j0 + jj) at jj * K + p
  alignas(64) A abuf[K * kRows];      // op(A) = A^T's block, column-major (32 rows apart)
  for (long j0 = 0; j0 < n; j0 += kCols) {
    const long nc = std::min<long>(kCols, n - j0);
    for (long jj = 0; jj < nc; ++jj)
      for (int p = 0; p < K; ++p)
        bbuf[jj * K + p] = float(tb == Trans::N ? b[p + (j0 + jj) * ldb] : b[(j0 + jj) + p * ldb]);
    for (long i0 = 0; i0 < m; i0 += kRows) {
      const int rows = static_cast<int>(std::min<long>(kRows, m - i0));
      const typename W::Mask m0 = W::mask(std::min(rows, W::lanes)), m1 = W::mask(std::max(rows - W::lanes, 0));
      const A *col = a + i0;  // op(A) = A: column p of the block at col + p * lda
      long ld = lda;
      if (ta == Trans::T) {  // rows of op(A) are contiguous in k: gather the block
        for (int r = 0; r < rows; ++r)
          for (int p = 0; p < K; ++p) abuf[p * kRows + r] = a[p + (i0 + r) * lda];
        col = abuf;
        ld = kRows;
      }
      typename W::V a0[K], a1[K];
#pragma GCC unroll 16
      for (int p = 0; p < K; ++p) {
        a0[p] = load<W>(col + p * ld, m0);
        a1[p] = load<W>(col + p * ld + W::lanes, m1);
      }
      C *cb = c + i0 + j0 * ldc;
      long jj = 0;
      for (; jj + 4 <= nc; jj += 4) columns<W, K, 4>(a0, a1, bbuf + jj * K, alpha, beta, cb + jj * ldc, ldc, m0, m1);
      for (; jj < nc; ++jj) columns<W, K, 1>(a0, a1, bbuf + jj * K, alpha, beta, cb + jj * ldc, ldc, m0, m1);
    }
  }
}

// The ShallowKernel entry point (kernel.h): K = k as a constant.
template <typename W, typename A, typename B, typename C>
void kernel(Trans ta, Trans tb, long m, long n, long k, float alpha, const A *a, long lda, const B *b, long ldb,
            float beta, C *c, long ldc) {
  switch (k) {
#define HCOPS_SHALLOW_K(K) \
  case K: return product<W, K>(ta, tb, m, n, alpha, a, lda, b, ldb, beta, c, ldc);
    HCOPS_SHALLOW_K(1) HCOPS_SHALLOW_K(2) HCOPS_SHALLOW_K(3) HCOPS_SHALLOW_K(4)
    HCOPS_SHALLOW_K(5) HCOPS_SHALLOW_K(6) HCOPS_SHALLOW_K(7) HCOPS_SHALLOW_K(8)
    HCOPS_SHALLOW_K(9) HCOPS_SHALLOW_K(10) HCOPS_SHALLOW_K(11) HCOPS_SHALLOW_K(12)
    HCOPS_SHALLOW_K(13) HCOPS_SHALLOW_K(14) HCOPS_SHALLOW_K(15) HCOPS_SHALLOW_K(16)
#undef HCOPS_SHALLOW_K
    default: break;  // the driver never calls with k outside [1, kShallowMaxK]
  }
}
static_assert(kShallowMaxK == 16, "one case per k");

// A family's GemmKernel for f32 accumulation with this shallow kernel.
template <typename Ty, typename W>
constexpr GemmKernel<Ty> with_shallow(GemmKernel<Ty> k) {
  k.shallow = &kernel<W, typename Ty::a_type, typename Ty::b_type, typename Ty::c_type>;
  return k;
}

}  // namespace
}  // namespace shallow
}  // namespace kernels
}  // namespace hcops

#pragma GCC diagnostic pop
