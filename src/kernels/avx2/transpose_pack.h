// The AVX2 family's square transposes for the transposing pack of op(A)^T
// panels (kernels/transpose_rows.h, as avx512/transpose_pack.h's for
// AVX-512): 8 x 8 floats (transpose8.h) and 4 x 4 doubles in registers.
// Zen 3 (build_compare.py, one-shape traces), against pack.h's scalar copy:
// sgemm_ TN 17-64^3 1.10-1.16x, 100-256^3 1.03-1.09x; DiT's, whose A is
// packed once for 2048 columns, unchanged (doc/user-guide.md).
#pragma once

#include <immintrin.h>

#include "kernels/avx2/transpose8.h"

namespace hcops::kernels::avx2 {
namespace {

inline void transpose_square(__m256 *r) { transpose8x8(r); }

// r[i] holds row i (4 doubles); afterwards r[c] holds column c.
inline void transpose_square(__m256d *r) {
  const __m256d t0 = _mm256_unpacklo_pd(r[0], r[1]), t1 = _mm256_unpackhi_pd(r[0], r[1]);
  const __m256d t2 = _mm256_unpacklo_pd(r[2], r[3]), t3 = _mm256_unpackhi_pd(r[2], r[3]);
  r[0] = _mm256_permute2f128_pd(t0, t2, 0x20);
  r[1] = _mm256_permute2f128_pd(t1, t3, 0x20);
  r[2] = _mm256_permute2f128_pd(t0, t2, 0x31);
  r[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
}

}  // namespace
}  // namespace hcops::kernels::avx2
