// The AVX2 8 x 8 transpose of 4-byte elements in registers, shared by the
// operators' transposing copy (ops/transpose_impl.h) and the avx2 family's
// bf16 pair packing (kernels/avx2/pair_pack.h, where a packed pair is one
// 32-bit word), as kernels/avx512/transpose_pack.h is for AVX-512.
// Included only by code compiled with -mavx2; the anonymous namespace
// keeps each includer's copy its own.
#pragma once

#include <immintrin.h>

namespace hcops::kernels::avx2 {
namespace {

// r[i] holds row i (8 elements of 4 bytes); afterwards r[c] holds column c.
// Pairs of rows interleaved, then 4 x 4 blocks within each 128-bit half,
// then the halves exchanged.
inline void transpose8x8(__m256 r[8]) {
  __m256 t[8], q[8];
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {
    t[2 * k] = _mm256_unpacklo_ps(r[2 * k], r[2 * k + 1]);
    t[2 * k + 1] = _mm256_unpackhi_ps(r[2 * k], r[2 * k + 1]);
  }
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {  // q: columns c | c+4 of rows 4h..4h+3
    q[4 * h] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0x44);
    q[4 * h + 1] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0xee);
    q[4 * h + 2] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0x44);
    q[4 * h + 3] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0xee);
  }
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    r[c] = _mm256_permute2f128_ps(q[c], q[4 + c], 0x20);
    r[c + 4] = _mm256_permute2f128_ps(q[c], q[4 + c], 0x31);
  }
}

// The same on integer vectors (bits moved, never computed on).
inline void transpose8x8(__m256i r[8]) {
  __m256 f[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) f[i] = _mm256_castsi256_ps(r[i]);
  transpose8x8(f);
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) r[i] = _mm256_castps_si256(f[i]);
}

}  // namespace
}  // namespace hcops::kernels::avx2
