// The transposing copy of ops/transpose.h, written once against a family's
// vector traits F (instantiated per family by ops/family_table.cpp, so each
// family's copy is its own) for elements of 4 and 2 bytes, bits copied.
//
// Whole blocks are transposed in registers, B x B at a time: B lines of
// the source (B elements of each) loaded, shuffled, stored as B lines of
// the destination, so every line is moved whole, one vector per
// instruction:
// - AVX-512: 16 x 16 of 4 bytes (kernels/avx512/transpose_pack.h's
//   transpose_square, the GEMM's transposing pack) and 16 x 16 of 2 bytes
//   in 256-bit registers;
// - AVX2: 8 x 8 of 4 bytes (kernels/avx2/transpose8.h, also the avx2
//   family's bf16 pair packing), 16 x 16 of 2 bytes.
// The edges (rows or columns short of a block) and every other family
// (generic, sve: a scalar copy is what they had before; SVE's zip/unzip
// transposes are not written) copy element by element, by tiles of
// kScalarTile x kScalarTile so that each source line is fetched once for
// every element it holds.
//
// Measured (Zen 4, 2 threads, 3 MB each way: the (8, 256, 384) f32
// residual stream of DiT-S/2 made contiguous, caches flushed): 0.43-0.47 ms
// by scalar tiles, 0.42-0.44 by these blocks, 0.37-0.39 with the prefetch
// below; memcpy of as much 0.13-0.22. Reading memory a few lines from each
// of hundreds of rows is what costs (non-temporal stores of the whole
// matrix: 0.25), so the blocks gain most where the source is in cache.
#pragma once

#include <algorithm>
#include <cstdint>

#if defined(__AVX512F__)
#include "kernels/avx512/transpose_pack.h"
#endif
#if defined(__AVX2__)
#include <immintrin.h>

#include "kernels/avx2/transpose8.h"
#endif

namespace hcops::ops::transposing {
namespace {  // each family's own copy: the blocks' bodies differ by its -m flags

constexpr int64_t kScalarTile = 32;

template <class F, class T>
void scalar_tiles(const T *src, int64_t ld_src, T *dst, int64_t ld_dst, int64_t rows, int64_t cols) {
  for (int64_t r0 = 0; r0 < rows; r0 += kScalarTile) {
    const int64_t r1 = std::min(rows, r0 + kScalarTile);
    for (int64_t c0 = 0; c0 < cols; c0 += kScalarTile) {
      const int64_t c1 = std::min(cols, c0 + kScalarTile);
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) dst[r * ld_dst + c] = src[c * ld_src + r];
    }
  }
}

#if defined(__AVX2__)
// r[i] holds row i (16 elements of 2 bytes); afterwards r[c] holds column c.
// Interleaves of 2, 4 and 8 bytes within each 128-bit half, then the halves
// exchanged.
inline void transpose16x16_2bytes(__m256i r[16]) {
  __m256i s[16], u[16], w[16];
  // s[2k]: rows 2k, 2k+1 of columns 0-3 | 8-11 (one column per 4 bytes);
  // s[2k + 1]: of columns 4-7 | 12-15.
  for (int k = 0; k < 8; ++k) {
    s[2 * k] = _mm256_unpacklo_epi16(r[2 * k], r[2 * k + 1]);
    s[2 * k + 1] = _mm256_unpackhi_epi16(r[2 * k], r[2 * k + 1]);
  }
  // u[4m + j]: rows 4m..4m+3 of columns 2j, 2j+1 | 2j+8, 2j+9.
  for (int m = 0; m < 4; ++m) {
    u[4 * m] = _mm256_unpacklo_epi32(s[4 * m], s[4 * m + 2]);
    u[4 * m + 1] = _mm256_unpackhi_epi32(s[4 * m], s[4 * m + 2]);
    u[4 * m + 2] = _mm256_unpacklo_epi32(s[4 * m + 1], s[4 * m + 3]);
    u[4 * m + 3] = _mm256_unpackhi_epi32(s[4 * m + 1], s[4 * m + 3]);
  }
  // w[8p + c]: rows 8p..8p+7 of column c | c+8.
  for (int p = 0; p < 2; ++p)
    for (int j = 0; j < 4; ++j) {
      w[8 * p + 2 * j] = _mm256_unpacklo_epi64(u[8 * p + j], u[8 * p + 4 + j]);
      w[8 * p + 2 * j + 1] = _mm256_unpackhi_epi64(u[8 * p + j], u[8 * p + 4 + j]);
    }
  for (int c = 0; c < 8; ++c) {
    r[c] = _mm256_permute2x128_si256(w[c], w[8 + c], 0x20);
    r[c + 8] = _mm256_permute2x128_si256(w[c], w[8 + c], 0x31);
  }
}

inline void block_2bytes(const void *src, int64_t ld_src, void *dst, int64_t ld_dst) {
  const auto *s = static_cast<const uint16_t *>(src);
  auto *d = static_cast<uint16_t *>(dst);
  __m256i r[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(s + i * ld_src));
  transpose16x16_2bytes(r);
  for (int j = 0; j < 16; ++j) _mm256_storeu_si256(reinterpret_cast<__m256i *>(d + j * ld_dst), r[j]);
}
#endif

#if defined(__AVX512F__)
constexpr int64_t kBlock4 = 16;
inline void block_4bytes(const void *src, int64_t ld_src, void *dst, int64_t ld_dst) {
  const auto *s = static_cast<const float *>(src);
  auto *d = static_cast<float *>(dst);
  __m512 r[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(s + i * ld_src);
  kernels::avx512::transpose_square(r);
  for (int j = 0; j < 16; ++j) _mm512_storeu_ps(d + j * ld_dst, r[j]);
}
#elif defined(__AVX2__)
constexpr int64_t kBlock4 = 8;
inline void block_4bytes(const void *src, int64_t ld_src, void *dst, int64_t ld_dst) {
  const auto *s = static_cast<const float *>(src);
  auto *d = static_cast<float *>(dst);
  __m256 r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(s + i * ld_src);
  kernels::avx2::transpose8x8(r);
  for (int c = 0; c < 8; ++c) _mm256_storeu_ps(d + c * ld_dst, r[c]);
}
#endif

// Each block reads one line (or half of one) from each of B source rows a
// row stride apart: streams too many and too short for the hardware
// prefetchers. The lines 128 bytes further along each row are fetched
// ahead: the next band of rows a caller hands over (kTransposeTile) in f32,
// the one after it in bf16. DiT-S/2's residual stream made contiguous,
// caches flushed, Zen 4, 2 threads: 0.43-0.44 ms without, 0.37-0.39 with
// (64 and 128 elements ahead: 0.37-0.42, 0.41-0.43).
constexpr int64_t kPrefetchBytes = 128;

// dst (rows x cols, row stride ld_dst) = src^T.
template <class F, class T>
void transpose_copy(const T *src, int64_t ld_src, T *dst, int64_t ld_dst, int64_t rows, int64_t cols) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 2, "elements of 4 or 2 bytes");
  int64_t whole_rows = 0, whole_cols = 0;
#if defined(__AVX2__)
  constexpr int64_t B = sizeof(T) == 4 ? kBlock4 : 16;
  whole_rows = rows / B * B;
  whole_cols = cols / B * B;
  for (int64_t r0 = 0; r0 < whole_rows; r0 += B)
    for (int64_t c0 = 0; c0 < whole_cols; c0 += B) {
      for (int64_t i = 0; i < B; ++i)
        _mm_prefetch(reinterpret_cast<const char *>(reinterpret_cast<uintptr_t>(src + (c0 + i) * ld_src + r0) +
                                                    kPrefetchBytes),  // may lie past src: no fault
                     _MM_HINT_T0);
      if constexpr (sizeof(T) == 4)
        block_4bytes(src + c0 * ld_src + r0, ld_src, dst + r0 * ld_dst + c0, ld_dst);
      else
        block_2bytes(src + c0 * ld_src + r0, ld_src, dst + r0 * ld_dst + c0, ld_dst);
    }
#endif
  // The edges: the rows below the blocks, whole; the columns right of them.
  scalar_tiles<F>(src + whole_rows, ld_src, dst + whole_rows * ld_dst, ld_dst, rows - whole_rows, cols);
  scalar_tiles<F>(src + whole_cols * ld_src, ld_src, dst + whole_cols, ld_dst, whole_rows, cols - whole_cols);
}

}  // namespace
}  // namespace hcops::ops::transposing
