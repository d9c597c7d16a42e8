// Vector traits of the AVX-512F family (F/DQ/BW/VL), for f32 and f64: the vector and mask
// types, lane count, and the loads, stores and arithmetic that simd_tile.h's
// microkernel and the operators are written against. Compiled only into
// translation units built with the family's -m flags.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace hcops::kernels::avx512 {
// In an anonymous namespace, as pack.h: every translation unit that uses
// these (the avx512 kernels and operators, and through avx512_bf16/vec.h
// the avx512_bf16 and amx families, each built with its own -m flags) gets
// its own copy of the out-of-line functions.
namespace {

struct F32 {
  using V = __m512;
  using Mask = __mmask16;
  static constexpr int lanes = 16;
  static constexpr int registers = 32;  // zmm0-31: the skinny kernels size their blocks by it
  static Mask mask(int rows) { return static_cast<Mask>((1u << rows) - 1); }
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float *p) { return _mm512_load_ps(p); }
  static V loadu(const float *p) { return _mm512_loadu_ps(p); }
  static V loadu(const float *p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void storeu(float *p, V v) { _mm512_storeu_ps(p, v); }
  static void storeu(float *p, V v, Mask m) { _mm512_mask_storeu_ps(p, m, v); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V fma(V a, V b, V c) { return fmadd(a, b, c); }  // rounded once, as generic's fma
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  // For the operators (ops/): arithmetic, comparisons, reductions, and bf16
  // data (uint16_t bits, the high half of a float) widened on load and
  // rounded to nearest even on store.
  using Cmp = __mmask16;
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V fnmadd(V a, V b, V c) { return _mm512_fnmadd_ps(a, b, c); }  // c - a*b
  static V fmsub(V a, V b, V c) { return _mm512_fmsub_ps(a, b, c); }    // a*b - c
  // max/min return b when either is NaN (maxps): callers order the operands.
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V min(V a, V b) { return _mm512_min_ps(a, b); }
  static V abs(V a) { return _mm512_abs_ps(a); }
  static V sqrt(V a) { return _mm512_sqrt_ps(a); }
  static V round(V a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // 2^n for integral n in [-126, 127], exactly.
  static V pow2i(V n) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
  }
  // Optional traits the operators' vector math takes where a family has
  // them (ops/vmath.h): p 2^n for integral n of any size, rounded once
  // (vscalefps: overflow to Inf, denormal results as a multiply gives them),
  // and the reciprocal's 14-bit estimate (vrcp14ps).
  static V scale2(V p, V n) { return _mm512_scalef_ps(p, n); }
  static V rcp_estimate(V d) { return _mm512_rcp14_ps(d); }
  static V copysign(V mag, V sgn) {
    const __m512i s = _mm512_set1_epi32(int(0x80000000u));
    return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_castps_si512(mag), _mm512_castps_si512(sgn), s,
                                                         0xd8));  // s ? sgn : mag, bitwise
  }
  static Cmp lt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static Cmp gt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
  static Cmp isnan(V a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
  static V select(Cmp m, V a, V b) { return _mm512_mask_blend_ps(m, b, a); }  // m ? a : b
  static float reduce_add(V a) { return _mm512_reduce_add_ps(a); }
  static float reduce_max(V a) { return _mm512_reduce_max_ps(a); }
  static V load_bf16(const uint16_t *p) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p)), 16));
  }
  static V load_bf16(const uint16_t *p, Mask m) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
  }
  static __m256i to_bf16(V v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), odd), 16);
    const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
    r = _mm512_mask_blend_epi32(isnan(v), r, quiet);
    return _mm512_cvtepi32_epi16(r);
  }
  static void store_bf16(uint16_t *p, V v) { _mm256_storeu_si256((__m256i *)p, to_bf16(v)); }
  static void store_bf16(uint16_t *p, V v, Mask m) { _mm256_mask_storeu_epi16(p, m, to_bf16(v)); }
  // Non-temporal stores of whole 64-byte lines (p 64-byte aligned), and the
  // fence that orders them before anything stored after it. (avx512_bf16/
  // vec.h's stream_bf16 rounds with vcvtneps2bf16.)
  static void stream(float *p, V v) { _mm512_stream_ps(p, v); }
  static void stream_fence() { _mm_sfence(); }
  // 32 bf16 (lo's 16, then hi's) as one non-temporal line, for the avx512
  // family's widened bf16 products (bf16_tile.h) on CPUs without
  // vcvtneps2bf16 or whose vdpbf16ps is slower than widening.
  static void stream_bf16(uint16_t *p, V lo, V hi) {
    _mm512_stream_si512(reinterpret_cast<__m512i *>(p),
                        _mm512_inserti64x4(_mm512_castsi256_si512(to_bf16(lo)), to_bf16(hi), 1));
  }
};

struct F64 {
  using V = __m512d;
  using Mask = __mmask8;
  static constexpr int lanes = 8;
  static constexpr int registers = 32;
  static Mask mask(int rows) { return static_cast<Mask>((1u << rows) - 1); }
  static V zero() { return _mm512_setzero_pd(); }
  static V load(const double *p) { return _mm512_load_pd(p); }
  static V loadu(const double *p) { return _mm512_loadu_pd(p); }
  static V loadu(const double *p, Mask m) { return _mm512_maskz_loadu_pd(m, p); }
  static void storeu(double *p, V v) { _mm512_storeu_pd(p, v); }
  static void storeu(double *p, V v, Mask m) { _mm512_mask_storeu_pd(p, m, v); }
  static V set1(double x) { return _mm512_set1_pd(x); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_pd(a, b); }
  static double reduce_add(V a) { return _mm512_reduce_add_pd(a); }
};

}  // namespace
}  // namespace hcops::kernels::avx512
