// Skinny products (n <= kSkinnyMaxN columns of C, kernel.h's SkinnyKernel):
// C = alpha op(A) op(B) + beta C with op(A) read in place, once. Such a
// product does 2n flops per element of A, so it is bound by streaming A
// from memory (DiT's adaLN Linear: a 2304 x 384 weight against a batch of
// 8); packing A would read it, write a copy and read that again, and the
// microkernel's 12-column tile would be mostly padding.
//
// op(B) is contiguous in k (kernel.h's SkinnyKernel: the driver copies it
// otherwise, n x k elements). op(A) = A (ta = N): C's rows in blocks of
// three vectors, in panels, k in chunks (n_rows), NB <= 8 columns (4 on
// AVX2) at a time; each k step loads a column of the block and broadcasts
// op(B)'s NB values. op(A) = A^T: op(A)'s rows are contiguous in k, so R =
// 4 rows (3 on AVX2) by NB <= 4 columns are dot products along k,
// vectorised over k and summed across lanes at the end.
//
// W is a vector-traits type as in simd_tile.h, plus reduce_add and
// `registers`, the vector registers the family has: the blocks are sized to
// keep their sums in them (AVX-512's 32, AVX2's 16). The sums are of W's
// type T; A and B are stored as T, or as bf16 (E below), widened exactly as
// they are loaded (the AVX2 family's bf16 GEMMs; the bf16 families have
// their own kernel, avx512_bf16/skinny_bf16.h), and C as T or bf16, rounded
// once from the whole sum.
#pragma once

#include <xmmintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "common/dtype.h"
#include "kernels/kernel.h"
#include "kernels/vec_io.h"
#include "kernels/skinny_panels.h"

// GCC 12 warns that the undefined vector inside _mm512_reduce_add_ps/pd's
// shuffles "may be used uninitialized" once inlined here: a false positive
// (the instruction overwrites it), silenced for this header only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace hcops {
namespace kernels {
namespace skinny {
// In an anonymous namespace, as pack.h and shallow.h: the avx512 and avx2
// families include this with their own -m flags, and each must get its own
// copy of any function emitted out of line, not one the linker picked.
namespace {

using vec_io::load_v;
using vec_io::store_v;

// op(A) = A: C's rows go in panels of RB = 3 vectors per block, k in chunks
// of kChunkSteps. A panel's sums stay in an L1 buffer (PanelSums) across
// the chunks and each chunk is worked through one block at a time, so that
// a chunk's part of A (kChunkSteps columns of the panel's rows) is read from
// memory once, each column's rows in one run. Walking each block over the
// whole of k instead read 3 lines of every column, lda apart, one after
// another: a stride the hardware prefetchers follow poorly. The sums are
// taken in the same order either way (each row's along k), so the bits
// are the same.
//
// A panel is as many blocks as 16 KiB of sums (skinny_panels.h) hold for
// the n columns (f32 rows at n = 8: 480 on AVX-512, 504 on AVX2; at n = 2:
// 2016 and 2040; at most 2048),
// and the driver gives a thread pieces of 512 rows or more where there are
// rows for them (gemm.cpp), as the bf16 kernel's (avx512_bf16/skinny_bf16.h).
//
// Where it pays: A whose columns do not start on a cache line (malloc's
// 16-byte alignment through BLAS, a view at an offset), where a block's
// three vectors straddle four lines, one shared with the next block. DiT-
// XL/2's adaLN input gradient (NN 1152 x 2 x 6912, sgemm_, caches flushed,
// 2 threads of a Zen 5), A 16 bytes past a line: 1.27-1.69 ms walking each
// block over k, 0.84-0.87 ms in panels (1152 x 8: 1.44-1.70 -> 1.12-1.30).
// With A on a line, as PyTorch allocates it: level (0.59-0.83 ms either
// way as the guest's speed moved, panels 1-5 % ahead in each run).
// Prefetching the next chunk into L2 as well as or instead of the rows 16
// steps ahead into L1 lost up to 15 % on the aligned products there.
using skinny_panels::kChunkSteps;
// How far ahead (in k steps) the ta = N loop prefetches op(A)'s columns
// into L1: they are lda apart, a stride the hardware prefetchers follow
// poorly. Near a chunk's end these are the next chunk's same rows, a
// whole panel's walk later. AVX-512; AVX2 below.
constexpr long kPrefetchSteps = 16;
// On AVX2 the first pass over a block's chunk prefetches, for each step,
// that column of the walk's next chunk call (skinny_panels::for_each_panel:
// the panel's next block, or the next chunk's first) instead: a whole
// block's chunk ahead (f32 and f64 alike 6 KiB, 64 columns of 96 bytes;
// bf16 3 KiB), where 16 steps of the same block fetched each chunk's first
// 16 columns a whole panel's walk earlier, long evicted by then. Later
// passes read the block's chunk from L1 (their prefetches are of the lines
// they load). Zen 3, 1 thread, DiT-
// S/2's adaLN input gradient as BLAS sees it (NN 2304 x 8 x 384, A in L3,
// hcops-replay): f64 15.5-16.6 -> 17.4-18.9 GFLOPS, f32 48-51 -> 53-56
// (OpenBLAS 19.7-21.7 and 46-51). AVX-512's block chunk is 12 KiB (f32) and
// its families were not measured with it: they keep 16 steps ahead.
template <typename W>
constexpr bool kPrefetchNextBlock = W::registers < 32;
// How far ahead (in rows of op(A)) the ta = T loop prefetches: a row of
// DiT's k = 384 is only 24 lines, too short a stream for the prefetchers to
// be ahead of (TN 2304x8x384 from memory, 1 thread: 15-22 GFLOPS without,
// 29-35 with; 4 and 16 rows ahead were within that noise).
constexpr long kPrefetchRows = 8;

// Columns of C an op(A) = A pass keeps in registers: 3 vectors of sums
// each, beside the block's 3 vectors of A and a broadcast of op(B) (8: 28
// of AVX-512's 32 registers; 4: all 16 of AVX2's, where 8 would need 28).
template <typename W>
constexpr int kNPassColumns = W::registers >= 32 ? 8 : 4;
// An op(A) = A^T block: R rows of op(A) by kTBlockColumns of op(B), R x 4
// sums, 4 vectors of op(B) and one of A in registers: 4 x 4 on AVX-512 (21
// of 32 registers); 3 x 4 on AVX2 for f32 and f64 (17 of 16: GCC takes an
// op(B) vector from L1 as an FMA's memory operand). On Zen 3 (1 thread,
// DiT's 2304 x 8 x 384 with A^T, A in L3, the loops alone without the
// prefetch): 3 x 4 79 GFLOPS, 4 x 3 67, 4 x 2 64, 2 x 4 67. With 3 x 4, n =
// 8 is two passes over each row rather than three or four, with 12
// independent FMA chains. bf16 on AVX2 takes 2 x 4: its op(B) vectors must
// be widened into registers, and at 3 x 4 a sum went through the stack every
// step (the same product through the dispatcher, 2 threads: 0.24-0.25 ms at
// 3 x 4, 0.21 ms at 2 x 4).
template <typename W, typename T, typename E>
constexpr int kTBlockRows = W::registers >= 32 ? 4 : sizeof(E) == sizeof(T) ? 3 : 2;
constexpr int kTBlockColumns = 4;

template <typename T, typename E>
inline T widen(E x) {
  return static_cast<T>(x);  // bf16: exact
}
template <typename E, typename T>
inline E narrow(T x) {
  return static_cast<E>(x);  // bf16: to nearest even (dtype.h)
}

// Prefetches the `bytes` bytes at p: every line they touch.
inline void prefetch_span(const void *p, long bytes) {
  const char *c = static_cast<const char *>(p);
  for (long o = 0; o < bytes; o += 64) _mm_prefetch(c + o, _MM_HINT_T0);
  if (bytes % 64 != 0 || (reinterpret_cast<uintptr_t>(c) & 63) != 0) _mm_prefetch(c + bytes - 1, _MM_HINT_T0);
}

template <typename W, typename T>
struct PanelSums {
  static constexpr long kRows = 3 * W::lanes;  // a block's rows
  alignas(64) T v[skinny_panels::kPanelSumBytes / long(sizeof(T))];
  // Rows a panel holds for n columns: whole blocks.
  static long panel_rows(long n) { return skinny_panels::panel_rows(n, kRows, kRows * long(sizeof(T))); }
  // Block rb's sums: column j's three vectors at [j * kRows, (j + 1) * kRows).
  T *block(long rb, long n) { return v + rb * n * kRows; }
};

// kc steps of k for one block of C's rows [0, rows) (rows <= 3 lanes) and NB
// columns, added to the block's sums (column j at sums + j * 3 lanes); each
// step prefetches its column's rows `ahead` elements on.
template <typename W, typename T, typename E, int NB, bool kFull>
__attribute__((always_inline)) inline void n_chunk(long kc, const E *__restrict a, long lda, const E *__restrict b,
                                                   long csb, T *__restrict sums, int rows, long ahead) {
  constexpr int L = W::lanes;
  const typename W::Mask m0 = W::mask(std::clamp(rows, 0, L)), m1 = W::mask(std::clamp(rows - L, 0, L)),
                         m2 = W::mask(std::clamp(rows - 2 * L, 0, L));
  typename W::V c0[NB], c1[NB], c2[NB];
#pragma GCC unroll 8
  for (int j = 0; j < NB; ++j) {
    c0[j] = W::load(sums + j * 3 * L);
    c1[j] = W::load(sums + j * 3 * L + L);
    c2[j] = W::load(sums + j * 3 * L + 2 * L);
  }
  for (long p = 0; p < kc; ++p, a += lda, ++b) {
    if constexpr (sizeof(E) == sizeof(T)) {
      _mm_prefetch(reinterpret_cast<const char *>(a + ahead), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char *>(a + ahead + L), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char *>(a + ahead + 2 * L), _MM_HINT_T0);
    } else {
      prefetch_span(a + ahead, 3 * L * long(sizeof(E)));
    }
    const auto a0 = kFull ? load_v<W>(a) : load_v<W>(a, m0);
    const auto a1 = kFull ? load_v<W>(a + L) : load_v<W>(a + L, m1);
    const auto a2 = kFull ? load_v<W>(a + 2 * L) : load_v<W>(a + 2 * L, m2);
#pragma GCC unroll 8
    for (int j = 0; j < NB; ++j) {
      const auto bj = W::set1(widen<T>(b[j * csb]));
      c0[j] = W::fmadd(a0, bj, c0[j]);
      c1[j] = W::fmadd(a1, bj, c1[j]);
      c2[j] = W::fmadd(a2, bj, c2[j]);
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < NB; ++j) {
    W::storeu(sums + j * 3 * L, c0[j]);
    W::storeu(sums + j * 3 * L + L, c1[j]);
    W::storeu(sums + j * 3 * L + 2 * L, c2[j]);
  }
}

// All n columns of one chunk for one block; next: where the walk's next
// chunk call starts (nullptr after the last).
template <typename W, typename T, typename E, bool kFull>
void n_chunk_columns(long kc, long n, const E *a, long lda, const E *b, long csb, T *sums, int rows, const E *next) {
  constexpr long RB = 3 * W::lanes;
  skinny_panels::column_passes<kNPassColumns<W>>(n, [&](auto nb, long j) {
    const long ahead = !kPrefetchNextBlock<W> ? kPrefetchSteps * lda : j == 0 && next ? next - a : 0;
    n_chunk<W, T, E, decltype(nb)::value, kFull>(kc, a, lda, b + j * csb, csb, sums + j * RB, rows, ahead);
  });
}

// C = alpha * sums + beta * C for one block's rows [0, rows) and n columns.
template <typename W, typename T, typename C>
void n_store(long n, const T *sums, T alpha, T beta, C *c, long ldc, int rows) {
  constexpr int L = W::lanes;
  const typename W::Mask m[3] = {W::mask(std::clamp(rows, 0, L)), W::mask(std::clamp(rows - L, 0, L)),
                                 W::mask(std::clamp(rows - 2 * L, 0, L))};
  const auto va = W::set1(alpha), vb = W::set1(beta);
  const int vectors = (rows + L - 1) / L;  // a block's vectors past its rows hold nothing to store
  for (long j = 0; j < n; ++j) {
    C *cj = c + j * ldc;
#pragma GCC unroll 3
    for (int v = 0; v < vectors; ++v) {
      auto r = W::mul(va, W::load(sums + (j * 3 + v) * L));
      if (rows >= 3 * L) {
        if (beta != T(0)) r = W::fmadd(vb, load_v<W>(cj + v * L), r);  // beta = 0 never reads C
        store_v<W>(cj + v * L, r);
      } else {
        if (beta != T(0)) r = W::fmadd(vb, load_v<W>(cj + v * L, m[v]), r);
        store_v<W>(cj + v * L, r, m[v]);
      }
    }
  }
}

// R rows of op(A) = A^T (each contiguous in k, lda apart) by NB columns of
// op(B) (contiguous in k, csb apart).
template <typename W, typename T, typename E, typename C, int R, int NB>
__attribute__((always_inline)) inline void t_block(long k, T alpha, const E *__restrict a, long lda,
                                                   const E *__restrict b, long csb, T beta, C *__restrict c,
                                                   long ldc) {
  constexpr int L = W::lanes;
  typename W::V acc[R][NB];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) acc[r][j] = W::zero();
  long p = 0;
  for (; p + L <= k; p += L) {
    typename W::V bv[NB];
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) bv[j] = load_v<W>(b + j * csb + p);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      _mm_prefetch(reinterpret_cast<const char *>(a + (r + kPrefetchRows) * lda + p), _MM_HINT_T0);
      const auto ar = load_v<W>(a + r * lda + p);
#pragma GCC unroll 4
      for (int j = 0; j < NB; ++j) acc[r][j] = W::fmadd(ar, bv[j], acc[r][j]);
    }
  }
  if (p < k) {  // masked lanes are zero and never read (no fault past the end)
    const typename W::Mask m = W::mask(static_cast<int>(k - p));
    typename W::V bv[NB];
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) bv[j] = load_v<W>(b + j * csb + p, m);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const auto ar = load_v<W>(a + r * lda + p, m);
#pragma GCC unroll 4
      for (int j = 0; j < NB; ++j) acc[r][j] = W::fmadd(ar, bv[j], acc[r][j]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) {
      C &cij = c[r + j * ldc];
      // One fused step, written out: left to -ffp-contract, GCC fused
      // s + beta C either way round by the element's place in the block,
      // so the same element rounded differently in blocks of other widths.
      const T s = alpha * W::reduce_add(acc[r][j]);
      cij = narrow<C>(beta == T(0) ? s : std::fma(beta, widen<T>(cij), s));
    }
}

// Rows [0, m) by columns [0, n) with op(A) = A: panels, chunks of k, then
// C written from each panel's sums.
template <typename W, typename T, typename E, typename C>
void n_rows(long m, long n, long k, T alpha, const E *a, long lda, const E *b, long csb, T beta, C *c, long ldc) {
  using Sums = PanelSums<W, T>;
  constexpr long RB = Sums::kRows;
  Sums sums;
  skinny_panels::for_each_panel(
      m, k, RB, Sums::panel_rows(n), [&](long blocks) { std::fill(sums.v, sums.v + blocks * n * RB, T(0)); },
      [&](long rb, long i, long rows, long p0, long kc, long next_i, long next_p0) {
        const E *ab = a + i + p0 * lda;
        const E *next = next_i >= 0 ? a + next_i + next_p0 * lda : nullptr;
        if (rows == RB) n_chunk_columns<W, T, E, true>(kc, n, ab, lda, b + p0, csb, sums.block(rb, n), RB, next);
        else
          n_chunk_columns<W, T, E, false>(kc, n, ab, lda, b + p0, csb, sums.block(rb, n), static_cast<int>(rows), next);
      },
      [&](long rb, long i, long rows) {
        n_store<W, T, C>(n, sums.block(rb, n), alpha, beta, c + i, ldc, static_cast<int>(rows));
      });
}

// Rows [0, m) of op(A) = A^T: groups of kTBlockRows rows, then the rest one
// at a time; columns in groups of kTBlockColumns, then the rest (1 to 3) in
// one block, so that a row is read once for them, with R x (n % 4)
// independent sums. One column at a time read each row again per column
// and ran R chains of FMAs, fewer than the FMA units' latency hides. Zen
// 3, 1 thread, hcops-replay, 4 alternated runs (A in L3 or memory): DiT-
// XL/2's adaLN forward at batch 2 as BLAS sees it (TN 6912 x 2 x 1152) f32
// 16.0-20.1 -> 21.0-28.1 GFLOPS, f64 6.2-7.8 -> 9.8-11.6 (BLIS 16.4-23.0
// and 6.8-8.1); TN 2304 x 3 x 384 f32 23-35 -> 40-62, f64 11-14 -> 18-24.
// Each sum takes the same steps either way, and C's update is one explicit
// fused step (t_block): the same bits whatever the block's width.
template <typename W, typename T, typename E, typename C, int R>
void t_rows_of(long k, long n, T alpha, const E *a, long lda, const E *b, long csb, T beta, C *c, long ldc) {
  constexpr int NB = kTBlockColumns;
  static_assert(NB == 4, "the rest below is 1 to 3 columns");
  long j = 0;
  for (; j + NB <= n; j += NB) t_block<W, T, E, C, R, NB>(k, alpha, a, lda, b + j * csb, csb, beta, c + j * ldc, ldc);
  switch (n - j) {
    case 3: t_block<W, T, E, C, R, 3>(k, alpha, a, lda, b + j * csb, csb, beta, c + j * ldc, ldc); break;
    case 2: t_block<W, T, E, C, R, 2>(k, alpha, a, lda, b + j * csb, csb, beta, c + j * ldc, ldc); break;
    case 1: t_block<W, T, E, C, R, 1>(k, alpha, a, lda, b + j * csb, csb, beta, c + j * ldc, ldc); break;
    default: break;
  }
}

template <typename W, typename T, typename E, typename C>
void t_rows(long m, long n, long k, T alpha, const E *a, long lda, const E *b, long csb, T beta, C *c, long ldc) {
  constexpr int R = kTBlockRows<W, T, E>;
  long i = 0;
  for (; i + R <= m; i += R) t_rows_of<W, T, E, C, R>(k, n, alpha, a + i * lda, lda, b, csb, beta, c + i, ldc);
  for (; i < m; ++i) t_rows_of<W, T, E, C, 1>(k, n, alpha, a + i * lda, lda, b, csb, beta, c + i, ldc);
}

// The SkinnyKernel entry point (kernel.h) for traits W: sums of T, A and B
// stored as E, C as C.
template <typename W, typename T, typename E = T, typename C = T>
void kernel(Trans ta, long m, long n, long k, T alpha, const E *a, long lda, const E *b, long csb, T beta, C *c,
            long ldc) {
  if (ta == Trans::N) n_rows<W, T, E, C>(m, n, k, alpha, a, lda, b, csb, beta, c, ldc);
  else t_rows<W, T, E, C>(m, n, k, alpha, a, lda, b, csb, beta, c, ldc);
}

}  // namespace
}  // namespace skinny
}  // namespace kernels
}  // namespace hcops

#pragma GCC diagnostic pop
