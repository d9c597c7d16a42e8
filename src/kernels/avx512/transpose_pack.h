// The AVX-512 family's square transposes for the transposing pack of
// op(A)^T panels (kernels/transpose_rows.h): 16 x 16 floats or 8 x 8
// doubles in registers. Against pack.h's interleave_rows, which moves one
// element per instruction, the pack moves a vector, ~4x faster.
#pragma once

#include <immintrin.h>

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
inline void transpose_square(__m512 *r) {
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

inline void transpose_square(__m512d *r) {
  __m512d t[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm512_unpacklo_pd(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_pd(r[2 * i], r[2 * i + 1]);
  }
  // t[2i + j], lane L = rows 2i, 2i+1 of column 2L + j.
  for (int j = 0; j < 2; ++j) transpose_lanes(t + j, r + j, 2);
}

}  // namespace
}  // namespace hcops::kernels::avx512

#pragma GCC diagnostic pop
