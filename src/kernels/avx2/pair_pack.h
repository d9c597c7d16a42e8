// The avx2 family's packers for bf16 operands into K-pair panels
// (kernels/pack_pairs.h's layout, bit for bit: tests/engine/test_bf16_pack),
// 16 rows of A, 6 columns of B. The portable loops of pack_pairs.h write
// each bf16 on its own, after a memset of the panel; with the operands cold
// they took 12-14 % of a 384 x 384 x 2048 product on 2 Zen 3 cores, where
// these move 8 or 16 pairs per instruction. A pair is one 32-bit word (the
// even k step in the low half), so:
// - where op(X)'s rows or columns run along k (A^T, B), a pair is a word
//   already in memory, and a panel is an 8 x 8 transpose of words
//   (transpose8.h, the operators' transposing copy's);
// - where they run across k (A, B^T), a pair interleaves two k steps'
//   vectors (vpunpck{l,h}wd).
// Partial panels, and the k steps past the last full group of 8 pairs, go
// through the portable code or a scalar loop with the same output; an odd k
// ends with a pair whose odd half is zero, as the layout wants.
//
// Only the avx2 family's family.cpp includes this file (its -mavx2).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "common/dtype.h"
#include "kernels/gemm_types.h"
#include "kernels/avx2/transpose8.h"
#include "kernels/avx2/vec.h"
#include "kernels/pack_pairs.h"

namespace hcops::kernels::avx2 {
namespace {

// A packed word written on its own, into storage the kernels read as bf16.
using word = uint32_t __attribute__((may_alias));

// The bits of op(X)'s bf16 values, and packed words.
inline const uint16_t *bf16_bits(const bf16 *p) { return reinterpret_cast<const uint16_t *>(p); }
inline uint32_t load_word(const uint16_t *p) {
  uint32_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

// Pair q of a line running along k (kc steps): its word, the odd half zero
// past kc.
inline uint32_t pair_along(const uint16_t *line, long q, long kc) {
  return 2 * q + 1 < kc ? load_word(line + 2 * q) : line[2 * q];
}

// `lines` (W of them, line i at base + i * ld, k contiguous) into a panel W
// words wide: 8 pairs of 8 lines a transpose. W = 16 (A^T) or 6 (B; its
// words past 6 are stored over by the next pair step's, the last of each
// group of 8 masked, so nothing past the panel is written).
template <int W>
inline void pack_along_k(word *__restrict dst, const uint16_t *base, long ld, long kc) {
  const long pairs = kc / 2, depth = (kc + 1) / 2;  // full pairs; pair steps
  long q = 0;
  for (; q + 8 <= pairs; q += 8) {
    for (int g = 0; g < W; g += 8) {
      __m256i r[8];
      for (int i = 0; i < 8; ++i)
        r[i] = g + i < W ? _mm256_loadu_si256(reinterpret_cast<const __m256i *>(base + (g + i) * ld + 2 * q))
                         : _mm256_setzero_si256();
      transpose8x8(r);
      if constexpr (W % 8 == 0) {
        for (int j = 0; j < 8; ++j) _mm256_storeu_si256(reinterpret_cast<__m256i *>(dst + (q + j) * W + g), r[j]);
      } else {
        static_assert(W < 8, "a panel narrower than 8 words, or a multiple of 8");
        for (int j = 0; j < 7; ++j) _mm256_storeu_si256(reinterpret_cast<__m256i *>(dst + (q + j) * W), r[j]);
        // F32's partial store: vmaskmov to memory is slow on AMD (vec.h); a move keeps the bits.
        F32::storeu(reinterpret_cast<float *>(dst + (q + 7) * W), _mm256_castsi256_ps(r[7]), lane_mask32(W));
      }
    }
  }
  for (; q < depth; ++q)
    for (int i = 0; i < W; ++i) dst[q * W + i] = pair_along(base + i * ld, q, kc);
}

// 16 rows of A (rows contiguous, column p at base + p * ld) into a panel:
// pair q interleaves columns 2q and 2q + 1.
inline void pack_a16_across_k(word *__restrict dst, const uint16_t *base, long ld, long kc) {
  const long depth = (kc + 1) / 2;
  for (long q = 0; q < depth; ++q, dst += 16) {
    const __m256i even = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(base + 2 * q * ld));
    const __m256i odd = 2 * q + 1 < kc
                            ? _mm256_loadu_si256(reinterpret_cast<const __m256i *>(base + (2 * q + 1) * ld))
                            : _mm256_setzero_si256();
    // In-lane interleave: lo = rows 0-3 | 8-11, hi = rows 4-7 | 12-15.
    const __m256i lo = _mm256_unpacklo_epi16(even, odd), hi = _mm256_unpackhi_epi16(even, odd);
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(dst), _mm256_permute2x128_si256(lo, hi, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(dst + 8), _mm256_permute2x128_si256(lo, hi, 0x31));
  }
}

// 6 columns of B^T (row p at base + p * ld, the columns contiguous in it):
// pair q interleaves rows 2q and 2q + 1, read 4 + 2 values at a time (never
// past the sixth column).
inline void pack_b6_across_k(word *__restrict dst, const uint16_t *base, long ld, long kc) {
  const long depth = (kc + 1) / 2;
  for (long q = 0; q < depth; ++q, dst += 6) {
    const uint16_t *e = base + 2 * q * ld, *o = e + ld;
    const bool has_odd = 2 * q + 1 < kc;
    const __m128i e03 = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(e));
    const __m128i o03 = has_odd ? _mm_loadl_epi64(reinterpret_cast<const __m128i *>(o)) : _mm_setzero_si128();
    const __m128i e45 = _mm_cvtsi32_si128(static_cast<int>(load_word(e + 4)));
    const __m128i o45 = has_odd ? _mm_cvtsi32_si128(static_cast<int>(load_word(o + 4))) : _mm_setzero_si128();
    _mm_storeu_si128(reinterpret_cast<__m128i *>(dst), _mm_unpacklo_epi16(e03, o03));
    _mm_storel_epi64(reinterpret_cast<__m128i *>(dst + 4), _mm_unpacklo_epi16(e45, o45));
  }
}

// pack_a_pairs<bf16, 16, 1>'s output: op(A)[i0 : i0+mc, p0 : p0+kc].
void pack_a_pairs16(bf16 *__restrict dst, const bf16 *__restrict a, long lda, Trans ta, long i0, long mc, long p0,
                    long kc) {
  constexpr long kMr = 16;
  const long depth = packed_steps(kc, 1, 2);
  for (long ir = 0; ir < mc; ir += kMr, dst += kMr * depth) {
    if (mc - ir < kMr) {  // the partial panel
      pack_a_pairs_width<bf16, 1, 2>(dst, a, lda, ta, i0 + ir, mc - ir, p0, kc, kMr);
      break;
    }
    auto *words = reinterpret_cast<word *>(dst);
    if (ta == Trans::N) pack_a16_across_k(words, bf16_bits(a + (i0 + ir) + p0 * lda), lda, kc);
    else pack_along_k<16>(words, bf16_bits(a + p0 + (i0 + ir) * lda), lda, kc);
  }
}

// pack_b_pairs<bf16, 6, 1>'s output: op(B)[p0 : p0+kc, j0 : j0+nc].
void pack_b_pairs6(bf16 *__restrict dst, const bf16 *__restrict b, long ldb, Trans tb, long p0, long kc, long j0,
                   long nc) {
  constexpr long kNr = 6;
  const long depth = packed_steps(kc, 1, 2);
  for (long jr = 0; jr < nc; jr += kNr, dst += kNr * depth) {
    if (nc - jr < kNr) {
      pack_b_pairs_width<bf16, 1, 2>(dst, b, ldb, tb, p0, kc, j0 + jr, nc - jr, kNr);
      break;
    }
    auto *words = reinterpret_cast<word *>(dst);
    if (tb == Trans::N) pack_along_k<6>(words, bf16_bits(b + p0 + (j0 + jr) * ldb), ldb, kc);
    else pack_b6_across_k(words, bf16_bits(b + (j0 + jr) + p0 * ldb), ldb, kc);
  }
}

}  // namespace
}  // namespace hcops::kernels::avx2
