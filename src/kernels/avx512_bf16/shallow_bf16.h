// Shallow bf16 products (k <= kShallowMaxK, kernel.h's ShallowKernel) with
// vdpbf16ps, for bf16 A and B and an f32 or bf16 C: kernels/shallow.h's
// loops (shallow::sweep: C written from registers, 4 columns at a time down
// a panel of rows, in blocks of 32 rows, streamed where the driver says)
// with the arithmetic of pairs of k steps. shallow.h widens bf16 to f32 and does one
// FMA per step, so DiT's adaLN weight gradient (2304 x 384 x 8, 14.2
// MFLOP) was bound by the f32 FMA peak, 0.061 ms on 2 threads of AMD Zen 4,
// beside 0.052 ms to write C; one vdpbf16ps does two steps.
//
// op(A)'s panel is packed once as pair words: for pair P (steps 2P, 2P + 1;
// an odd K's last step paired with zero) and row r, the 32-bit word of the
// two bf16 values, rows in order, so that a block's 32 rows are two vectors
// per pair and the sums come out in row order (no un-interleaving before C
// is stored). op(B)'s pair words, a chunk of columns at a time, are
// broadcast against them. The sums are f32 as in every kernel; like every
// vdpbf16ps path, the instruction treats bf16 subnormal inputs as zero.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "common/dtype.h"
#include "kernels/avx512_bf16/vec.h"
#include "kernels/kernel.h"
#include "kernels/shallow.h"

// GCC 12 warns inside its own masked-load intrinsics once inlined; nothing
// is uninitialised.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

// In an anonymous namespace, as pack.h: the avx512_bf16 and amx families
// each get their own copy, compiled with their own flags.
namespace hcops::kernels::avx512_bf16 {
namespace shallow_bf16 {
namespace {

using W = avx512_bf16::F32;
constexpr int kRows = shallow::kBlockRows<W>;     // rows of C per block: two vectors
constexpr int kCols = shallow::kCols;            // columns of op(B) paired at a time
constexpr long kPanelRows = shallow::kPanelRows;  // rows of C a pass down its columns takes
static_assert(kPanelRows % kRows == 0, "a panel is whole blocks");

inline uint32_t pair(bf16 lo, bf16 hi) { return uint32_t(lo.bits) | uint32_t(hi.bits) << 16; }

// NC columns of C's block from op(A)'s pair words (pair P of the block's
// rows at ap + P * kPanelRows) and op(B)'s (pair P of column q at bp[P *
// kCols + q]). Full: all 32 rows, no masks; otherwise rows under m0, m1.
template <int KP, int NC, bool Full, typename C>
__attribute__((always_inline)) inline void columns(const uint32_t *__restrict ap, const uint32_t *__restrict bp,
                                                   float alpha, float beta, C *__restrict c, long ldc, __mmask16 m0,
                                                   __mmask16 m1, bool stream) {
  __m512bh a0[KP], a1[KP];
#pragma GCC unroll 8
  for (int p = 0; p < KP; ++p) {
    a0[p] = (__m512bh)_mm512_load_si512(ap + p * kPanelRows);
    a1[p] = (__m512bh)_mm512_load_si512(ap + p * kPanelRows + 16);
  }
  __m512 acc0[NC], acc1[NC];
#pragma GCC unroll 4
  for (int q = 0; q < NC; ++q) acc0[q] = acc1[q] = _mm512_setzero_ps();
#pragma GCC unroll 8
  for (int p = 0; p < KP; ++p)
#pragma GCC unroll 4
    for (int q = 0; q < NC; ++q) {
      const __m512bh bq = (__m512bh)_mm512_set1_epi32(static_cast<int>(bp[p * kCols + q]));
      acc0[q] = _mm512_dpbf16_ps(acc0[q], a0[p], bq);
      acc1[q] = _mm512_dpbf16_ps(acc1[q], a1[p], bq);
    }
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 4
  for (int q = 0; q < NC; ++q) {
    C *cq = c + q * ldc;
    __m512 r0 = _mm512_mul_ps(va, acc0[q]), r1 = _mm512_mul_ps(va, acc1[q]);
    if (beta != 0.0f) {  // beta = 0 never reads C
      r0 = _mm512_fmadd_ps(vb, Full ? shallow::load_v<W>(cq) : shallow::load_v<W>(cq, m0), r0);
      r1 = _mm512_fmadd_ps(vb, Full ? shallow::load_v<W>(cq + 16) : shallow::load_v<W>(cq + 16, m1), r1);
    }
    if (Full) {
      shallow::store_block<W>(cq, r0, r1, stream);
    } else {
      shallow::store_v<W>(cq, r0, m0);
      shallow::store_v<W>(cq + 16, r1, m1);
    }
  }
}

// op(A)'s rows [r0, r0 + rows) as pair words (pair P at dst + P *
// kPanelRows), the rows up to the next whole block zero.
template <int K>
void pair_a(Trans ta, const bf16 *a, long lda, long r0, long rows, uint32_t *dst) {
  constexpr int KP = (K + 1) / 2;
  const long padded = (rows + kRows - 1) / kRows * kRows;
  for (int p = 0; p < KP; ++p) {
    uint32_t *d = dst + p * kPanelRows;
    const bool two = 2 * p + 1 < K;
    if (ta == Trans::N) {  // op(A)(r, s) = a[r + s * lda]: steps 2p, 2p + 1 are two columns, contiguous in r
      const bf16 *lo = a + r0 + 2 * p * lda, *hi = two ? lo + lda : lo;  // (no column past an odd K's last)
      long r = 0;
      for (; r < rows; r += 16) {
        const __mmask16 m = rows - r >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << (rows - r)) - 1);
        const __m512i l = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, lo + r));
        const __m512i h = two ? _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, hi + r)) : _mm512_setzero_si512();
        _mm512_store_si512(d + r, _mm512_or_si512(l, _mm512_slli_epi32(h, 16)));
      }
      for (; r < padded; r += 16) _mm512_store_si512(d + r, _mm512_setzero_si512());
    } else {  // op(A)(r, s) = a[s + r * lda]: a row's steps are contiguous
      for (long r = 0; r < rows; ++r) {
        const bf16 *row = a + 2 * p + (r0 + r) * lda;
        d[r] = pair(row[0], two ? row[1] : bf16{});
      }
      for (long r = rows; r < padded; ++r) d[r] = 0;
    }
  }
}

// op(B)'s columns [j0, j0 + nc) as pair words (pair P of column q at dst[P * kCols + q]).
template <int K>
void pair_b(Trans tb, const bf16 *b, long ldb, long j0, long nc, uint32_t *dst) {
  constexpr int KP = (K + 1) / 2;
  for (int p = 0; p < KP; ++p) {
    const bool two = 2 * p + 1 < K;
    for (long q = 0; q < nc; ++q) {
      // op(B)(s, j) = b[s + j * ldb] (N) or b[j + s * ldb] (T)
      const bf16 lo = tb == Trans::N ? b[2 * p + (j0 + q) * ldb] : b[j0 + q + 2 * p * ldb];
      const bf16 hi = !two ? bf16{} : tb == Trans::N ? b[2 * p + 1 + (j0 + q) * ldb] : b[j0 + q + (2 * p + 1) * ldb];
      dst[p * kCols + q] = pair(lo, hi);
    }
  }
}

// This kernel's panels and blocks (shallow::sweep's Kern): op(A)'s panel
// and op(B)'s chunk as pair words.
template <int K>
struct PairedPanels {
  static constexpr int KP = (K + 1) / 2;
  Trans ta, tb;
  const bf16 *a;
  long lda;
  const bf16 *b;
  long ldb;
  float alpha, beta;
  // Written by panel() and chunk() before any read, not zeroed on every
  // call (as shallow.h's WidenedPanels).
  alignas(64) uint32_t abuf[KP * kPanelRows];
  alignas(64) uint32_t bbuf[KP * kCols];

  PairedPanels(Trans ta_, Trans tb_, const bf16 *a_, long lda_, const bf16 *b_, long ldb_, float alpha_, float beta_)
      : ta(ta_), tb(tb_), a(a_), lda(lda_), b(b_), ldb(ldb_), alpha(alpha_), beta(beta_) {}

  void panel(long r0, long rows) { pair_a<K>(ta, a, lda, r0, rows, abuf); }
  void chunk(long j0, long nc) { pair_b<K>(tb, b, ldb, j0, nc, bbuf); }
  template <int NC, bool Full, typename C>
  void block(long i0, long jj, C *c, long ldc, __mmask16 m0, __mmask16 m1, bool stream) {
    columns<KP, NC, Full>(abuf + i0, bbuf + jj, alpha, beta, c, ldc, m0, m1, stream);
  }
};

// The ShallowKernel entry point (kernel.h) for bf16 A and B: K = k as a constant.
template <typename C>
void kernel(Trans ta, Trans tb, long m, long n, long k, float alpha, const bf16 *a, long lda, const bf16 *b, long ldb,
            float beta, C *c, long ldc, bool stream) {
  shallow::with_depth(k, [&](auto depth) {
    PairedPanels<decltype(depth)::value> kern{ta, tb, a, lda, b, ldb, alpha, beta};
    shallow::sweep<W>(kern, m, n, c, ldc, stream);
  });
}

// A family's GemmKernel for bf16 A and B with this shallow kernel.
template <typename Ty>
constexpr GemmKernel<Ty> with_shallow(GemmKernel<Ty> k) {
  static_assert(std::is_same_v<typename Ty::a_type, bf16> && std::is_same_v<typename Ty::b_type, bf16>,
                "bf16 inputs as given");
  k.shallow = &kernel<typename Ty::c_type>;
  return k;
}

}  // namespace
}  // namespace shallow_bf16
}  // namespace hcops::kernels::avx512_bf16

#pragma GCC diagnostic pop
