// SME's outer products into ZA, emulated in software at a vector length
// chosen at compile time (W f32 lanes: 4 = 128 bits ... 64 = 2048), with
// the interface gemm_family.h expects. For the tests: the family's packing,
// edges and write-back run on any CPU and at every streaming vector length,
// so that a family right here is right on the hardware, whose only part
// left is tiles_hw.h's instructions (checked under QEMU, make
// check-aarch64).
//
// Semantics (Arm ARM, FMOPA and BFMOPA, widening, non-fused):
//   FMOPA  ZAt[i][j] = fma(Zn[i], Zm[j], ZAt[i][j]), all predicates true
//          (.s on f32 tiles; .d on f64 ones, FEAT_SME_F64F64)
//   BFMOPA ZAt[i][j] += Zn[2i] Zm[2j] + Zn[2i+1] Zm[2j+1], the bf16 products
//          exact in f32 and the sum rounded as the hardware's BFDOT does,
//          which these tests bound as f32 accumulation (tests/engine/tile_check.h).
#pragma once

#include <atomic>
#include <cmath>

#include "common/dtype.h"

namespace hcops::kernels::sme {

// Outer products the emulation has executed, over all threads.
inline std::atomic<long> emulated_mopa_count{0};

template <int W>
struct EmulatedTiles {
  static_assert(W >= 4 && W <= 64 && (W & (W - 1)) == 0, "SVL is 128 to 2048 bits, a power of two");
  static long words() { return W; }

  static void fmopa(long kc, const float *a, const float *b, float *acc, bool zero = true) {
    constexpr int n = 2 * W;
    if (zero)
      for (int x = 0; x < n * n; ++x) acc[x] = 0.0f;  // zero {za}
    for (long p = 0; p < kc; ++p, a += n, b += n)
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) acc[i + j * n] = std::fma(a[i], b[j], acc[i + j * n]);
    emulated_mopa_count.fetch_add(4 * kc, std::memory_order_relaxed);
  }

  static void bfmopa(long pairs, const bf16 *a, const bf16 *b, float *acc, bool zero = true) {
    constexpr int n = 2 * W;
    if (zero)
      for (int x = 0; x < n * n; ++x) acc[x] = 0.0f;
    for (long q = 0; q < pairs; ++q, a += 2 * n, b += 2 * n)
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i)
          acc[i + j * n] += float(a[2 * i]) * float(b[2 * j]) + float(a[2 * i + 1]) * float(b[2 * j + 1]);
    emulated_mopa_count.fetch_add(4 * pairs, std::memory_order_relaxed);
  }

  // FMOPA .d (FEAT_SME_F64F64): the f64 tiles are d x d, d = W/2 lanes of
  // 64 bits; acc is their 2d x 2d block, fma in f64.
  static long dwords() { return W / 2; }
  static void dfmopa(long kc, const double *a, const double *b, double *acc) {
    constexpr int n = W;  // 2d
    for (int x = 0; x < n * n; ++x) acc[x] = 0.0;
    for (long p = 0; p < kc; ++p, a += n, b += n)
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) acc[i + j * n] = std::fma(a[i], b[j], acc[i + j * n]);
    emulated_mopa_count.fetch_add(4 * kc, std::memory_order_relaxed);
  }

  // The sums into m x n of an f32 C as HwTiles writes them from ZA: with
  // alpha = 1 and beta = 1, C loaded into the tiles before the outer
  // products; otherwise FMUL by alpha, then FMLA of beta C (one rounding),
  // C not read when beta = 0.
  static void to_c(const float *acc, float alpha, float beta, float *c, long ldc, int m, int n) {
    constexpr int w2 = 2 * W;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        const float r = alpha * acc[i + j * w2];
        c[i + j * ldc] = beta == 0.0f ? r : std::fma(c[i + j * ldc], beta, r);
      }
  }
  static void c_into(float *acc, const float *c, long ldc, int m, int n) {
    constexpr int w2 = 2 * W;
    for (int x = 0; x < w2 * w2; ++x) acc[x] = 0.0f;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) acc[i + j * w2] = c[i + j * ldc];
  }
  // sums(acc, zero): the outer products into acc, zeroed first or not.
  template <typename Sums>
  static void sums_to_c(Sums sums, float *acc, float alpha, float beta, float *c, long ldc, int m, int n) {
    const bool onto_c = alpha == 1.0f && beta == 1.0f;
    if (onto_c) c_into(acc, c, ldc, m, n);
    sums(acc, !onto_c);
    if (onto_c) to_c(acc, 1.0f, 0.0f, c, ldc, m, n);
    else to_c(acc, alpha, beta, c, ldc, m, n);
  }
  static void fmopa_to_c(long kc, const float *a, const float *b, float *acc, float alpha, float beta, float *c,
                         long ldc, int m, int n) {
    sums_to_c([&](float *s, bool zero) { fmopa(kc, a, b, s, zero); }, acc, alpha, beta, c, ldc, m, n);
  }
  static void bfmopa_to_c(long pairs, const bf16 *a, const bf16 *b, float *acc, float alpha, float beta, float *c,
                          long ldc, int m, int n) {
    sums_to_c([&](float *s, bool zero) { bfmopa(pairs, a, b, s, zero); }, acc, alpha, beta, c, ldc, m, n);
  }
};

}  // namespace hcops::kernels::sme
