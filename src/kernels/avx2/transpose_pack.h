// Transposing pack for the AVX2 family, as kernels/avx512/transpose_pack.h
// is for AVX-512: rows of op(A) that are contiguous in memory (A^T) become
// k-step vectors of a 16 x kc (f32) or 8 x kc (f64) panel through 8 x 8
// float or 4 x 4 double transposes in registers. pack.h's interleave_rows
// moves one element per instruction, and it sits on the path of every TN
// product (PyTorch's forward Linear, as BLAS sees it) and every transposed
// attention product. Zen 3 (build_compare.py, one-shape traces): sgemm_ TN
// 17-64^3 1.10-1.16x, 100-256^3 1.03-1.09x; DiT's, whose A is packed once
// for 2048 columns, unchanged (doc/user-guide.md).
#pragma once

#include <immintrin.h>

#include <algorithm>

#include "kernels/avx2/transpose8.h"

namespace hcops::kernels::avx2 {
namespace {

inline void transpose_square(__m256 r[8]) { transpose8x8(r); }

// r[i] holds row i (4 doubles); afterwards r[c] holds column c.
inline void transpose_square(__m256d r[4]) {
  const __m256d t0 = _mm256_unpacklo_pd(r[0], r[1]), t1 = _mm256_unpackhi_pd(r[0], r[1]);
  const __m256d t2 = _mm256_unpacklo_pd(r[2], r[3]), t3 = _mm256_unpackhi_pd(r[2], r[3]);
  r[0] = _mm256_permute2f128_pd(t0, t2, 0x20);
  r[1] = _mm256_permute2f128_pd(t1, t3, 0x20);
  r[2] = _mm256_permute2f128_pd(t0, t2, 0x31);
  r[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
}

// How many lanes x lanes blocks ahead transpose_rows prefetches, in its
// loop's order: a row of an A block is only kc values, streams too short and
// too many for the hardware prefetchers (as on AVX-512). A block here reads
// half a line of each row (f32), so 4 blocks ahead is 2 lines on.
constexpr long kPrefetchBlocks = 4;

// interleave_rows' contract (pack.h) for A panels, whose width MR is a
// multiple of the lane count: dst[p * width + r] = src[r * ld + p] for
// r < rows, zero for rows <= r < width. W is the family's vector traits
// (vec.h); blocks of lanes x lanes, the tails of k read with masked loads
// (nothing past a row is read) and of rows zero.
template <typename W, typename T>
void transpose_rows(T *dst, const T *src, long ld, long kc, long rows, int width) {
  constexpr int n = W::lanes;
  const long steps = (kc + n - 1) / n * n;  // a row block's k, in blocks of n
  for (int r0 = 0; r0 < width; r0 += n) {
    const int nrows = static_cast<int>(std::clamp<long>(rows - r0, 0, n));
    for (long p0 = 0; p0 < kc; p0 += n) {
      const int np = static_cast<int>(std::min<long>(n, kc - p0));
      // The block kPrefetchBlocks ahead in this loop's order, possibly in the
      // next row block: a line of each of its rows.
      const long ahead = p0 + kPrefetchBlocks * n;
      const long pa = ahead < kc ? ahead : ahead - steps, ra = ahead < kc ? r0 : r0 + n;
      if (pa >= 0 && pa < kc)
        for (long i = ra; i < std::min<long>(rows, ra + n); ++i)
          _mm_prefetch(reinterpret_cast<const char *>(src + i * ld + pa), _MM_HINT_T0);
      // Unrolled whole (GCC left these loops rolled, with v on the stack:
      // no faster than the scalar copy).
      typename W::V v[n];
      if (np == n) {
#pragma GCC unroll 8
        for (int i = 0; i < n; ++i) v[i] = i < nrows ? W::loadu(src + (r0 + i) * ld + p0) : W::zero();
      } else {
        const typename W::Mask m = W::mask(np);
#pragma GCC unroll 8
        for (int i = 0; i < n; ++i) v[i] = i < nrows ? W::loadu(src + (r0 + i) * ld + p0, m) : W::zero();
      }
      if (nrows) transpose_square(v);
      if (np == n) {
#pragma GCC unroll 8
        for (int q = 0; q < n; ++q) W::storeu(dst + (p0 + q) * width + r0, v[q]);
      } else {
        for (int q = 0; q < np; ++q) W::storeu(dst + (p0 + q) * width + r0, v[q]);
      }
    }
  }
}

}  // namespace
}  // namespace hcops::kernels::avx2
