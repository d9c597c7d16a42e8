// Vector traits of the AVX2+FMA family, for f32 and f64: the vector and mask
// types, lane count, and the loads, stores and arithmetic that simd_tile.h's
// microkernel and the operators are written against. Compiled only with
// the family's -m flags (or, in tests/engine/test_avx2_partial_stores, its
// target pragma).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace hcops::kernels::avx2 {

// Lanes [0, rows) all ones: the mask vmaskmov wants. Every Mask of this
// family is one of these (a prefix of the lanes), as the generic family's
// Mask is a count.
inline __m256i lane_mask32(int rows) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(rows), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline __m256i lane_mask64(int rows) {
  return _mm256_cmpgt_epi64(_mm256_set1_epi64x(rows), _mm256_setr_epi64x(0, 1, 2, 3));
}

struct F32 {
  using V = __m256;
  using Mask = __m256i;
  static constexpr int lanes = 8;
  static constexpr int registers = 16;  // ymm0-15: the skinny kernels size their blocks by it
  static Mask mask(int rows) { return lane_mask32(rows); }
  static V zero() { return _mm256_setzero_ps(); }
  static V load(const float *p) { return _mm256_load_ps(p); }
  static V loadu(const float *p) { return _mm256_loadu_ps(p); }
  static V loadu(const float *p, Mask m) { return _mm256_maskload_ps(p, m); }
  static void storeu(float *p, V v) { _mm256_storeu_ps(p, v); }
  // Lanes [0, n) of v to p, for m = lane_mask32(n): whole 4, 2 and 1-lane
  // stores. vmaskmovps to memory costs AMD's Zen 1-3 about 13 cycles a
  // store (Zen 3: 3.8-4.4 ns against 0.32 for a plain store, measured in a
  // loop), and every partial block of a tile or a skinny product and every
  // f32 operator row's tail ends in such stores. Another mask (none is made
  // here) still goes to vmaskmovps. The last lane is stored through memcpy,
  // not _mm_store_ss (a plain float store), so p may hold another type.
  static void storeu(float *p, V v, Mask m) {
    int bits = _mm256_movemask_ps(_mm256_castsi256_ps(m));
    if (bits & (bits + 1)) return _mm256_maskstore_ps(p, m, v);  // not a prefix
    if (bits == 0xff) return _mm256_storeu_ps(p, v);
    __m128 part = _mm256_castps256_ps128(v);
    if (bits & 0x08) {
      _mm_storeu_ps(p, part);
      part = _mm256_extractf128_ps(v, 1);
      p += 4;
      bits >>= 4;
    }
    if (bits & 0x02) {
      _mm_storel_pi(reinterpret_cast<__m64 *>(p), part);
      part = _mm_movehl_ps(part, part);
      p += 2;
      bits >>= 2;
    }
    if (bits & 0x01) {
      const float last = _mm_cvtss_f32(part);
      std::memcpy(p, &last, sizeof last);
    }
  }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V fma(V a, V b, V c) { return fmadd(a, b, c); }  // rounded once, as generic's fma
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  // For the operators (ops/): arithmetic, comparisons, reductions, and bf16
  // data (uint16_t bits, the high half of a float) widened on load and
  // rounded to nearest even on store.
  using Cmp = __m256;  // all-ones lanes where true
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V fnmadd(V a, V b, V c) { return _mm256_fnmadd_ps(a, b, c); }  // c - a*b
  static V fmsub(V a, V b, V c) { return _mm256_fmsub_ps(a, b, c); }    // a*b - c
  // max/min return b when either is NaN (maxps): callers order the operands.
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V min(V a, V b) { return _mm256_min_ps(a, b); }
  static V abs(V a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
  static V sqrt(V a) { return _mm256_sqrt_ps(a); }
  static V round(V a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // 2^n for integral n in [-126, 127], exactly; +0 for n = -127 (the
  // exponent field all zeros), which ops/vmath.h's exp_for_sigmoid takes.
  static V pow2i(V n) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
  }
  static V copysign(V mag, V sgn) {
    const V s = _mm256_set1_ps(-0.0f);
    return _mm256_or_ps(_mm256_andnot_ps(s, mag), _mm256_and_ps(s, sgn));
  }
  static Cmp lt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static Cmp gt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
  static Cmp isnan(V a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
  static V select(Cmp m, V a, V b) { return _mm256_blendv_ps(b, a, m); }  // m ? a : b
  static float reduce_add(V a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float reduce_max(V a) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static V load_bf16(const uint16_t *p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16));
  }
  static V load_bf16(const uint16_t *p, Mask m) {
    alignas(16) uint16_t t[8] = {};
    const int n = _mm256_movemask_ps(_mm256_castsi256_ps(m));
    for (int i = 0; i < 8; ++i)
      if (n >> i & 1) t[i] = p[i];
    return load_bf16(t);
  }
  static __m128i to_bf16(V v) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), odd), 16);
    const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    r = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(r), _mm256_castsi256_ps(quiet), isnan(v)));
    // Values are < 2^16: packus keeps them; it interleaves 128-bit lanes, undone by the permute.
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08));
  }
  static void store_bf16(uint16_t *p, V v) { _mm_storeu_si128((__m128i *)p, to_bf16(v)); }
  static void store_bf16(uint16_t *p, V v, Mask m) {
    alignas(16) uint16_t t[8];
    _mm_store_si128((__m128i *)t, to_bf16(v));
    const int n = _mm256_movemask_ps(_mm256_castsi256_ps(m));
    for (int i = 0; i < 8; ++i)
      if (n >> i & 1) p[i] = t[i];
  }
  // Non-temporal stores (p 32-byte aligned; the shallow kernel streams an
  // f32 block's two vectors, one whole line), and the fence that orders
  // them before anything stored after it.
  static void stream(float *p, V v) { _mm256_stream_ps(p, v); }
  static void stream_fence() { _mm_sfence(); }
  // 16 bf16 values, lo's 8 then hi's, streamed to p (32-byte aligned): half
  // a line, which the shallow kernel's next block of the column completes.
  static void stream_bf16(uint16_t *p, V lo, V hi) {
    _mm256_stream_si256(reinterpret_cast<__m256i *>(p), _mm256_set_m128i(to_bf16(hi), to_bf16(lo)));
  }
};

struct F64 {
  using V = __m256d;
  using Mask = __m256i;
  static constexpr int lanes = 4;
  static constexpr int registers = 16;
  static Mask mask(int rows) { return lane_mask64(rows); }
  static V zero() { return _mm256_setzero_pd(); }
  static V load(const double *p) { return _mm256_load_pd(p); }
  static V loadu(const double *p) { return _mm256_loadu_pd(p); }
  static V loadu(const double *p, Mask m) { return _mm256_maskload_pd(p, m); }
  static void storeu(double *p, V v) { _mm256_storeu_pd(p, v); }
  // As F32's: whole 2 and 1-lane stores for m = lane_mask64(n).
  static void storeu(double *p, V v, Mask m) {
    int bits = _mm256_movemask_pd(_mm256_castsi256_pd(m));
    if (bits & (bits + 1)) return _mm256_maskstore_pd(p, m, v);  // not a prefix
    if (bits == 0xf) return _mm256_storeu_pd(p, v);
    __m128d part = _mm256_castpd256_pd128(v);
    if (bits & 0x2) {
      _mm_storeu_pd(p, part);
      part = _mm256_extractf128_pd(v, 1);
      p += 2;
      bits >>= 2;
    }
    if (bits & 0x1) {
      const double last = _mm_cvtsd_f64(part);
      std::memcpy(p, &last, sizeof last);
    }
  }
  static V set1(double x) { return _mm256_set1_pd(x); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_pd(a, b); }
  static double reduce_add(V a) {
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
  }
};

}  // namespace hcops::kernels::avx2
