// f32 -> bf16 rounding for the avx512_bf16 family, bit for bit as dtype.h's
// bf16(float) (round to nearest even, NaN quietened): the packers' output must
// equal kernels/pack_pairs.h's, and a bf16 C must round as the other families.
// vcvtne2ps2bf16 does it 32 values per instruction but flushes denormal
// inputs to zero, so a vector holding a denormal (one vfpclassps test per 16
// values, almost never taken) is rounded with integer operations instead.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace hcops::kernels::avx512_bf16 {
namespace {

// The bf16 of 16 f32 in the low 16 bits of each 32-bit lane, as dtype.h.
inline __m512i round_bits(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, lsb), _mm512_set1_epi32(0x7fff));
  const __mmask16 nan =
      _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
  r = _mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x00400000));
  return _mm512_srli_epi32(r, 16);
}

// 32 bf16: those of x0 in elements 0..15, those of x1 in 16..31.
inline __m512i to_bf16(__m512 x0, __m512 x1) {
  constexpr int kDenormal = 0x20;  // vfpclassps category
  if (__builtin_expect((_mm512_fpclass_ps_mask(x0, kDenormal) | _mm512_fpclass_ps_mask(x1, kDenormal)) != 0, 0)) {
    const __m256i lo = _mm512_cvtepi32_epi16(round_bits(x0)), hi = _mm512_cvtepi32_epi16(round_bits(x1));
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  }
  return (__m512i)_mm512_cvtne2ps_pbh(x1, x0);
}

// 16 bf16 of x, as to_bf16.
inline __m256i to_bf16(__m512 x) {
  if (__builtin_expect(_mm512_fpclass_ps_mask(x, 0x20) != 0, 0)) return _mm512_cvtepi32_epi16(round_bits(x));
  return (__m256i)_mm512_cvtneps_pbh(x);
}

// The f32 values of 16 bf16.
inline __m512 to_f32(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }

// bf16x3's split of 32 values (kernels/pack_pairs.h's split_value): hi =
// bf16(x), lo = bf16(x - hi), and hi_cross, the hi of the cross products:
// hi, but zero (as lo) where hi is not finite, so that a non-finite value
// enters the sum only through hi * hi (else Inf * 0 = NaN in a cross
// product when the other operand's lo is 0). x - hi is exact in f32.
inline void split(__m512 x0, __m512 x1, __m512i &hi, __m512i &lo, __m512i &hi_cross) {
  hi = to_bf16(x0, x1);
  const __m512 h0 = to_f32(_mm512_castsi512_si256(hi)), h1 = to_f32(_mm512_extracti64x4_epi64(hi, 1));
  const __m512i exp = _mm512_set1_epi32(0x7f800000);
  const __mmask16 f0 = _mm512_cmpneq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(h0), exp), exp);
  const __mmask16 f1 = _mm512_cmpneq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(h1), exp), exp);
  lo = to_bf16(_mm512_maskz_sub_ps(f0, x0, h0), _mm512_maskz_sub_ps(f1, x1, h1));
  hi_cross = _mm512_maskz_mov_epi16(static_cast<__mmask32>(f0) | (static_cast<__mmask32>(f1) << 16), hi);
}

}  // namespace
}  // namespace hcops::kernels::avx512_bf16
