// The avx512_bf16 family's packers: kernels/pack_pairs.h's K-pair layout,
// bit for bit (tests/engine/test_bf16_pack checks it), a vector at a time.
// pack_pairs.h moves one value per iteration through a lambda; these convert
// 32 f32 per instruction (convert.h) and interleave pairs with one vpermt2w,
// or, where op(X) has k contiguous (A^T, B), take the pairs as 32-bit words
// and transpose 16 x 16 of them in registers.
// Partial panels and an odd k come from masked loads (zeros), so nothing past
// the operand is read and every padding slot is written.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "common/dtype.h"
#include "kernels/gemm_types.h"
#include "kernels/avx512_bf16/convert.h"
#include "kernels/kernel.h"

namespace hcops::kernels::avx512_bf16 {
namespace {

constexpr int kMr = 32, kNr = 12;

// 32 consecutive values at p (those outside `mask` zero) as bf16 parts: with
// S = 1 parts[0] = bf16(x); with S = 3 parts[0] = hi, parts[1] = lo,
// parts[2] = hi in the cross products (zero where hi is not finite).
template <int S>
inline void load_parts(const float *p, uint32_t mask, __m512i *parts) {
  const __m512 x0 = _mm512_maskz_loadu_ps(static_cast<__mmask16>(mask), p);
  const __m512 x1 = _mm512_maskz_loadu_ps(static_cast<__mmask16>(mask >> 16), p + 16);
  if constexpr (S == 1) parts[0] = to_bf16(x0, x1);
  else split(x0, x1, parts[0], parts[1], parts[2]);
}
template <int S>
inline void load_parts(const bf16 *p, uint32_t mask, __m512i *parts) {
  static_assert(S == 1, "bf16 inputs are never split");
  parts[0] = _mm512_maskz_loadu_epi16(mask, p);
}

// Which part fills slot s of a pair: A's slots hold (hi, hi', lo), B's
// (hi, lo, hi') (pack_pairs.h; hi' = hi, or 0 where hi is not finite), so
// their dot products sum hi*hi + hi'*lo + lo*hi'.
constexpr int part_a(int s) { return s == 0 ? 0 : s == 1 ? 2 : 1; }
constexpr int part_b(int s) { return s == 0 ? 0 : s == 1 ? 1 : 2; }

inline uint32_t first_bits(long n) { return n >= 32 ? ~0u : (1u << n) - 1; }

// vpermt2w indices interleaving x (first operand) and y element by element:
// words (x[i], y[i]) for i in [0, 16) or [16, 32).
inline __m512i interleave_index(int from) {
  alignas(64) uint16_t idx[32];
  for (int i = 0; i < 16; ++i) {
    idx[2 * i] = static_cast<uint16_t>(from + i);
    idx[2 * i + 1] = static_cast<uint16_t>(32 + from + i);
  }
  return _mm512_load_si512(idx);
}

// A panel of op(A) = A (rows contiguous, one column per k step): columns 2q
// and 2q+1, 32 rows each, interleaved into the 64 bf16 of pair q.
template <typename Src, int S>
void a_panel_rows(bf16 *__restrict dst, const Src *__restrict a, long lda, long kc, long rows) {
  const uint32_t mask = first_bits(rows);
  const __m512i lo_idx = interleave_index(0), hi_idx = interleave_index(16);
  constexpr int P = S == 1 ? 1 : 3;
  for (long q = 0; 2 * q < kc; ++q) {
    __m512i c0[P], c1[P];
    load_parts<S>(a + 2 * q * lda, mask, c0);
    if (2 * q + 1 < kc) load_parts<S>(a + (2 * q + 1) * lda, mask, c1);
    else
      for (int t = 0; t < P; ++t) c1[t] = _mm512_setzero_si512();
    __m512i lo[P], hi[P];
    for (int t = 0; t < P; ++t) {
      lo[t] = _mm512_permutex2var_epi16(c0[t], lo_idx, c1[t]);
      hi[t] = _mm512_permutex2var_epi16(c0[t], hi_idx, c1[t]);
    }
    for (int s = 0; s < S; ++s) {
      bf16 *d = dst + (q * S + s) * 2 * kMr;
      _mm512_storeu_si512(d, lo[part_a(s)]);
      _mm512_storeu_si512(d + 32, hi[part_a(s)]);
    }
  }
}

// r[i] = line i of 16 x 16 32-bit words; afterwards r[c] = column c. Two
// rounds of in-lane unpacks give 4 x 4 blocks per 128-bit lane, then two of
// 128-bit lane shuffles. Forced inline: as a call (avx512/transpose_pack.h's
// transpose_square is the same algorithm) the 16 vectors go through memory
// both ways, and packing B took a quarter of the microkernels' time on
// 384 x 2048 x 1536 (NN).
__attribute__((always_inline)) inline void transpose16(__m512i r[16]) {
  __m512i t[16], u[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  // u[4i + j], lane L = lines 4i..4i+3 of column 4L + j: transpose the 4 x 4
  // lanes of u[j], u[4 + j], u[8 + j], u[12 + j].
  for (int j = 0; j < 4; ++j) {
    const __m512i lo0 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x44), hi0 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xee);
    const __m512i lo1 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x44);
    const __m512i hi1 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xee);
    r[j] = _mm512_shuffle_i32x4(lo0, lo1, 0x88);
    r[4 + j] = _mm512_shuffle_i32x4(lo0, lo1, 0xdd);
    r[8 + j] = _mm512_shuffle_i32x4(hi0, hi1, 0x88);
    r[12 + j] = _mm512_shuffle_i32x4(hi0, hi1, 0xdd);
  }
}

// `lines` lines of up to 32 k-contiguous values (line i at src + i * ld) as
// pair words, transposed: out[t][q] = pair q of part t of the 16 lines
// (lines past `lines` zero). `mask` selects the k steps present.
template <typename Src, int S>
__attribute__((always_inline)) inline void transposed_pairs(const Src *src, long ld, int lines, uint32_t mask,
                                                            __m512i (*out)[16]) {
  constexpr int P = S == 1 ? 1 : 3;
  for (int i = 0; i < 16; ++i) {
    __m512i parts[P];
    if (i < lines) {
      // Lines are far apart (a column of B, a row of A^T): 12 or 16 short
      // streams the hardware prefetcher follows late. Fetching 256 bytes
      // ahead cut B's packing from ~29% to ~20% of the microkernels' time
      // (384 x 2048 x 1536 NN, one thread; perf, on a loaded machine).
      const char *ahead = reinterpret_cast<const char *>(src + i * ld) + 256;
      _mm_prefetch(ahead, _MM_HINT_T0);
      if constexpr (sizeof(Src) == 4) _mm_prefetch(ahead + 64, _MM_HINT_T0);
      load_parts<S>(src + i * ld, mask, parts);
    } else
      for (int t = 0; t < P; ++t) parts[t] = _mm512_setzero_si512();
    for (int t = 0; t < P; ++t) out[t][i] = parts[t];
  }
  for (int t = 0; t < P; ++t) transpose16(out[t]);
}

// A panel of op(A) = A^T (each row's k contiguous): the pair (2q, 2q+1) of a
// row is one 32-bit word; 16 rows x 16 words transposed at a time.
template <typename Src, int S>
void a_panel_cols(bf16 *__restrict dst, const Src *__restrict a, long lda, long kc, long rows) {
  constexpr int P = S == 1 ? 1 : 3;
  for (long k0 = 0; k0 < kc; k0 += 32) {
    const long nk = std::min<long>(32, kc - k0), npairs = (nk + 1) / 2;
    for (int h = 0; h < 2; ++h) {
      const int lines = static_cast<int>(std::clamp<long>(rows - 16 * h, 0, 16));
      __m512i v[P][16];
      transposed_pairs<Src, S>(a + (16 * h) * lda + k0, lda, lines, first_bits(nk), v);
      for (long qq = 0; qq < npairs; ++qq)
        for (int s = 0; s < S; ++s)
          _mm512_storeu_si512(dst + ((k0 / 2 + qq) * S + s) * 2 * kMr + 32 * h, v[part_a(s)][qq]);
    }
  }
}

// op(A)[i0 : i0+mc, p0 : p0+kc] -> ceil(mc / 32) panels.
template <typename Src, int S>
void pack_a(bf16 *__restrict dst, const Src *__restrict a, long lda, Trans ta, long i0, long mc, long p0, long kc) {
  const long depth = packed_steps(kc, S, 2);
  for (long ir = 0; ir < mc; ir += kMr, dst += kMr * depth) {
    const long rows = std::min<long>(kMr, mc - ir);
    if (ta == Trans::N) a_panel_rows<Src, S>(dst, a + (i0 + ir) + p0 * lda, lda, kc, rows);
    else a_panel_cols<Src, S>(dst, a + p0 + (i0 + ir) * lda, lda, kc, rows);
  }
}

// A panel of op(B) = B (each column's k contiguous): as a_panel_cols, 12 of
// the 16 transposed lines kept.
template <typename Src, int S>
void b_panel_cols(bf16 *__restrict dst, const Src *__restrict b, long ldb, long kc, long cols) {
  constexpr int P = S == 1 ? 1 : 3;
  for (long k0 = 0; k0 < kc; k0 += 32) {
    const long nk = std::min<long>(32, kc - k0), npairs = (nk + 1) / 2;
    __m512i v[P][16];
    transposed_pairs<Src, S>(b + k0, ldb, static_cast<int>(cols), first_bits(nk), v);
    for (long qq = 0; qq < npairs; ++qq)
      for (int s = 0; s < S; ++s)
        _mm512_mask_storeu_epi32(dst + ((k0 / 2 + qq) * S + s) * 2 * kNr, 0x0fff, v[part_b(s)][qq]);
  }
}

// A panel of op(B) = B^T (each k step's columns contiguous): rows 2q and
// 2q+1, 12 values each, interleaved into the 24 bf16 of pair q.
template <typename Src, int S>
void b_panel_rows(bf16 *__restrict dst, const Src *__restrict b, long ldb, long kc, long cols) {
  const uint32_t mask = first_bits(cols);
  const __m512i lo_idx = interleave_index(0);
  constexpr int P = S == 1 ? 1 : 3;
  for (long q = 0; 2 * q < kc; ++q) {
    __m512i r0[P], r1[P];
    load_parts<S>(b + 2 * q * ldb, mask, r0);
    if (2 * q + 1 < kc) load_parts<S>(b + (2 * q + 1) * ldb, mask, r1);
    else
      for (int t = 0; t < P; ++t) r1[t] = _mm512_setzero_si512();
    __m512i w[P];
    for (int t = 0; t < P; ++t) w[t] = _mm512_permutex2var_epi16(r0[t], lo_idx, r1[t]);
    for (int s = 0; s < S; ++s) _mm512_mask_storeu_epi32(dst + (q * S + s) * 2 * kNr, 0x0fff, w[part_b(s)]);
  }
}

// Eight whole panels of op(B) = B^T from bf16 (k steps' columns
// contiguous): rows 2q and 2q+1, 96 values each, read whole (three lines
// where B's rows start on one) and interleaved into pair words, 12 to a
// panel. A panel at a time reads 24 bytes of a row, and walks all kc rows
// again for the next panel: on DiT's weight gradients (dY^T, 1536 values a
// row) that was 12 % of the product's samples.
inline void b_panels_rows8(bf16 *__restrict dst, const bf16 *__restrict b, long ldb, long kc, long depth) {
  const __m512i lo_idx = interleave_index(0), hi_idx = interleave_index(16);
  for (long q = 0; 2 * q < kc; ++q) {
    const bf16 *r0 = b + 2 * q * ldb;
    const bool second = 2 * q + 1 < kc;
    __m512i w[7];
    for (int v = 0; v < 3; ++v) {
      const __m512i x0 = _mm512_loadu_si512(r0 + 32 * v);
      const __m512i x1 = second ? _mm512_loadu_si512(r0 + ldb + 32 * v) : _mm512_setzero_si512();
      w[2 * v] = _mm512_permutex2var_epi16(x0, lo_idx, x1);      // pairs of columns 32v .. 32v + 15
      w[2 * v + 1] = _mm512_permutex2var_epi16(x0, hi_idx, x1);  // 32v + 16 .. 32v + 31
    }
    w[6] = w[5];
    // Panel g's 12 pair words start at word 12 g: word 12 g % 16 of w[12 g / 16].
    bf16 *d = dst + q * 2 * kNr;
    const long step = kNr * depth;
    _mm512_mask_storeu_epi32(d, 0x0fff, w[0]);
    _mm512_mask_storeu_epi32(d + step, 0x0fff, _mm512_alignr_epi32(w[1], w[0], 12));
    _mm512_mask_storeu_epi32(d + 2 * step, 0x0fff, _mm512_alignr_epi32(w[2], w[1], 8));
    _mm512_mask_storeu_epi32(d + 3 * step, 0x0fff, _mm512_alignr_epi32(w[3], w[2], 4));
    _mm512_mask_storeu_epi32(d + 4 * step, 0x0fff, w[3]);
    _mm512_mask_storeu_epi32(d + 5 * step, 0x0fff, _mm512_alignr_epi32(w[4], w[3], 12));
    _mm512_mask_storeu_epi32(d + 6 * step, 0x0fff, _mm512_alignr_epi32(w[5], w[4], 8));
    _mm512_mask_storeu_epi32(d + 7 * step, 0x0fff, _mm512_alignr_epi32(w[6], w[5], 4));
  }
}

// op(B)[p0 : p0+kc, j0 : j0+nc] -> ceil(nc / 12) panels.
template <typename Src, int S>
void pack_b(bf16 *__restrict dst, const Src *__restrict b, long ldb, Trans tb, long p0, long kc, long j0, long nc) {
  const long depth = packed_steps(kc, S, 2);
  long jr = 0;
  if constexpr (std::is_same_v<Src, bf16>)
    if (tb == Trans::T)
      for (; jr + 8 * kNr <= nc; jr += 8 * kNr, dst += 8 * kNr * depth)
        b_panels_rows8(dst, b + (j0 + jr) + p0 * ldb, ldb, kc, depth);
  for (; jr < nc; jr += kNr, dst += kNr * depth) {
    const long cols = std::min<long>(kNr, nc - jr);
    if (tb == Trans::N) b_panel_cols<Src, S>(dst, b + p0 + (j0 + jr) * ldb, ldb, kc, cols);
    else b_panel_rows<Src, S>(dst, b + (j0 + jr) + p0 * ldb, ldb, kc, cols);
  }
}

}  // namespace
}  // namespace hcops::kernels::avx512_bf16
