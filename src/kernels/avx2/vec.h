// Vector traits of the AVX2+FMA family, for f32 and f64: the vector and mask
// types, lane count, and the loads, stores and arithmetic that simd_tile.h's
// microkernel and the operators are written against. Compiled only into
// translation units built with the family's -m flags.
#pragma once

#include <immintrin.h>

namespace hcops::kernels::avx2 {

// Lanes [0, rows) all ones: the mask vmaskmov wants.
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
  static Mask mask(int rows) { return lane_mask32(rows); }
  static V zero() { return _mm256_setzero_ps(); }
  static V load(const float *p) { return _mm256_load_ps(p); }
  static V loadu(const float *p) { return _mm256_loadu_ps(p); }
  static V loadu(const float *p, Mask m) { return _mm256_maskload_ps(p, m); }
  static void storeu(float *p, V v) { _mm256_storeu_ps(p, v); }
  static void storeu(float *p, V v, Mask m) { _mm256_maskstore_ps(p, m, v); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
};

struct F64 {
  using V = __m256d;
  using Mask = __m256i;
  static constexpr int lanes = 4;
  static Mask mask(int rows) { return lane_mask64(rows); }
  static V zero() { return _mm256_setzero_pd(); }
  static V load(const double *p) { return _mm256_load_pd(p); }
  static V loadu(const double *p) { return _mm256_loadu_pd(p); }
  static V loadu(const double *p, Mask m) { return _mm256_maskload_pd(p, m); }
  static void storeu(double *p, V v) { _mm256_storeu_pd(p, v); }
  static void storeu(double *p, V v, Mask m) { _mm256_maskstore_pd(p, m, v); }
  static V set1(double x) { return _mm256_set1_pd(x); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_pd(a, b); }
};

}  // namespace hcops::kernels::avx2
