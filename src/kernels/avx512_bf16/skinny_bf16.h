// Skinny bf16 products (n <= kSkinnyMaxN, kernel.h's SkinnyKernel) with
// vdpbf16ps, for bf16 A and B and an f32 or bf16 C: the bf16 counterpart of
// kernels/skinny.h, for the families that have the instruction (avx512_bf16,
// and amx, whose tiles would need A packed: kernel.h's skinny says why not).
// DiT's adaLN Linear in bf16 (a 2304 x 384 weight against a batch of 8) is
// the case: on the AMX path it packed the 1.8 MB weight on one thread per
// call, 21 % of the memory bound (Xeon, 2 threads).
//
// vdpbf16ps multiplies pairs of bf16 adjacent in k and adds both products
// into one f32 lane (each product exact in f32). op(B) is contiguous in k
// (the driver copies it otherwise), so a pair of op(B)(p, j), op(B)(p+1, j)
// is one 32-bit word.
//
// op(A) = A^T (ta = T): op(A)'s rows are contiguous in k too: R = 4 rows by
// NB <= 4 columns of dot products, 32 k steps per instruction, summed
// across lanes at the end (as skinny.h's f32 T path).
//
// op(A) = A (ta = N): C's rows are contiguous, k is lda apart. 32 rows of
// two columns p, p+1 are interleaved into pairs (vpunpcklwd/hw within each
// 128-bit lane): the low interleave holds rows 0-3, 8-11, 16-19, 24-27 of
// the block, the high one rows 4-7, 12-15, 20-23, 28-31, each against the
// pair word of op(B) broadcast; the sums are put back in row order once,
// when C is written (vpermt2ps). An odd last step pairs with zero. Rows go
// in panels and k in chunks (n_rows says why).
//
// C is written once, from the f32 sum over the whole of k (a bf16 C rounded
// once, to nearest even, as dtype.h). Like every vdpbf16ps and AMX path, the
// instruction treats bf16 subnormal inputs as zero.
#pragma once

#include <immintrin.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "common/dtype.h"
#include "kernels/avx512_bf16/convert.h"
#include "kernels/kernel.h"
#include "kernels/skinny_panels.h"

// GCC 12 warns inside its own reduce/convert intrinsics (their
// _mm512_undefined_* operand) once inlined; nothing is uninitialised.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

// In an anonymous namespace, as pack.h: the avx512_bf16 and amx families
// each get their own copy, compiled with their own flags.
namespace hcops::kernels::avx512_bf16 {
namespace skinny_bf16 {
namespace {

using word = uint32_t __attribute__((may_alias, aligned(1)));

// How far ahead (in rows of op(A)) the ta = T loop prefetches, as skinny.h:
// a row of DiT's k = 384 bf16 is a stream of 12 lines, too short for the
// hardware prefetchers to be ahead of.
constexpr long kPrefetchRows = 8;

// 16 rows of C as stored: f32, or bf16 widened on load and rounded on store.
inline __m512 load_c(const float *p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
inline __m512 load_c(const bf16 *p, __mmask16 m) { return to_f32(_mm256_maskz_loadu_epi16(m, p)); }
inline void store_c(float *p, __m512 v, __mmask16 m) { _mm512_mask_storeu_ps(p, m, v); }
inline void store_c(bf16 *p, __m512 v, __mmask16 m) { _mm256_mask_storeu_epi16(p, m, to_bf16(v)); }

// The pair words of op(B) column `col` (contiguous in k): steps p, p + 1,
// and the last step of an odd k, p = k - 1, paired with zero.
inline __m512bh b_pair(const bf16 *col, long p) {
  return (__m512bh)_mm512_set1_epi32(static_cast<int>(*reinterpret_cast<const word *>(col + p)));
}
inline __m512bh b_last(const bf16 *col, long p) {
  return (__m512bh)_mm512_set1_epi32(static_cast<int>(*reinterpret_cast<const uint16_t *>(col + p)));
}

// op(A) = A: C's rows go in panels (panel_rows), k in chunks of
// kChunkSteps. A panel's sums stay in an L1 buffer (PanelSums) across the
// chunks, and each chunk is worked through one 32-row block at a time, so
// that a chunk's part of A (64 columns of a panel's rows) is read from
// memory once, a column's rows in one run. Looping each 32-row block over the
// whole of k instead walked A 64 bytes a column (lda apart): DiT's adaLN
// input gradient (384 x 8 x 2304) took 0.39 ms from memory, 4x its time
// with A warm (Xeon, AMX, 2 threads).
//
// A panel is as many rows as 16 KiB of sums (skinny_panels.h) hold for the n
// columns (256 rows at kSkinnyMaxN = 16, 2048 at n = 2), and the driver
// gives a thread pieces of 512 rows or more where there are rows for them,
// so that with few columns each chunk reads long runs of A's columns.
// DiT-XL/2's adaLN input gradient at batch 2 (1152 x 2 x 6912, a 15.9 MB
// weight, caches flushed, 2 threads of a Zen 4) read 192-384 bytes of each
// column per piece: 1.05-1.79 ms, 26-44 % of the memory bound; in two
// pieces of 576 rows, one panel each, with the next chunk prefetched into
// L2: 0.62-0.74 ms (63-75 %). DiT-S/2's at batch 8 (384 x 8 x 2304):
// 0.157-0.178 -> 0.116-0.124 ms.
using skinny_panels::kChunkSteps;

// The f32 sums of one panel: per 32-row block and column, the two
// interleaved halves (lo: rows 0-3, 8-11, ...; hi: rows 4-7, 12-15, ...),
// the blocks n columns apart.
struct PanelSums {
  alignas(64) float v[skinny_panels::kPanelSumBytes / sizeof(float)];
  // Rows a panel holds for n columns: whole 32-row blocks, 32 floats a column.
  static long panel_rows(long n) { return skinny_panels::panel_rows(n, 32, 32 * sizeof(float)); }
  float (*block(long rb, long n))[2][16] { return reinterpret_cast<float (*)[2][16]>(v + rb * n * 32); }
};

// A chunk of kc steps of k for one 32-row block (rows under `m`) and NB
// columns, added to the block's sums.
template <int NB>
__attribute__((always_inline)) inline void n_chunk(long kc, const bf16 *__restrict a, long lda,
                                                   const bf16 *__restrict b, long csb, float (*sums)[2][16],
                                                   __mmask32 m) {
  __m512 lo[NB], hi[NB];
#pragma GCC unroll 8
  for (int j = 0; j < NB; ++j) {
    lo[j] = _mm512_load_ps(sums[j][0]);
    hi[j] = _mm512_load_ps(sums[j][1]);
  }
  // Columns k, k + 1 of the block (a1 zero for an odd k's lone last step)
  // interleaved into pairs, against each column's pair word of op(B).
  const auto pair_step = [&](__m512i a0, __m512i a1, auto pair_word) __attribute__((always_inline)) {
    const __m512bh pl = (__m512bh)_mm512_unpacklo_epi16(a0, a1), ph = (__m512bh)_mm512_unpackhi_epi16(a0, a1);
#pragma GCC unroll 8
    for (int j = 0; j < NB; ++j) {
      const __m512bh bj = pair_word(b + j * csb);
      lo[j] = _mm512_dpbf16_ps(lo[j], pl, bj);
      hi[j] = _mm512_dpbf16_ps(hi[j], ph, bj);
    }
  };
  long p = 0;
  for (; p + 2 <= kc; p += 2, a += 2 * lda) {
    // The same rows of the next chunk, read after the panel's other blocks:
    // into L2, as a wide panel's chunk (64 columns of up to 4 KiB) does not
    // stay in L1 that long.
    _mm_prefetch(reinterpret_cast<const char *>(a + kChunkSteps * lda), _MM_HINT_T1);
    _mm_prefetch(reinterpret_cast<const char *>(a + (kChunkSteps + 1) * lda), _MM_HINT_T1);
    pair_step(_mm512_maskz_loadu_epi16(m, a), _mm512_maskz_loadu_epi16(m, a + lda),
              [p](const bf16 *col) __attribute__((always_inline)) { return b_pair(col, p); });
  }
  if (p < kc)
    pair_step(_mm512_maskz_loadu_epi16(m, a), _mm512_setzero_si512(),
              [p](const bf16 *col) __attribute__((always_inline)) { return b_last(col, p); });
#pragma GCC unroll 8
  for (int j = 0; j < NB; ++j) {
    _mm512_store_ps(sums[j][0], lo[j]);
    _mm512_store_ps(sums[j][1], hi[j]);
  }
}

// All n columns of one chunk for one 32-row block.
inline void n_chunk_columns(long kc, long n, const bf16 *a, long lda, const bf16 *b, long csb, float (*sums)[2][16],
                            __mmask32 m) {
  skinny_panels::column_passes(
      n, [&](auto nb, long j) { n_chunk<decltype(nb)::value>(kc, a, lda, b + j * csb, csb, sums + j, m); });
}

inline __mmask32 rows_mask(long rows) { return rows >= 32 ? ~__mmask32(0) : static_cast<__mmask32>((1u << rows) - 1); }

// C = alpha * sums + beta * C for one 32-row block (rows under `m`), the
// rows put back in order.
template <typename C>
inline void n_store(long n, const float (*sums)[2][16], float alpha, float beta, C *c, long ldc, __mmask32 m) {
  const __m512i first = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i second = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  const __mmask16 m0 = static_cast<__mmask16>(m), m1 = static_cast<__mmask16>(m >> 16);
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  for (long j = 0; j < n; ++j) {
    C *cj = c + j * ldc;
    const __m512 lo = _mm512_load_ps(sums[j][0]), hi = _mm512_load_ps(sums[j][1]);
    __m512 r0 = _mm512_mul_ps(va, _mm512_permutex2var_ps(lo, first, hi));
    __m512 r1 = _mm512_mul_ps(va, _mm512_permutex2var_ps(lo, second, hi));
    if (beta != 0.0f) {  // beta = 0 never reads C
      r0 = _mm512_fmadd_ps(vb, load_c(cj, m0), r0);
      r1 = _mm512_fmadd_ps(vb, load_c(cj + 16, m1), r1);
    }
    store_c(cj, r0, m0);
    store_c(cj + 16, r1, m1);
  }
}

// The 16 sums of a 4 x 4 block, each across its 16 lanes, as one vector:
// lane 4 j + r holds acc[r][j]'s sum. A tree of unpacks and adds (45
// instructions) instead of 16 separate reductions (8 each) and 16 scalar
// stores: with DiT's k = 384 a block has only 12 steps of 16 vdpbf16ps, so
// summing and storing one at a time took as long as the products (adaLN's
// forward, 8 x 2304 x 384, 0.075 ms with the operands warm against 0.031 at
// the vdpbf16ps peak; AMD Zen 4, 2 threads).
__attribute__((always_inline)) inline __m512 sums_4x4(const __m512 (&acc)[4][4]) {
  __m512 t[8], u[4];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {  // vectors v = 4 j + r, in pairs (2i, 2i + 1): per 128-bit lane [a0+a2, b0+b2, a1+a3, b1+b3]
    const __m512 a = acc[(2 * i) % 4][(2 * i) / 4], b = acc[(2 * i + 1) % 4][(2 * i + 1) / 4];
    t[i] = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {  // per 128-bit lane: the lane's sums of vectors 4i .. 4i + 3
    const __m512d a = _mm512_castps_pd(t[2 * i]), b = _mm512_castps_pd(t[2 * i + 1]);
    u[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
  }
  // Across the four 128-bit lanes: lane q of the result sums u[q]'s lanes.
  const __m512 w0 = _mm512_add_ps(_mm512_shuffle_f32x4(u[0], u[1], 0x88), _mm512_shuffle_f32x4(u[0], u[1], 0xDD));
  const __m512 w1 = _mm512_add_ps(_mm512_shuffle_f32x4(u[2], u[3], 0x88), _mm512_shuffle_f32x4(u[2], u[3], 0xDD));
  return _mm512_add_ps(_mm512_shuffle_f32x4(w0, w1, 0x88), _mm512_shuffle_f32x4(w0, w1, 0xDD));
}

// C = alpha * sums for a 4 x 4 block with beta = 0 (C not read): column j's
// four rows are the sums' 128-bit lane j.
template <typename C>
__attribute__((always_inline)) inline void store_4x4(float alpha, const __m512 (&acc)[4][4], C *c, long ldc) {
  const __m512 v = _mm512_mul_ps(_mm512_set1_ps(alpha), sums_4x4(acc));
  if constexpr (std::is_same_v<C, float>) {
    _mm_storeu_ps(c, _mm512_castps512_ps128(v));
    _mm_storeu_ps(c + ldc, _mm512_extractf32x4_ps(v, 1));
    _mm_storeu_ps(c + 2 * ldc, _mm512_extractf32x4_ps(v, 2));
    _mm_storeu_ps(c + 3 * ldc, _mm512_extractf32x4_ps(v, 3));
  } else {
    const __m256i h = to_bf16(v);  // 16 bf16: column j's at 4 j
    _mm_storel_epi64(reinterpret_cast<__m128i *>(c), _mm256_castsi256_si128(h));
    _mm_storel_epi64(reinterpret_cast<__m128i *>(c + ldc), _mm_srli_si128(_mm256_castsi256_si128(h), 8));
    _mm_storel_epi64(reinterpret_cast<__m128i *>(c + 2 * ldc), _mm256_extracti128_si256(h, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i *>(c + 3 * ldc), _mm_srli_si128(_mm256_extracti128_si256(h, 1), 8));
  }
}

// R rows of op(A) = A^T (each contiguous in k, lda apart) by NB columns of
// op(B) (contiguous in k, csb apart).
template <int R, int NB, typename C>
__attribute__((always_inline)) inline void t_block(long k, float alpha, const bf16 *__restrict a, long lda,
                                                   const bf16 *__restrict b, long csb, float beta, C *__restrict c,
                                                   long ldc) {
  __m512 acc[R][NB];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) acc[r][j] = _mm512_setzero_ps();
  long p = 0;
  for (; p + 32 <= k; p += 32) {
    __m512bh bv[NB];
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) bv[j] = (__m512bh)_mm512_loadu_si512(b + j * csb + p);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      _mm_prefetch(reinterpret_cast<const char *>(a + (r + kPrefetchRows) * lda + p), _MM_HINT_T0);
      const __m512bh ar = (__m512bh)_mm512_loadu_si512(a + r * lda + p);
#pragma GCC unroll 4
      for (int j = 0; j < NB; ++j) acc[r][j] = _mm512_dpbf16_ps(acc[r][j], ar, bv[j]);
    }
  }
  if (p < k) {  // masked steps are zero on both sides and never read
    const __mmask32 m = static_cast<__mmask32>((1u << (k - p)) - 1);
    __m512bh bv[NB];
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) bv[j] = (__m512bh)_mm512_maskz_loadu_epi16(m, b + j * csb + p);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m512bh ar = (__m512bh)_mm512_maskz_loadu_epi16(m, a + r * lda + p);
#pragma GCC unroll 4
      for (int j = 0; j < NB; ++j) acc[r][j] = _mm512_dpbf16_ps(acc[r][j], ar, bv[j]);
    }
  }
  if constexpr (R == 4 && NB == 4) {
    if (beta == 0.0f) return store_4x4(alpha, acc, c, ldc);
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) {
      C &cij = c[r + j * ldc];
      const float s = alpha * _mm512_reduce_add_ps(acc[r][j]);
      cij = C(beta == 0.0f ? s : s + beta * float(cij));
    }
}

// Rows [0, m) by columns [0, n) with op(A) = A: panels, chunks of k, then
// C written from each panel's sums.
template <typename C>
void n_rows(long m, long n, long k, float alpha, const bf16 *a, long lda, const bf16 *b, long csb, float beta, C *c,
            long ldc) {
  PanelSums sums;
  skinny_panels::for_each_panel(
      m, k, 32, PanelSums::panel_rows(n),
      [&](long blocks) {
        for (long rb = 0; rb < blocks; ++rb)
          for (long j = 0; j < n; ++j) {
            _mm512_store_ps(sums.block(rb, n)[j][0], _mm512_setzero_ps());
            _mm512_store_ps(sums.block(rb, n)[j][1], _mm512_setzero_ps());
          }
      },
      [&](long rb, long i, long rows, long p0, long kc, long, long) {
        n_chunk_columns(kc, n, a + i + p0 * lda, lda, b + p0, csb, sums.block(rb, n), rows_mask(rows));
      },
      [&](long rb, long i, long rows) { n_store(n, sums.block(rb, n), alpha, beta, c + i, ldc, rows_mask(rows)); });
}

// Rows [0, m) of op(A) = A^T: groups of 4 rows then one at a time; columns
// in groups of 4 then one at a time.
template <int R, typename C>
void t_rows_of(long k, long n, float alpha, const bf16 *a, long lda, const bf16 *b, long csb, float beta, C *c,
               long ldc) {
  long j = 0;
  for (; j + 4 <= n; j += 4) t_block<R, 4>(k, alpha, a, lda, b + j * csb, csb, beta, c + j * ldc, ldc);
  for (; j < n; ++j) t_block<R, 1>(k, alpha, a, lda, b + j * csb, csb, beta, c + j * ldc, ldc);
}

template <typename C>
void t_rows(long m, long n, long k, float alpha, const bf16 *a, long lda, const bf16 *b, long csb, float beta, C *c,
            long ldc) {
  long i = 0;
  for (; i + 4 <= m; i += 4) t_rows_of<4>(k, n, alpha, a + i * lda, lda, b, csb, beta, c + i, ldc);
  for (; i < m; ++i) t_rows_of<1>(k, n, alpha, a + i * lda, lda, b, csb, beta, c + i, ldc);
}

// The SkinnyKernel entry point (kernel.h) for a bf16 x bf16 product into C.
template <typename C>
void kernel(Trans ta, long m, long n, long k, float alpha, const bf16 *a, long lda, const bf16 *b, long csb,
            float beta, C *c, long ldc) {
  if (ta == Trans::N) n_rows(m, n, k, alpha, a, lda, b, csb, beta, c, ldc);
  else t_rows(m, n, k, alpha, a, lda, b, csb, beta, c, ldc);
}

// A family's GemmKernel for bf16 A and B with this skinny kernel.
template <typename Ty>
constexpr GemmKernel<Ty> with_skinny(GemmKernel<Ty> k) {
  static_assert(std::is_same_v<typename Ty::a_type, bf16> && std::is_same_v<typename Ty::b_type, bf16>,
                "bf16 inputs as given: f32 inputs rounded while packing have no skinny path");
  k.skinny = &kernel<typename Ty::c_type>;
  return k;
}

}  // namespace
}  // namespace skinny_bf16
}  // namespace hcops::kernels::avx512_bf16

#pragma GCC diagnostic pop
