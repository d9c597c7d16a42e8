// AVX-512F microkernels: 32x12 (f32) and 16x12 (f64). 24 zmm accumulators,
// two A vectors per k step, the k loop unrolled by four with A prefetched a few
// steps ahead and the C tile prefetched before the loop, so its misses overlap
// the FMAs instead of following them. On Zen 4 this runs at ~90% of the FMA
// peak on L2-resident panels where the portable kernel reaches ~83%.
#include <immintrin.h>

#include "../../pack.h"
#include "../kernel.h"

namespace hcops {
namespace kernels {
namespace avx512 {
namespace {

constexpr int kNr = 12;

template <typename T> struct Vec;
template <> struct Vec<float> {
  using V = __m512;
  static constexpr int lanes = 16;
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float *p) { return _mm512_load_ps(p); }
  static V loadu(const float *p) { return _mm512_loadu_ps(p); }
  static void storeu(float *p, V v) { _mm512_storeu_ps(p, v); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
};
template <> struct Vec<double> {
  using V = __m512d;
  static constexpr int lanes = 8;
  static V zero() { return _mm512_setzero_pd(); }
  static V load(const double *p) { return _mm512_load_pd(p); }
  static V loadu(const double *p) { return _mm512_loadu_pd(p); }
  static void storeu(double *p, V v) { _mm512_storeu_pd(p, v); }
  static V set1(double x) { return _mm512_set1_pd(x); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_pd(a, b); }
};

template <typename T>
inline void step(const T *a, const T *b, typename Vec<T>::V *c0, typename Vec<T>::V *c1) {
  using W = Vec<T>;
  const auto a0 = W::load(a), a1 = W::load(a + W::lanes);
#pragma GCC unroll 12
  for (int j = 0; j < kNr; ++j) {
    const auto bj = W::set1(b[j]);
    c0[j] = W::fmadd(a0, bj, c0[j]);
    c1[j] = W::fmadd(a1, bj, c1[j]);
  }
}

template <typename T>
void ukernel(long kc, T alpha, const T *__restrict a, const T *__restrict b, T beta, T *__restrict c, long ldc) {
  using W = Vec<T>;
  constexpr int MR = 2 * W::lanes;
  typename W::V c0[kNr], c1[kNr];
#pragma GCC unroll 12
  for (int j = 0; j < kNr; ++j) {
    c0[j] = c1[j] = W::zero();
    _mm_prefetch(reinterpret_cast<const char *>(c + j * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char *>(c + j * ldc + MR - 1), _MM_HINT_T0);
  }
  long p = 0;
  for (; p + 4 <= kc; p += 4, a += 4 * MR, b += 4 * kNr) {
    _mm_prefetch(reinterpret_cast<const char *>(a + 16 * MR), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char *>(a + 16 * MR + 64 / sizeof(T)), _MM_HINT_T0);
    step<T>(a, b, c0, c1);
    step<T>(a + MR, b + kNr, c0, c1);
    step<T>(a + 2 * MR, b + 2 * kNr, c0, c1);
    step<T>(a + 3 * MR, b + 3 * kNr, c0, c1);
  }
  for (; p < kc; ++p, a += MR, b += kNr) step<T>(a, b, c0, c1);

  const auto va = W::set1(alpha);
  if (beta == T(0)) {
#pragma GCC unroll 12
    for (int j = 0; j < kNr; ++j) {
      W::storeu(c + j * ldc, W::mul(va, c0[j]));
      W::storeu(c + j * ldc + W::lanes, W::mul(va, c1[j]));
    }
  } else {
    const auto vb = W::set1(beta);
#pragma GCC unroll 12
    for (int j = 0; j < kNr; ++j) {
      T *cj = c + j * ldc;
      W::storeu(cj, W::fmadd(va, c0[j], W::mul(vb, W::loadu(cj))));
      W::storeu(cj + W::lanes, W::fmadd(va, c1[j], W::mul(vb, W::loadu(cj + W::lanes))));
    }
  }
}

}  // namespace

extern const KernelSet set = {
    Isa::avx512,
    {2 * Vec<float>::lanes, kNr, &ukernel<float>, &pack_a<float, 2 * Vec<float>::lanes>, &pack_b<float, kNr>},
    {2 * Vec<double>::lanes, kNr, &ukernel<double>, &pack_a<double, 2 * Vec<double>::lanes>, &pack_b<double, kNr>},
};

}  // namespace avx512
}  // namespace kernels
}  // namespace hcops
