// The amx family's skinny kernel (n <= kSkinnyMaxN, kernel.h's
// SkinnyKernel): op(A) = A^T on the tiles, A read in place; op(A) = A and
// the rows past the last 16 on avx512_bf16/skinny_bf16.h's vdpbf16ps loops.
//
// Why: on this family's CPUs vdpbf16ps runs at half the f32 FMA rate (Xeon
// with AMX: hcops-peak's avx512_bf16 row 113 GFLOPS a core against 246 for
// f32), so DiT's adaLN forward in bf16 (2304 x 8 x 384, A^T the weight) took
// as long to compute as to stream its weight (23 % of the memory bound, 2
// threads). A tile computes 16 x 16 x 32 in one instruction.
//
// How: op(A) = A^T has each row contiguous in k, which is what a tile's
// first source wants ([16 rows][32 k], one row of A per tile row, lda
// apart): A is loaded in place, nothing packed. The second source is op(B)
// in the pair (VNNI) layout, [16 k pairs][16 columns x 2]: op(B) is n x k
// at most 16 x k, packed once per call into a small buffer, zero past n and
// k. Rows go in groups of up to four 16-row result tiles (tiles 0-3), with
// the B chunk in tile 4 and A alternating between tiles 5 and 6. A last
// chunk of k shorter than 32 steps is copied, zero-padded, for its A tile
// (a tile row must not read past a row's k: the next row's values, or past
// the end of A). Each result tile is stored to a scratch block, transposed
// (a tile row is a row of C, C is column-major) and written with alpha and
// beta; a bf16 C is rounded once.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>

#include "common/dtype.h"
#include "kernels/amx/gemm_family.h"
#include "kernels/amx/tiles_hw.h"
#include "kernels/avx512_bf16/skinny_bf16.h"
#include "kernels/kernel.h"

namespace hcops::kernels::amx {
namespace skinny_tiles {
namespace {  // the amx family's own copy (as pack.h)

constexpr int kRowTiles = 4;     // result tiles per row group: 64 rows
constexpr int kBTile = 4, kATile0 = 5, kATile1 = 6;

// op(B) (column j at b + j * csb, contiguous in k) in the pair layout, one
// 1 KiB chunk per 32 steps of k: pair row q of chunk c at dst + c * 512 +
// q * 32 holds (B(32 c + 2 q, j), B(32 c + 2 q + 1, j)) for j = 0..15.
inline void pack_b_pairs(bf16 *__restrict dst, const bf16 *__restrict b, long csb, long n, long k) {
  const long chunks = (k + kChunk - 1) / kChunk;
  std::memset(static_cast<void *>(dst), 0, sizeof(bf16) * 512 * chunks);
  for (long j = 0; j < n; ++j)
    for (long p = 0; p < k; ++p) dst[p / kChunk * 512 + (p % kChunk) / 2 * 32 + 2 * j + (p & 1)] = b[p + j * csb];
}

// Rows [0, 16 G) of C (G result tiles) from op(A) = A^T's rows at a (lda
// apart) and the packed op(B).
template <int G, typename C>
void row_group(long k, float alpha, const bf16 *a, long lda, const bf16 *bp, float beta, C *c, long ldc, long n) {
  if constexpr (G > 0) HwTiles::zero<0>();
  if constexpr (G > 1) HwTiles::zero<1>();
  if constexpr (G > 2) HwTiles::zero<2>();
  if constexpr (G > 3) HwTiles::zero<3>();
  const long stride = lda * long(sizeof(bf16));
  alignas(64) bf16 tail[kTileRows * kChunk];  // a last, short chunk of 16 rows
  const long whole = k / kChunk * kChunk;
  auto step = [&](auto g, const bf16 *rows, long row_stride) {
    constexpr int T = decltype(g)::value;
    constexpr int At = T % 2 ? kATile1 : kATile0;
    HwTiles::load<At>(rows, row_stride);
    HwTiles::dpbf16ps<T, At, kBTile>();
  };
  for (long p = 0; p < k; p += kChunk) {
    HwTiles::load<kBTile>(bp + p / kChunk * 512, kTileBytes);
    auto group = [&](auto g) {
      constexpr int T = decltype(g)::value;
      if constexpr (T < G) {
        const bf16 *rows = a + 16 * T * lda + p;
        if (p < whole) {
          step(g, rows, stride);
        } else {  // the last k % 32 steps, zero-padded
          const __mmask32 m = static_cast<__mmask32>((1u << (k - p)) - 1);
          for (int r = 0; r < kTileRows; ++r)
            _mm512_store_si512(tail + r * kChunk, _mm512_maskz_loadu_epi16(m, rows + r * lda));
          step(g, tail, kTileBytes);
          // The tile load's asm declares no read of `tail`: the next
          // group's stores to it must not be moved ahead of it.
          memory_barrier();
        }
      }
    };
    group(std::integral_constant<int, 0>{});
    group(std::integral_constant<int, 1>{});
    group(std::integral_constant<int, 2>{});
    group(std::integral_constant<int, 3>{});
  }
  alignas(64) float out[kTileRows * kTileRows];
  const __mmask16 cols = static_cast<__mmask16>((1u << kTileRows) - 1);
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  auto finish = [&](auto g) {
    constexpr int T = decltype(g)::value;
    if constexpr (T < G) {
      HwTiles::store<T>(out, kTileBytes);
      __m512i r[16];
      for (int i = 0; i < 16; ++i) r[i] = _mm512_load_si512(out + 16 * i);
      transpose_16x16_epi32(r);  // r[j]: column j, rows 16 T .. 16 T + 15
      for (long j = 0; j < n; ++j) {
        C *cj = c + 16 * T + j * ldc;
        __m512 v = _mm512_mul_ps(va, _mm512_castsi512_ps(r[j]));
        if (beta != 0.0f) v = _mm512_fmadd_ps(vb, avx512_bf16::skinny_bf16::load_c(cj, cols), v);
        avx512_bf16::skinny_bf16::store_c(cj, v, cols);
      }
    }
  };
  finish(std::integral_constant<int, 0>{});
  finish(std::integral_constant<int, 1>{});
  finish(std::integral_constant<int, 2>{});
  finish(std::integral_constant<int, 3>{});
}

// The SkinnyKernel entry point for a bf16 x bf16 product into C.
template <typename C>
void kernel(Trans ta, long m, long n, long k, float alpha, const bf16 *a, long lda, const bf16 *b, long csb,
            float beta, C *c, long ldc) {
  namespace vdp = avx512_bf16::skinny_bf16;
  const long tiled = m / kTileRows * kTileRows;
  const long chunks = (k + kChunk - 1) / kChunk;
  std::unique_ptr<bf16[]> bp;
  if (ta == Trans::T && tiled > 0) bp.reset(new (std::nothrow) bf16[512 * chunks]);
  if (!bp) return vdp::kernel<C>(ta, m, n, k, alpha, a, lda, b, csb, beta, c, ldc);
  pack_b_pairs(bp.get(), b, csb, n, k);
  HwTiles::configure(block_config());
  long i = 0;
  for (; i + kRowTiles * kTileRows <= tiled; i += kRowTiles * kTileRows)
    row_group<kRowTiles>(k, alpha, a + i * lda, lda, bp.get(), beta, c + i, ldc, n);
  switch ((tiled - i) / kTileRows) {
    case 1: row_group<1>(k, alpha, a + i * lda, lda, bp.get(), beta, c + i, ldc, n); break;
    case 2: row_group<2>(k, alpha, a + i * lda, lda, bp.get(), beta, c + i, ldc, n); break;
    case 3: row_group<3>(k, alpha, a + i * lda, lda, bp.get(), beta, c + i, ldc, n); break;
    default: break;
  }
  HwTiles::release();
  if (tiled < m)  // the last m % 16 rows
    vdp::kernel<C>(ta, m - tiled, n, k, alpha, a + tiled * lda, lda, b, csb, beta, c + tiled, ldc);
}

template <typename Ty>
constexpr GemmKernel<Ty> with_skinny(GemmKernel<Ty> k) {
  k.skinny = &kernel<typename Ty::c_type>;
  return k;
}

}  // namespace
}  // namespace skinny_tiles
}  // namespace hcops::kernels::amx
