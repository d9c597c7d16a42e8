// The AMX-BF16 GEMM family, written once over a tile traits class: HwTiles
// (tiles_hw.h, the instructions; kernels/amx/family.cpp, what the registry
// lists) or EmulatedTiles (tiles_emulated.h, the SDM's semantics in
// software; what the tests run on CPUs without AMX). Everything else,
// packing, tile configuration, the blocked loops, edges, alpha/beta, the
// GEMM's epilogue (fused: applied to each tile's f32 values on the last k
// block, so a bf16 C needs no f32 copy) and the bf16 rounding of C, is this
// one code, compiled with AVX-512 (F, BW, VL, DQ, BF16) flags.
//
// Layout: the tiles compute C^T, so that a result tile's rows are columns
// of the column-major C and store there directly (stride ldc):
//   result tile [16 n][16 m] f32  +=  B tile [16 n][16 k pairs x 2 bf16]
//                                   .  A tile [16 k pairs][16 m x 2 bf16]
// TDPBF16PS's first source has k contiguous in each row, op(B)'s columns;
// its second is in the pair (VNNI) layout, which is pack_pairs.h's layout
// of op(A) with MR = 32: a pair row of 32 m x 2 bf16 = 128 bytes, the two
// A tiles of one chunk of 16 pairs at +0 and +64 bytes with stride 128.
// op(B) is packed as [chunk of 32 packed k steps][NR = 32 n][32 bf16], each
// B tile 16 n rows of 64 bytes. A block of 32 x 32 of C is 2 x 2 result
// tiles (0-3), with the two B tiles (4, 5) and the two A tiles (6, 7): the
// 8 tiles of palette 1, each 16 x 64 bytes, configured once per macro block.
// Every tile loaded is reused twice per chunk (4 TDPBF16PS per 4 loads).
//
// Panels are zero-padded to 32 packed steps (k_align = 32, one tile of
// k pairs) and to MR, NR: every tile instruction is full size, and edges
// are handled only when C is written, from a scratch block (PendingBlock)
// with masked AVX-512 stores. A whole 32 x 32 block inside C, with an f32 C
// and alpha = 1 and no epilogue, is stored (beta = 0) or loaded and stored
// back (beta = 1, the driver's later k blocks) straight from C.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "common/dtype.h"
#include "kernels/amx/tile_config.h"
#include "kernels/avx512_bf16/convert.h"
#include "kernels/kernel.h"
#include "kernels/pack_pairs.h"

namespace hcops::kernels::amx {
namespace {

constexpr int kMr = 32, kNr = 32;
constexpr int kChunk = 32;      // packed k steps per tile: 16 pairs x 2
constexpr int kTileRows = 16;   // rows of every tile
constexpr int kTileBytes = 64;  // bytes per row of every tile
constexpr int kBTile0 = 4, kBTile1 = 5, kATile0 = 6, kATile1 = 7;
static_assert(kMr == 2 * kTileRows && kNr == 2 * kTileRows, "2 x 2 result tiles");

inline const TileConfig &block_config() {
  static const TileConfig cfg = uniform_config(kTileRows, kTileBytes);
  return cfg;
}

// ---- packing

// GCC 12's AVX-512 headers start some intrinsics from a self-initialised
// "undefined" vector, which -Wmaybe-uninitialized reports once inlined here
// (GCC bug 105593, fixed in 13), or -Wuninitialized for the unpacks of a
// transpose: nothing of ours is uninitialised.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

// vpermt2w indices that interleave the first 16 words of two vectors, a0 b0
// a1 b1 ... a15 b15 (b's words are 32..47): two k steps of 16 values as 16
// pairs. Plus 16, the next 16 words of each.
alignas(64) constexpr uint16_t kInterleave16[32] = {0, 32, 1, 33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39,
                                                    8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};

// r[t] (row t, 16 dwords) becomes column t: a 16 x 16 transpose of dwords.
inline void transpose_16x16_epi32(__m512i *r) {
  __m512i t[16], u[16];
  // t[2i]: in 128-bit lane L, columns 4L and 4L + 1 of rows 2i and 2i + 1,
  // interleaved; t[2i + 1]: columns 4L + 2 and 4L + 3.
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  // u[4g + s]: in lane L, column 4L + s of rows 4g .. 4g + 3.
  for (int g = 0; g < 4; ++g) {
    u[4 * g + 0] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
    u[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
  }
  // Column 4L + s gathers lane L of u[s], u[4 + s], u[8 + s], u[12 + s].
  for (int s = 0; s < 4; ++s) {
    const __m512i v0 = _mm512_shuffle_i32x4(u[s], u[4 + s], 0x88), w0 = _mm512_shuffle_i32x4(u[8 + s], u[12 + s], 0x88);
    const __m512i v1 = _mm512_shuffle_i32x4(u[s], u[4 + s], 0xdd), w1 = _mm512_shuffle_i32x4(u[8 + s], u[12 + s], 0xdd);
    r[s] = _mm512_shuffle_i32x4(v0, w0, 0x88);
    r[8 + s] = _mm512_shuffle_i32x4(v0, w0, 0xdd);
    r[4 + s] = _mm512_shuffle_i32x4(v1, w1, 0x88);
    r[12 + s] = _mm512_shuffle_i32x4(v1, w1, 0xdd);
  }
}

// One B panel of op(B) = B^T in bf16 (the weight gradient's second operand):
// row k of B holds the panel's columns side by side. Two rows (k = 2q, 2q +
// 1) interleave into one dword per column, the pair row of pack_pairs.h's
// layout; sixteen of them, transposed as dwords, give 16 columns of one
// chunk ([n][32 bf16]). Zero past kc and past `cols`.
inline void pack_b_transposed_panel(bf16 *__restrict dst, const bf16 *__restrict b, long ldb, long kc, long cols) {
  const __m512i idx = _mm512_load_si512(kInterleave16);
  for (long k0 = 0; k0 < kc; k0 += kChunk) {
    bf16 *chunk = dst + k0 / kChunk * (kNr * kChunk);
    for (int h = 0; h < 2; ++h) {  // columns 16 h .. 16 h + 15
      const long n_left = cols - 16 * h;
      if (n_left <= 0) break;  // the panel's zeros stay
      const __mmask16 nmask = n_left >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << n_left) - 1);
      __m512i r[16];
      for (int q = 0; q < 16; ++q) {
        const long k = k0 + 2 * q;
        const __m512i lo = k < kc ? _mm512_zextsi256_si512(_mm256_maskz_loadu_epi16(nmask, b + 16 * h + k * ldb))
                                  : _mm512_setzero_si512();
        const __m512i hi = k + 1 < kc
                               ? _mm512_zextsi256_si512(_mm256_maskz_loadu_epi16(nmask, b + 16 * h + (k + 1) * ldb))
                               : _mm512_setzero_si512();
        r[q] = _mm512_permutex2var_epi16(lo, idx, hi);  // dword n: (B(k, n), B(k + 1, n))
      }
      transpose_16x16_epi32(r);  // r[n]: the 16 pairs of column 16 h + n
      for (int n = 0; n < 16; ++n) _mm512_storeu_si512(chunk + (16 * h + n) * kChunk, r[n]);
    }
  }
}

// op(B)[p0 : p0+kc, j0 : j0+nc] -> ceil(nc / NR) panels, each
// packed_steps(kc, S, 32) / 32 chunks of [NR][32] bf16: packed step t of
// column n at [t / 32][n][t % 32]; packed step t = 2 (q S + s) + e holds
// split s of op(B)(2q + e, n) (pack_pairs.h's slots: hi, lo, hi). Zero
// past the data.
template <typename Src, int S>
void pack_b_tiles(bf16 *__restrict dst, const Src *__restrict b, long ldb, Trans tb, long p0, long kc, long j0,
                  long nc) {
  const long depth = packed_steps(kc, S, kChunk);
  auto slot = [](long q, int s, long e) {
    const long t = 2 * (q * S + s) + e;
    return t / kChunk * (kNr * kChunk) + t % kChunk;
  };
  for (long jr = 0; jr < nc; jr += kNr, dst += kNr * depth) {
    const long cols = std::min<long>(kNr, nc - jr);
    // The fast packers of a full panel write every packed step (whole
    // chunks of k; the transposing one zero-fills past kc itself): only
    // the others need the panel zeroed first (a memset of every panel was
    // a tenth of a DiT-S/2 bf16 product's time).
    const bool writes_all = S == 1 && cols == kNr &&
                            (tb == Trans::N ? kc % kChunk == 0 : std::is_same_v<Src, bf16>);
    if (!writes_all) std::memset(static_cast<void *>(dst), 0, sizeof(bf16) * kNr * depth);
    if (tb == Trans::N) {
      for (long n = 0; n < cols; ++n) {
        const Src *col = b + p0 + (j0 + jr + n) * ldb;  // contiguous in k
        bf16 *d = dst + n * kChunk;
        long k = 0;
        if constexpr (S == 1) {
          // Whole chunks: 32 consecutive k, converted 16 at a time.
          for (; k + kChunk <= kc; k += kChunk) {
            bf16 *out = d + k / kChunk * (kNr * kChunk);
            if constexpr (std::is_same_v<Src, bf16>) {
              std::memcpy(out, col + k, kChunk * sizeof(bf16));
            } else {
              // vcvtneps2bf16 rounds to nearest even as bf16(float) does; it
              // flushes f32 denormals to zero, which TDPBF16PS would (DAZ).
              const __m256bh lo = _mm512_cvtneps_pbh(_mm512_loadu_ps(col + k));
              const __m256bh hi = _mm512_cvtneps_pbh(_mm512_loadu_ps(col + k + 16));
              std::memcpy(out, &lo, 32);
              std::memcpy(out + 16, &hi, 32);
            }
          }
        }
        for (; k < kc; ++k) {
          bf16 slots[S];
          split_value<S, PairRole::b>(col[k], slots);
          for (int s = 0; s < S; ++s) d[slot(k / 2, s, k % 2)] = slots[s];
        }
      }
    } else if constexpr (S == 1 && std::is_same_v<Src, bf16>) {
      pack_b_transposed_panel(dst, b + (j0 + jr) + p0 * ldb, ldb, kc, cols);
    } else {
      // op(B) = B^T: row k of B holds the panel's columns side by side.
      for (long k = 0; k < kc; ++k) {
        const Src *row = b + (j0 + jr) + (p0 + k) * ldb;
        for (long n = 0; n < cols; ++n) {
          bf16 slots[S];
          split_value<S, PairRole::b>(row[n], slots);
          for (int s = 0; s < S; ++s) dst[n * kChunk + slot(k / 2, s, k % 2)] = slots[s];
        }
      }
    }
  }
}

// 32 consecutive values of op(A)'s column as bf16, zero past `mask`.
inline __m512i load_column(const bf16 *p, __mmask32 mask) { return _mm512_maskz_loadu_epi16(mask, p); }
inline __m512i load_column(const float *p, __mmask32 mask) {
  const __m512 lo = _mm512_maskz_loadu_ps(static_cast<__mmask16>(mask), p);
  const __m512 hi = _mm512_maskz_loadu_ps(static_cast<__mmask16>(mask >> 16), p + 16);
  // Round to nearest even as bf16(float); f32 denormals become zero, as
  // TDPBF16PS would take them (DAZ).
  const __m512bh h = _mm512_cvtne2ps_pbh(hi, lo);
  __m512i v;
  std::memcpy(&v, &h, sizeof v);
  return v;
}

// op(A) = A^T of bf16 (nn.Linear's weight in the forward product): row i of
// op(A) is contiguous in k, so each of its k pairs is one dword, and a pair
// row (32 m x 2) is a column of dwords across 32 rows. Sixteen rows by 16
// pairs at a time: 16 loads, a dword transpose, 16 stores.
inline void pack_a_transposed(bf16 *__restrict dst, const bf16 *__restrict a, long lda, long i0, long mc, long p0,
                              long kc) {
  const long depth = packed_steps(kc, 1, kChunk), pairs = (kc + 1) / 2;
  for (long ir = 0; ir < mc; ir += kMr, dst += kMr * depth) {
    const long rows = std::min<long>(kMr, mc - ir);
    long q0 = 0;
    for (; q0 < pairs; q0 += 16) {  // pairs q0 .. q0 + 15: k from 2 q0, 32 values, zero past kc
      const long left = kc - 2 * q0;
      const __mmask32 kmask = left >= 32 ? ~__mmask32(0) : static_cast<__mmask32>((1u << left) - 1);
      for (int h = 0; h < 2; ++h) {  // rows 16 h .. 16 h + 15 of the panel
        __m512i r[16];
        for (int t = 0; t < 16; ++t) {
          const long row = 16 * h + t;
          r[t] = row < rows ? _mm512_maskz_loadu_epi16(kmask, a + p0 + 2 * q0 + (i0 + ir + row) * lda)
                            : _mm512_setzero_si512();
        }
        transpose_16x16_epi32(r);
        for (int q = 0; q < 16; ++q) _mm512_storeu_si512(dst + (q0 + q) * 2 * kMr + 32 * h, r[q]);
      }
    }
    std::memset(static_cast<void *>(dst + q0 * 2 * kMr), 0, sizeof(bf16) * kMr * (depth - 2 * q0));
  }
}

// op(A)[i0 : i0+mc, p0 : p0+kc] -> ceil(mc / MR) panels in pack_pairs.h's
// pair layout (MR = 32, depth packed_steps(kc, S, 32)). For op(A) = A
// without splits, a pair row interleaves two columns of A, each 32
// contiguous values: two loads and two vpermt2w per pair; bf16 A^T goes by
// dword transposes. The rest through the portable loops.
template <typename Src, int S>
void pack_a_tiles(bf16 *__restrict dst, const Src *__restrict a, long lda, Trans ta, long i0, long mc, long p0,
                  long kc) {
  if constexpr (S == 1 && std::is_same_v<Src, bf16>) {
    if (ta == Trans::T) {
      pack_a_transposed(dst, a, lda, i0, mc, p0, kc);
      return;
    }
  }
  if (S != 1 || ta != Trans::N) {
    pack_a_pairs<Src, kMr, S, kChunk>(dst, a, lda, ta, i0, mc, p0, kc);
    return;
  }
  const long depth = packed_steps(kc, S, kChunk);
  const __m512i lo_idx = _mm512_load_si512(kInterleave16);
  const __m512i hi_idx = _mm512_add_epi16(lo_idx, _mm512_set1_epi16(16));
  for (long ir = 0; ir < mc; ir += kMr, dst += kMr * depth) {
    const long rows = std::min<long>(kMr, mc - ir);
    const __mmask32 mask = rows == kMr ? ~__mmask32(0) : static_cast<__mmask32>((1u << rows) - 1);
    const Src *col = a + (i0 + ir) + p0 * lda;
    long k = 0;
    for (; k < kc; k += 2) {  // pair row k / 2 starts at element k * MR
      const __m512i c0 = load_column(col + k * lda, mask);
      const __m512i c1 = k + 1 < kc ? load_column(col + (k + 1) * lda, mask) : _mm512_setzero_si512();
      _mm512_storeu_si512(dst + k * kMr, _mm512_permutex2var_epi16(c0, lo_idx, c1));
      _mm512_storeu_si512(dst + k * kMr + 32, _mm512_permutex2var_epi16(c0, hi_idx, c1));
    }
    std::memset(static_cast<void *>(dst + k * kMr), 0, sizeof(bf16) * kMr * (depth - k));
  }
}

// ---- the epilogue: C = ep(alpha * acc + beta * C) on one 32 x 32 block

// 32 values of a column of C (rows past `mask` read as 0), as two f32 vectors.
inline void load_c(const float *c, __mmask32 mask, __m512 &lo, __m512 &hi) {
  lo = _mm512_maskz_loadu_ps(static_cast<__mmask16>(mask), c);
  hi = _mm512_maskz_loadu_ps(static_cast<__mmask16>(mask >> 16), c + 16);
}
inline void load_c(const bf16 *c, __mmask32 mask, __m512 &lo, __m512 &hi) {
  const __m512i h = _mm512_maskz_loadu_epi16(mask, c);
  lo = avx512_bf16::to_f32(_mm512_castsi512_si256(h));
  hi = avx512_bf16::to_f32(_mm512_extracti64x4_epi64(h, 1));
}
inline void store_c(float *c, __mmask32 mask, __m512 lo, __m512 hi) {
  _mm512_mask_storeu_ps(c, static_cast<__mmask16>(mask), lo);
  _mm512_mask_storeu_ps(c + 16, static_cast<__mmask16>(mask >> 16), hi);
}
// Rounded to nearest even exactly as bf16(float) (common/dtype.h), NaN kept
// and quietened, f32 denormals rounded, not flushed (convert.h): 32 values,
// one 64-byte store.
inline void store_c(bf16 *c, __mmask32 mask, __m512 lo, __m512 hi) {
  _mm512_mask_storeu_epi16(c, mask, avx512_bf16::to_bf16(lo, hi));
}

#pragma GCC diagnostic pop

// The GEMM's epilogue, for the last k block, and where the block of C at
// hand sits in C.
struct FusedEpilogue {
  Epilogue<float> ep;
  long i0 = 0, j0 = 0;
};

// A block of C whose tiles are stored, waiting for its epilogue: its f32
// sums (column j of the block at acc + 32 j, the 2 x 2 result tiles stored
// with a stride of 32 floats) and where they go. The epilogue of one block
// is done a few columns at a time between the tile instructions of the next
// block (tile_block), so that the AVX-512 work of combining, rounding and
// storing C runs while the tile unit computes. On DiT-S/2's bf16 products
// (Xeon, AMX, 2 threads) that was 1.00-1.15x (median 1.04x) the epilogue of
// each tile after its block; the GEMM's own epilogue (nn.Linear's bias) given
// the whole block at once instead of the same few columns was 5 % slower.
template <typename C>
struct PendingBlock {
  alignas(64) float acc[kNr * kMr];
  C *c = nullptr;
  long ldc = 0;
  int m = 0, n = 0;  // 0 x 0: nothing pending
  int done = 0;      // columns written
  float alpha = 1, beta = 0;
  FusedEpilogue fused;

  void hold(C *c_, long ldc_, int m_, int n_, float alpha_, float beta_, const FusedEpilogue &f) {
    c = c_, ldc = ldc_, m = m_, n = n_, alpha = alpha_, beta = beta_, fused = f;
    done = 0;
  }
  __mmask32 rows() const { return m >= 32 ? ~__mmask32(0) : static_cast<__mmask32>((1u << m) - 1); }
  // Columns [done, upto) to C: alpha * acc + beta * C (1 x is x, NaN and -0
  // included, and beta = 0 never reads C: as is when alpha = 1, beta = 0),
  // the GEMM's epilogue on those columns (it takes any block of C), then
  // rounded and stored.
  //
  // Only C's rows are read from acc and computed on (masked): a block
  // of m <= 16 rows leaves rows 16-31 as the previous block left them (or
  // as the stack was), and arithmetic on those would raise floating-point
  // flags of values that are not C's (alpha = 2 on a previous 2e38: an
  // overflow the product never had; numpy reports any flag as an error).
  void advance(int upto) {
    if (done >= upto) return;
    const __mmask32 mask = rows();
    const __mmask16 mlo = static_cast<__mmask16>(mask), mhi = static_cast<__mmask16>(mask >> 16);
    if (alpha != 1.0f || beta != 0.0f) {
      const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
      for (int j = done; j < upto; ++j) {
        float *col = acc + 32 * j;
        // Masked arithmetic: lanes past C's rows compute nothing, so raise nothing.
        __m512 lo = _mm512_maskz_mul_ps(mlo, va, _mm512_maskz_load_ps(mlo, col));
        __m512 hi = _mm512_maskz_mul_ps(mhi, va, _mm512_maskz_load_ps(mhi, col + 16));
        if (beta != 0.0f) {
          __m512 clo, chi;
          load_c(c + j * ldc, mask, clo, chi);
          lo = _mm512_maskz_fmadd_ps(mlo, vb, clo, lo), hi = _mm512_maskz_fmadd_ps(mhi, vb, chi, hi);
        }
        _mm512_store_ps(col, lo);
        _mm512_store_ps(col + 16, hi);
      }
    }
    if (fused.ep.row_bias) {
      // nn.Linear's bias (Epilogue::row_bias): added to each column as it is
      // stored, the f32 addition apply would make, without its call and pass.
      const float *rb = fused.ep.row_bias + fused.i0;
      const __m512 blo = _mm512_maskz_loadu_ps(mlo, rb), bhi = _mm512_maskz_loadu_ps(mhi, rb + 16);
      for (; done < upto; ++done)
        store_c(c + done * ldc, mask, _mm512_add_ps(_mm512_maskz_load_ps(mlo, acc + 32 * done), blo),
                _mm512_add_ps(_mm512_maskz_load_ps(mhi, acc + 32 * done + 16), bhi));
      return;
    }
    if (fused.ep) fused.ep.apply(fused.ep.ctx, acc + 32 * done, kMr, fused.i0, m, fused.j0 + done, upto - done);
    for (; done < upto; ++done)
      store_c(c + done * ldc, mask, _mm512_maskz_load_ps(mlo, acc + 32 * done),
              _mm512_maskz_load_ps(mhi, acc + 32 * done + 16));
  }
  void finish() { advance(n); }
};

// ---- one 32 x 32 block of C from an A panel and a B panel kc packed steps deep

// Where a block's B tiles are: a packed panel (the default: chunk p / 32 at
// b + p * kNr, its second tile 16 columns on, rows of 64 bytes) or op(B)
// = B in place (chunk p at b + p, the second tile 16 columns of B on, rows
// a column of B apart).
struct BTiles {
  long chunk_step = kNr;           // elements per packed step of k
  long second = 16 * kChunk;       // elements from the first tile to the second
  long stride = kTileBytes;        // bytes between a tile's rows
  static BTiles in_place(long ldb) { return {1, 16 * ldb, ldb * long(sizeof(bf16))}; }
};

// The next B panel brought into L2 while the current one is computed, a
// few lines per chunk of k. Read in place, a panel of op(B) = B is 32
// columns of B a column apart; each tile row load takes one 64-byte line of
// 16 columns: cold, those 16 misses are all a tile load has in flight, and
// the first A panel's pass over a cold B panel waited on memory (bf16
// 2048 x 1152 x 384 on one thread: 1.84 ms warm, 4.3 ms with the caches
// flushed, the stalls on B's tile loads; 3.3 ms with this). A packed panel
// is contiguous: one "column" of kc x 32 bf16. Into L2, not L1: the
// current panel and the A tiles are what L1 holds.
struct NextPanel {
  const char *base = nullptr;  // null: nothing to fetch
  long col_bytes = 0;          // from one column to the next
  int cols = 0, lines = 0;     // columns, 64-byte lines of each
  int next = 0, per_chunk = 0;
  void step() {
    for (int i = 0; i < per_chunk && base; ++i, ++next) {
      if (next >= cols * lines) {
        base = nullptr;
        return;
      }
      _mm_prefetch(base + (next / lines) * col_bytes + (next % lines) * 64L, _MM_HINT_T1);
    }
  }
};

// Result tile T = 2 nt + mt covers the block's rows 16 mt.. and columns
// 16 nt.. (the tiles compute C^T: a tile row is a column of C).
constexpr int tile_nt(int t) { return t / 2; }
constexpr int tile_mt(int t) { return t % 2; }

// Tiles configured by the caller (block_config()). a: an A panel (kMr rows
// in pairs), b: a B panel (kNr columns), both kc packed steps deep, kc a
// multiple of 32; C's block m x n (edges: fewer than 32). An f32 C with
// alpha = 1, beta = 0 or 1, a whole block and no epilogue is stored (and,
// beta = 1, the driver's later k blocks, loaded first) by the tiles
// themselves; any other block is left in `pending` for its epilogue, after
// `pending`'s previous block has been written out between this block's tile
// instructions.
template <typename Tiles, typename C>
void tile_block(long kc, float alpha, const bf16 *a, const bf16 *b, float beta, C *c, long ldc, int m, int n,
                PendingBlock<C> &pending, const FusedEpilogue &fused = FusedEpilogue{}, const BTiles &bt = BTiles{},
                NextPanel *next_panel = nullptr) {
  const bool direct =
      std::is_same_v<C, float> && alpha == 1.0f && (beta == 0.0f || beta == 1.0f) && m == kMr && n == kNr && !fused.ep;
  const long cstride = ldc * long(sizeof(C));
  auto start = [&](auto t) {
    constexpr int T = decltype(t)::value;
    if (direct && beta == 1.0f) Tiles::template load<T>(c + 16 * tile_mt(T) + 16 * tile_nt(T) * ldc, cstride);
    else Tiles::template zero<T>();
  };
  // A block on the edge skips the tiles that hold no part of C.
  const bool m1 = m > 16, n1 = n > 16;
  start(std::integral_constant<int, 0>{});
  if (m1) start(std::integral_constant<int, 1>{});
  if (n1) start(std::integral_constant<int, 2>{});
  if (m1 && n1) start(std::integral_constant<int, 3>{});
  // The previous block's columns, spread evenly over this block's chunks.
  const long chunks = kc / kChunk;
  const int per_chunk = static_cast<int>((pending.n - pending.done + chunks - 1) / std::max(1L, chunks));
  int upto = pending.done;
  constexpr long a_stride = kMr * 2 * sizeof(bf16);  // one pair row: 128 bytes
  for (long p = 0; p < kc; p += kChunk) {
    const bf16 *bc = b + p * bt.chunk_step;  // chunk p / 32: [32 n][32 bf16], or B's columns at k = p
    const bf16 *ac = a + p * kMr;            // pair rows p / 2 .. p / 2 + 15
    // A's tiles with TILELOADDT1: the B panel is what the next blocks (the
    // macro-kernel's next A panels) read again, and A panel and B panel of
    // DiT's k = 384 together fill L1; A's lines evicting B's made both come
    // from L2 (bf16 2048 x 1152 x 384 on one thread, warm: 1.64-1.77 ms with
    // TILELOADD for both, 1.40-1.50 with this).
    Tiles::template load<kBTile0>(bc, bt.stride);
    Tiles::template load_once<kATile0>(ac, a_stride);
    Tiles::template dpbf16ps<0, kBTile0, kATile0>();
    if (m1) {
      Tiles::template load_once<kATile1>(ac + 2 * 16, a_stride);
      Tiles::template dpbf16ps<1, kBTile0, kATile1>();
    }
    if (n1) {
      Tiles::template load<kBTile1>(bc + bt.second, bt.stride);
      Tiles::template dpbf16ps<2, kBTile1, kATile0>();
      if (m1) Tiles::template dpbf16ps<3, kBTile1, kATile1>();
    }
    upto = std::min(pending.n, upto + per_chunk);
    pending.advance(upto);
    if (next_panel) next_panel->step();
  }
  pending.finish();
  if (direct) {
    Tiles::template store<0>(c, cstride);
    Tiles::template store<1>(c + 16, cstride);
    Tiles::template store<2>(c + 16 * ldc, cstride);
    Tiles::template store<3>(c + 16 + 16 * ldc, cstride);
    return;
  }
  constexpr long acc_stride = kMr * long(sizeof(float));  // a column of the block
  Tiles::template store<0>(pending.acc, acc_stride);
  if (m1) Tiles::template store<1>(pending.acc + 16, acc_stride);
  if (n1) Tiles::template store<2>(pending.acc + 16 * kMr, acc_stride);
  if (m1 && n1) Tiles::template store<3>(pending.acc + 16 + 16 * kMr, acc_stride);
  pending.hold(c, ldc, m, n, alpha, beta, fused);
}

// ---- what the driver calls

// The macro-kernel: the tiles are configured once for the whole block (a
// configuration costs as much as many tile instructions) and released at
// its end, so a thread holds tile state only while it computes.
//
// B in place (blk.b_packed null: reads_b_in_place said yes): each 32-column
// panel's tiles load op(B) = B's columns, k contiguous, straight from B
// (rows a column apart). That saves the packing pass over the product's
// largest operand (the activations, 2048 tokens and more, against a weight
// of a few hundred rows), whose copy also outgrew L2 before it was read.
template <typename Tiles, typename Ty>
void macro(const GemmKernel<Ty> &, const MacroBlock<Ty> &blk) {
  using C = typename Ty::c_type;
  const bool in_place = blk.b_packed == nullptr;
  const BTiles bt = in_place ? BTiles::in_place(blk.csb) : BTiles{};
  PendingBlock<C> pending;
  Tiles::configure(block_config());
  auto panel = [&](long jr) -> const bf16 * {
    if (in_place) {
      if constexpr (std::is_same_v<typename Ty::b_type, bf16>) return blk.b + jr * blk.csb;
      return nullptr;
    }
    return blk.b_packed + jr * blk.kc;
  };
  const long chunks = blk.kc / kChunk * ((blk.mc + kMr - 1) / kMr);  // chunks of one panel's pass
  for (long jr = blk.j0; jr < blk.j1; jr += kNr) {
    const int ncols = static_cast<int>(std::min<long>(kNr, blk.j1 - jr));
    const bf16 *bpanel = panel(jr);
    NextPanel next;
    if (jr + kNr < blk.j1 && panel(jr + kNr)) {
      const int cols = static_cast<int>(std::min<long>(kNr, blk.j1 - jr - kNr));
      next.base = reinterpret_cast<const char *>(panel(jr + kNr));
      if (in_place) {  // cols columns of kc bf16, a column of B apart
        next.col_bytes = blk.csb * long(sizeof(bf16));
        next.cols = cols;
        next.lines = static_cast<int>((blk.kc * long(sizeof(bf16)) + 63) / 64);
      } else {  // one contiguous panel of kc x 32
        next.cols = 1;
        next.lines = static_cast<int>(blk.kc * kNr * long(sizeof(bf16)) / 64);
      }
      next.per_chunk = static_cast<int>((long(next.cols) * next.lines + chunks - 1) / std::max(1L, chunks));
    }
    for (long ir = 0; ir < blk.mc; ir += kMr) {
      const int nrows = static_cast<int>(std::min<long>(kMr, blk.mc - ir));
      const FusedEpilogue fused{blk.epilogue, blk.i_origin + ir, blk.j_origin + jr};
      tile_block<Tiles>(blk.kc, blk.alpha, blk.a + ir * blk.kc, bpanel, blk.beta, blk.c + ir + jr * blk.ldc, blk.ldc,
                        nrows, ncols, pending, fused, bt, next.base ? &next : nullptr);
    }
  }
  pending.finish();
  Tiles::release();
}

// Whether the tiles can load op(B) in place: op(B) = B (a column of B is
// contiguous in k) of bf16 without splits, whole 32-step chunks of k (the
// driver's k blocks are then multiples of 32 too: part_blocks aligns them to
// k_align), and whole 32-column panels (no tile row past B's last column).
template <typename Ty>
bool reads_b_in_place(Trans tb, long n, long k) {
  return std::is_same_v<typename Ty::b_type, bf16> && Ty::splits == 1 && tb == Trans::N && k % kChunk == 0 &&
         n % kNr == 0;
}

// The microkernel contract (kernel.h) for a caller with its own loops: one
// block, configuring and releasing the tiles around it.
template <typename Tiles, typename Ty>
void edge(long kc, float alpha, const bf16 *a, const bf16 *b, float beta, typename Ty::c_type *c, long ldc, int m,
          int n) {
  PendingBlock<typename Ty::c_type> pending;
  Tiles::configure(block_config());
  tile_block<Tiles>(kc, alpha, a, b, beta, c, ldc, m, n, pending);
  pending.finish();
  Tiles::release();
}
template <typename Tiles, typename Ty>
void full(long kc, float alpha, const bf16 *a, const bf16 *b, float beta, typename Ty::c_type *c, long ldc) {
  edge<Tiles, Ty>(kc, alpha, a, b, beta, c, ldc, kMr, kNr);
}

template <typename Tiles, typename Ty>
constexpr GemmKernel<Ty> tile_kernel() {
  static_assert(std::is_same_v<typename Ty::packed_a_type, bf16> && std::is_same_v<typename Ty::acc_type, float>,
                "AMX-BF16: bf16 panels, f32 accumulation");
  return {
      .mr = kMr,
      .nr = kNr,
      .k_align = kChunk,
      .full = &full<Tiles, Ty>,
      .edge = &edge<Tiles, Ty>,
      .full_direct = nullptr,  // k is padded to tiles: the macro-kernel reads B in place itself
      .edge_direct = nullptr,
      .b_in_place = &reads_b_in_place<Ty>,
      .pack_a = &pack_a_tiles<typename Ty::a_type, Ty::splits>,
      .pack_b = &pack_b_tiles<typename Ty::b_type, Ty::splits>,
      .macro = &macro<Tiles, Ty>,
      .fuses_epilogue = true,
      // A tile unit's rate makes a small product's share on a second thread
      // shorter than the team's start and waits: attention's 256x256x64
      // (8.4 Mflop) took 37 us on 2 threads against 31 us on 1 (Xeon, AMX,
      // DiT-S/2's bf16 trace replay). 16 Mflop keeps such products on one.
      .min_flops_per_thread = 16'000'000,
      // Two units a thread, not the driver's four: each unit packs its own A
      // block, and four made the weight of DiT's products be packed twice
      // as often, in blocks half as tall. DiT-S/2's twelve bf16 products
      // (perf/torch2_gemm.py, 2 threads, caches flushed): 16.4 ms against
      // 17.3 summed over the shapes, the wheel's oneDNN 21.3 and 21.2.
      .units_per_thread = 2,
      .bf16_instructions = true,
  };
}

}  // namespace
}  // namespace hcops::kernels::amx
