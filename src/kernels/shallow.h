// Shallow products (k <= kShallowMaxK, kernel.h's ShallowKernel): C =
// alpha op(A) op(B) + beta C where every element of C is a sum of at most
// 16 products. Such a product writes far more than it computes (DiT's
// adaLN weight gradient, 384 x 2304 x 8: the batch is k); the packed path
// pads k to the tile's depth (32 on AMX), packs both operands and stores C
// a tile at a time through a scratch block: 0.42 ms a call in a bf16 DiT-S/2
// step (Xeon, AMX, 2 threads), against 0.06 ms to write C at the triad
// bandwidth.
//
// Here C is written from registers, 4 columns at a time down a panel of
// up to kPanelRows rows, in blocks of two vectors of rows (32 on AVX-512,
// 16 on AVX2): op(A)'s K columns of the block are loaded as 2 K f32
// vectors, each as its step of k comes (AVX2's 16 registers hold the 8
// sums and not 2 K vectors besides); op(B)'s values, converted to f32 a
// chunk of columns at a time into an L1 buffer, are broadcast against them
// (8 independent accumulator chains of K steps). Each column of C is thus
// written in one run of the panel's rows (sweeping a block's 32 rows
// across 128 columns instead wrote 128 runs of two lines at once: 12 GB/s
// on Zen 5, a third of a store loop's rate). Inputs of bf16 are widened
// (exact), the sums are f32 as in every kernel, and a bf16 C is rounded
// once, to nearest even as dtype.h (W::store_bf16). No padding ever meets
// the data: rows past m are masked, and k is the template's K exactly.
//
// Whole blocks are stored without masks (a masked store is the slower on
// AMD Zen 4/5). With `stream` (the driver's choice: beta = 0, no epilogue
// to read C back, C too large for the writers' L2 caches, and its columns
// on 64-byte lines) they are stored non-temporally (a block at an address
// off a line, which the driver never gives, is stored as usual rather than
// fault): a line written whole need not be read first, which halves the
// memory traffic of a product that is nothing but its writes. Together,
// on DiT's adaLN weight gradients (Zen 5, one thread, caches cold):
// 384 x 2304 x 8 from 0.28 to 0.12 ms and 1152 x 6912 x 2 from 2.3 to
// 0.96 ms (a plain store loop over the same C: 0.11 and 1.1 ms). The
// stores are fenced before the kernel returns, so C is complete for
// whoever the driver's barrier releases.
//
// W: a vector-traits type (kernels/avx512/vec.h's F32, 16 lanes;
// kernels/avx2/vec.h's F32, 8 lanes), with stream and stream_fence.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "common/dtype.h"
#include "kernels/kernel.h"
#include "kernels/vec_io.h"

// GCC 12 warns inside its own masked-load intrinsics (their undefined
// operand, GCC bug 105593) once inlined here; nothing is uninitialised.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

// In an anonymous namespace, as pack.h: every family that includes this
// gets its own copy, compiled with its own flags.
namespace hcops {
namespace kernels {
namespace shallow {
namespace {

// Rows of C per block: two vectors.
template <typename W>
constexpr int kBlockRows = 2 * W::lanes;
constexpr int kCols = 128;        // columns of op(B) converted at a time (8 KiB at K = 16)
constexpr long kPanelRows = 256;  // rows of C a pass down its columns takes (op(A)'s: 16 KiB at K = 16, on the stack)

using vec_io::load_v;
using vec_io::store_v;

// A whole block's rows (r0 the first vector, r1 the next) at p: streamed
// where `stream` and p is on a line (a block of whole lines: f32 on
// AVX-512 and AVX2, bf16 on AVX-512) or on half of one (bf16 on AVX2: the
// column's next block in sweep's walk down the panel fills the line's
// other half, after the same block of the group's other three columns, so
// four lines are partly written at a time; where a panel ends on an odd
// block, the half after it is the masked tail's ordinary stores), else
// stored as usual. The driver streams only a C whose columns start on
// lines, so every whole block of such a column is streamed.
template <typename W, typename C>
constexpr uintptr_t block_alignment() {
  constexpr uintptr_t bytes = kBlockRows<W> * sizeof(C);
  static_assert(bytes % 64 == 0 || 64 % bytes == 0, "a block is whole lines or a whole part of one");
  return bytes < 64 ? bytes : 64;
}
template <typename W>
inline void store_block(float *p, typename W::V r0, typename W::V r1, bool stream) {
  if (stream && (reinterpret_cast<uintptr_t>(p) & (block_alignment<W, float>() - 1)) == 0) {
    W::stream(p, r0);
    W::stream(p + W::lanes, r1);
  } else {
    W::storeu(p, r0);
    W::storeu(p + W::lanes, r1);
  }
}
template <typename W>
inline void store_block(bf16 *p, typename W::V r0, typename W::V r1, bool stream) {
  auto *u = reinterpret_cast<uint16_t *>(p);
  if (stream && (reinterpret_cast<uintptr_t>(p) & (block_alignment<W, bf16>() - 1)) == 0) {
    W::stream_bf16(u, r0, r1);
  } else {
    W::store_bf16(u, r0);
    W::store_bf16(u + W::lanes, r1);
  }
}

// count contiguous values from src to dst as f32, a vector at a time (the
// panels of op(A) and chunks of op(B) a product converts are contiguous
// this way in the common layouts; one value at a time these conversions
// took a fifth of a bf16 product's time).
template <typename W, typename T>
inline void widen(const T *__restrict src, float *__restrict dst, long count) {
  long i = 0;
  for (; i + W::lanes <= count; i += W::lanes) W::storeu(dst + i, load_v<W>(src + i));
  for (; i < count; ++i) dst[i] = float(src[i]);
}

// NC columns of C's block from op(A)'s block (column p at col + p * ld)
// and op(B)'s columns at bcol (op(B)(p, j) at bcol[p * kCols + j]). Full:
// all the block's rows, no masks; otherwise rows under masks m0, m1.
template <typename W, int K, int NC, bool Full, typename C>
__attribute__((always_inline)) inline void columns(const float *__restrict col, long ld, const float *__restrict bcol,
                                                   float alpha, float beta, C *__restrict c, long ldc,
                                                   typename W::Mask m0, typename W::Mask m1, bool stream) {
  typename W::V acc0[NC], acc1[NC];
#pragma GCC unroll 4
  for (int q = 0; q < NC; ++q) acc0[q] = acc1[q] = W::zero();
#pragma GCC unroll 16
  for (int p = 0; p < K; ++p) {
    const auto a0 = Full ? load_v<W>(col + p * ld) : load_v<W>(col + p * ld, m0);
    const auto a1 = Full ? load_v<W>(col + p * ld + W::lanes) : load_v<W>(col + p * ld + W::lanes, m1);
#pragma GCC unroll 4
    for (int q = 0; q < NC; ++q) {
      const auto bq = W::set1(bcol[p * kCols + q]);
      acc0[q] = W::fmadd(a0, bq, acc0[q]);
      acc1[q] = W::fmadd(a1, bq, acc1[q]);
    }
  }
  const auto va = W::set1(alpha), vb = W::set1(beta);
#pragma GCC unroll 4
  for (int q = 0; q < NC; ++q) {
    C *cq = c + q * ldc;
    auto r0 = W::mul(va, acc0[q]), r1 = W::mul(va, acc1[q]);
    if (beta != 0.0f) {  // beta = 0 never reads C
      r0 = W::fmadd(vb, Full ? load_v<W>(cq) : load_v<W>(cq, m0), r0);
      r1 = W::fmadd(vb, Full ? load_v<W>(cq + W::lanes) : load_v<W>(cq + W::lanes, m1), r1);
    }
    if (Full) {
      store_block<W>(cq, r0, r1, stream);
    } else {
      store_v<W>(cq, r0, m0);
      store_v<W>(cq + W::lanes, r1, m1);
    }
  }
}

// The loops of a shallow product, shared with avx512_bf16/shallow_bf16.h:
// C in panels of kPanelRows rows and op(B) in chunks of kCols columns, each
// chunk 4 columns (then 1) at a time down the panel's blocks of kBlockRows<W> rows,
// whole blocks then the masked tail. `kern` prepares a panel of op(A)
// (kern.panel(r0, rows)) and a chunk of op(B) (kern.chunk(j0, nc)), and
// computes NC columns of one block (kern.template block<NC, Full>(i0, jj,
// c, ldc, m0, m1, stream): i0 the block's first row in the panel, jj its
// first column in the chunk, c its first element of C).
template <typename W, typename Kern, typename C>
void sweep(Kern &kern, long m, long n, C *c, long ldc, bool stream) {
  constexpr int kRows = kBlockRows<W>;
  static_assert(kPanelRows % kRows == 0, "a panel is whole blocks");
  for (long r0 = 0; r0 < m; r0 += kPanelRows) {
    const long rows = std::min<long>(kPanelRows, m - r0);
    kern.panel(r0, rows);
    const long full_rows = rows / kRows * kRows;
    const int tail = static_cast<int>(rows - full_rows);
    const typename W::Mask m0 = W::mask(std::min(tail, W::lanes)), m1 = W::mask(std::max(tail - W::lanes, 0));
    const typename W::Mask all = W::mask(W::lanes);
    for (long j0 = 0; j0 < n; j0 += kCols) {
      const long nc = std::min<long>(kCols, n - j0);
      kern.chunk(j0, nc);
      const auto columns = [&](auto width, long jj) {
        constexpr int NC = decltype(width)::value;
        C *cj = c + r0 + (j0 + jj) * ldc;
        for (long i0 = 0; i0 < full_rows; i0 += kRows)
          kern.template block<NC, true>(i0, jj, cj + i0, ldc, all, all, stream);
        if (tail) kern.template block<NC, false>(full_rows, jj, cj + full_rows, ldc, m0, m1, false);
      };
      long jj = 0;
      for (; jj + 4 <= nc; jj += 4) columns(std::integral_constant<int, 4>{}, jj);
      for (; jj < nc; ++jj) columns(std::integral_constant<int, 1>{}, jj);
    }
  }
  if (stream) W::stream_fence();
}

// f(std::integral_constant<int, k>) for k in [1, kShallowMaxK]: a
// kernel's depth as a constant (its K steps held in registers).
template <typename F>
void with_depth(long k, F &&f) {
  switch (k) {
#define HCOPS_SHALLOW_K(K) \
  case K: return f(std::integral_constant<int, K>{});
    HCOPS_SHALLOW_K(1)
    HCOPS_SHALLOW_K(2)
    HCOPS_SHALLOW_K(3)
    HCOPS_SHALLOW_K(4)
    HCOPS_SHALLOW_K(5)
    HCOPS_SHALLOW_K(6)
    HCOPS_SHALLOW_K(7)
    HCOPS_SHALLOW_K(8)
    HCOPS_SHALLOW_K(9)
    HCOPS_SHALLOW_K(10)
    HCOPS_SHALLOW_K(11)
    HCOPS_SHALLOW_K(12)
    HCOPS_SHALLOW_K(13)
    HCOPS_SHALLOW_K(14)
    HCOPS_SHALLOW_K(15)
    HCOPS_SHALLOW_K(16)
#undef HCOPS_SHALLOW_K
    default: break;  // the driver never calls with k outside [1, kShallowMaxK]
  }
}
static_assert(kShallowMaxK == 16, "one case per k");

// This kernel's panels and blocks (sweep's Kern): op(A)'s panel as f32,
// column-major (kPanelRows rows apart), gathered when op(A) = A^T (its rows
// are contiguous in k), widened when bf16 (once per panel, not once per
// group of 4 columns); an f32 op(A) = A is read in place. op(B)'s chunk
// widened to f32, op(B)(p, j0 + jj) at p * kCols + jj.
template <typename W, int K, typename A, typename B>
struct WidenedPanels {
  Trans ta, tb;
  const A *a;
  long lda;
  const B *b;
  long ldb;
  float alpha, beta;
  // Written by panel() and chunk() before any read. Not zeroed: brace
  // initialization of the aggregate had value-initialized them, a memset
  // of (256 + 128) K floats (24 KiB at K = 16) on every call.
  alignas(64) float abuf[K * kPanelRows];
  alignas(64) float bbuf[K * kCols];
  const float *col = abuf;
  long ld = kPanelRows;

  WidenedPanels(Trans ta_, Trans tb_, const A *a_, long lda_, const B *b_, long ldb_, float alpha_, float beta_)
      : ta(ta_), tb(tb_), a(a_), lda(lda_), b(b_), ldb(ldb_), alpha(alpha_), beta(beta_) {}

  void panel(long r0, long rows) {
    col = abuf;
    ld = kPanelRows;
    if constexpr (std::is_same_v<A, float>) {
      if (ta == Trans::N) {
        col = a + r0;  // column p of the panel at col + p * lda
        ld = lda;
        return;
      }
    }
    for (int p = 0; p < K; ++p) {
      if (ta == Trans::N) widen<W>(a + r0 + p * lda, abuf + p * kPanelRows, rows);
      else
        for (long r = 0; r < rows; ++r) abuf[p * kPanelRows + r] = float(a[p + (r0 + r) * lda]);
    }
  }
  void chunk(long j0, long nc) {
    for (int p = 0; p < K; ++p) {
      if (tb == Trans::T) widen<W>(b + j0 + p * ldb, bbuf + p * kCols, nc);
      else
        for (long jj = 0; jj < nc; ++jj) bbuf[p * kCols + jj] = float(b[p + (j0 + jj) * ldb]);
    }
  }
  template <int NC, bool Full, typename C>
  void block(long i0, long jj, C *c, long ldc, typename W::Mask m0, typename W::Mask m1, bool stream) {
    columns<W, K, NC, Full>(col + i0, ld, bbuf + jj, alpha, beta, c, ldc, m0, m1, stream);
  }
};

// The ShallowKernel entry point (kernel.h): K = k as a constant.
template <typename W, typename A, typename B, typename C>
void kernel(Trans ta, Trans tb, long m, long n, long k, float alpha, const A *a, long lda, const B *b, long ldb,
            float beta, C *c, long ldc, bool stream) {
  with_depth(k, [&](auto depth) {
    WidenedPanels<W, decltype(depth)::value, A, B> kern{ta, tb, a, lda, b, ldb, alpha, beta};
    sweep<W>(kern, m, n, c, ldc, stream);
  });
}

// A family's GemmKernel for f32 accumulation with this shallow kernel.
template <typename Ty, typename W>
constexpr GemmKernel<Ty> with_shallow(GemmKernel<Ty> k) {
  k.shallow = &kernel<W, typename Ty::a_type, typename Ty::b_type, typename Ty::c_type>;
  return k;
}

}  // namespace
}  // namespace shallow
}  // namespace kernels
}  // namespace hcops

#pragma GCC diagnostic pop
