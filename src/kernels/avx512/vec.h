// Vector traits of the AVX-512F family, for f32 and f64: the vector and mask
// types, lane count, and the loads, stores and arithmetic that simd_tile.h's
// microkernel and the operators are written against. Compiled only into
// translation units built with the family's -m flags.
#pragma once

#include <immintrin.h>

namespace hcops::kernels::avx512 {

struct F32 {
  using V = __m512;
  using Mask = __mmask16;
  static constexpr int lanes = 16;
  static Mask mask(int rows) { return static_cast<Mask>((1u << rows) - 1); }
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float *p) { return _mm512_load_ps(p); }
  static V loadu(const float *p) { return _mm512_loadu_ps(p); }
  static V loadu(const float *p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void storeu(float *p, V v) { _mm512_storeu_ps(p, v); }
  static void storeu(float *p, V v, Mask m) { _mm512_mask_storeu_ps(p, m, v); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
};

struct F64 {
  using V = __m512d;
  using Mask = __mmask8;
  static constexpr int lanes = 8;
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
};

}  // namespace hcops::kernels::avx512
