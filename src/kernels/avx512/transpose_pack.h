// Transposing pack for the AVX-512 family: rows of op(A) that are contiguous
// in memory (A^T) become k-step vectors of a panel through
// in-register transposes, 16 x 16 floats or 8 x 8 doubles at a time. The
// generic interleave_rows in pack.h moves one element per instruction; this
// moves a vector, ~4x faster, and it sits on the path of every TN product
// (PyTorch's forward Linear) and the transposed attention products.
#pragma once

#include <immintrin.h>

#include <algorithm>

// GCC 12 warns inside its own unpack/shuffle intrinsics (their
// _mm512_undefined_* operand); nothing here is uninitialised.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace hcops::kernels::avx512 {
namespace {

template <int imm>
inline __m512 shuffle_lanes(__m512 a, __m512 b) {
  return _mm512_shuffle_f32x4(a, b, imm);
}
template <int imm>
inline __m512d shuffle_lanes(__m512d a, __m512d b) {
  return _mm512_shuffle_f64x2(a, b, imm);
}

// The 128-bit lanes of in[0], in[s], in[2s], in[3s] as a 4 x 4 matrix,
// transposed into out[0], out[s], out[2s], out[3s].
template <typename V>
inline void transpose_lanes(const V *in, V *out, int s) {
  const V lo0 = shuffle_lanes<0x44>(in[0], in[s]), hi0 = shuffle_lanes<0xee>(in[0], in[s]);
  const V lo1 = shuffle_lanes<0x44>(in[2 * s], in[3 * s]), hi1 = shuffle_lanes<0xee>(in[2 * s], in[3 * s]);
  out[0] = shuffle_lanes<0x88>(lo0, lo1);
  out[s] = shuffle_lanes<0xdd>(lo0, lo1);
  out[2 * s] = shuffle_lanes<0x88>(hi0, hi1);
  out[3 * s] = shuffle_lanes<0xdd>(hi0, hi1);
}

// r[i] holds row i; afterwards r[c] holds column c. Two rounds of in-lane
// unpacks give 4 x 4 blocks per 128-bit lane, then a 4 x 4 transpose of the
// lanes themselves (shuffle_f32x4) finishes.
inline void transpose_square(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  __m512 u[16];
  for (int i = 0; i < 4; ++i) {
    const __m512d t0 = _mm512_castps_pd(t[4 * i]), t1 = _mm512_castps_pd(t[4 * i + 1]);
    const __m512d t2 = _mm512_castps_pd(t[4 * i + 2]), t3 = _mm512_castps_pd(t[4 * i + 3]);
    u[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
    u[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
    u[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
    u[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
  }
  // u[4i + j], lane L = rows 4i..4i+3 of column 4L + j.
  for (int j = 0; j < 4; ++j) transpose_lanes(u + j, r + j, 4);
}

inline void transpose_square(__m512d r[8]) {
  __m512d t[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm512_unpacklo_pd(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_pd(r[2 * i], r[2 * i + 1]);
  }
  // t[2i + j], lane L = rows 2i, 2i+1 of column 2L + j.
  for (int j = 0; j < 2; ++j) transpose_lanes(t + j, r + j, 2);
}

// How many lanes x lanes blocks ahead transpose_rows prefetches. Each block
// reads one line from each of `lanes` rows, and a row of an A block is only
// kc values (24 lines at DiT's kc = 384): streams too short and too many for
// the hardware prefetchers to follow. On Zen 5, DiT-XL's forward Linear
// 512 x 3456 x 1152 f32 (A = the weight, transposed) went from 9.27 to 8.68
// ms on 2 threads, level with the same product on a contiguous W^T (8.6).
constexpr long kPrefetchBlocks = 4;

// interleave_rows' contract (pack.h) for A panels, whose width MR is a
// multiple of the lane count: dst[p * width + r] = src[r * ld + p] for
// r < rows, zero for rows <= r < width. W is the family's vector traits
// (family.cpp); blocks of lanes x lanes, tails of k and rows masked.
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
      typename W::V v[n];
      for (int i = 0; i < n; ++i) v[i] = i < nrows ? W::loadu(src + (r0 + i) * ld + p0, W::mask(np)) : W::zero();
      if (nrows) transpose_square(v);
      for (int q = 0; q < np; ++q) W::storeu(dst + (p0 + q) * width + r0, v[q]);
    }
  }
}

}  // namespace
}  // namespace hcops::kernels::avx512

#pragma GCC diagnostic pop
