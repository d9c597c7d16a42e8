// Packing op(A) and op(B) blocks into the panel layouts of kernels/kernel.h,
// zero-padding partial panels so the microkernel never sees an edge. Included
// by each kernel family's source and compiled with its ISA flags; the
// anonymous namespace gives every family its own copy, so the linker can
// never substitute an AVX-512 build of these templates on the generic path.
#pragma once

#include <algorithm>

#include "kernels/gemm_types.h"

namespace hcops {
namespace {

// dst[p * width + r] = src[r * ld + p] for r < rows, zero for rows <= r < width:
// `rows` contiguous vectors of length kc interleaved into a panel. Eight p at a
// time per row keeps every source line in L1 between visits and the writes
// within a few lines (2.5-2.8x faster than row by row, measured on Zen 4).
template <typename T>
void interleave_rows(T *dst, const T *src, long ld, long kc, long rows, int width) {
  long p = 0;
  for (; p + 8 <= kc; p += 8) {
    for (long r = 0; r < rows; ++r) {
      const T *s = src + r * ld + p;
#pragma GCC unroll 8
      for (int q = 0; q < 8; ++q) dst[(p + q) * width + r] = s[q];
    }
  }
  for (; p < kc; ++p)
    for (long r = 0; r < rows; ++r) dst[p * width + r] = src[r * ld + p];
  for (long r = rows; r < width; ++r)
    for (long q = 0; q < kc; ++q) dst[q * width + r] = T(0);
}

// dst[p * W + r] = src[p * ld + r] for r < count, zero for count <= r < W.
// A partial panel's steps are zeroed whole, then their count copied:
// zeroing W - count values one at a time from `count` was a tenth of a 17^3
// sgemm_ (one padded panel of 1 row); from 0 the zeroing is whole vectors
// (a memset where W is known only at run time). A full panel is a copy.
template <typename T>
inline void copy_panel_width(T *__restrict dst, const T *__restrict src, long ld, long kc, long count, int W) {
  const bool partial = count < W;
  for (long p = 0; p < kc; ++p, src += ld) {
    T *d = dst + p * W;
    if (partial)
#pragma GCC unroll 64
      for (int r = 0; r < W; ++r) d[r] = T(0);
    for (long r = 0; r < count; ++r) d[r] = src[r];
  }
}

// dst[p * W + r] = src[p * ld + r] for r < count, zero for count <= r < W:
// kc vectors already in panel order, W wide. A full panel is a constant-length
// copy the compiler turns into whole vector moves.
template <typename T, int W>
void copy_panel(T *__restrict dst, const T *__restrict src, long ld, long kc, long count) {
  if (count == W) {
    for (long p = 0; p < kc; ++p, src += ld)
#pragma GCC unroll 64
      for (int r = 0; r < W; ++r) dst[p * W + r] = src[r];
    return;
  }
  copy_panel_width(dst, src, ld, kc, count, W);  // a partial panel: op(A)'s last rows, op(B)'s last columns
}

// A family may supply a faster transposing copy for A, with interleave_rows'
// contract.
template <typename T>
using Interleave = void (*)(T *dst, const T *src, long ld, long kc, long rows, int width);

// op(A)[i0 : i0+mc, p0 : p0+kc] -> ceil(mc/MR) panels of kc x MR.
template <typename T, int MR, Interleave<T> interleave = interleave_rows<T>>
void pack_a(T *__restrict dst, const T *__restrict a, long lda, Trans ta, long i0, long mc, long p0, long kc) {
  for (long ir = 0; ir < mc; ir += MR, dst += MR * kc) {
    const long rows = std::min<long>(MR, mc - ir);
    if (ta == Trans::N) copy_panel<T, MR>(dst, a + (i0 + ir) + p0 * lda, lda, kc, rows);
    else interleave(dst, a + p0 + (i0 + ir) * lda, lda, kc, rows, MR);
  }
}

// The same for a panel width known only at run time (mr = a multiple of a
// scalable vector length): kc rows of `rows` values copied, the rest of
// each zero.
template <typename T>
void pack_a_width(T *__restrict dst, const T *__restrict a, long lda, Trans ta, long i0, long mc, long p0, long kc,
                  int mr) {
  for (long ir = 0; ir < mc; ir += mr, dst += mr * kc) {
    const long rows = std::min<long>(mr, mc - ir);
    if (ta == Trans::T) {
      interleave_rows(dst, a + p0 + (i0 + ir) * lda, lda, kc, rows, mr);
      continue;
    }
    copy_panel_width(dst, a + (i0 + ir) + p0 * lda, lda, kc, rows, mr);
  }
}

// op(B)[p0 : p0+kc, j0 : j0+nc] -> ceil(nc/nr) panels of kc x nr, nr known
// at run time.
template <typename T>
void pack_b_width(T *__restrict dst, const T *__restrict b, long ldb, Trans tb, long p0, long kc, long j0, long nc,
                  int nr) {
  for (long jr = 0; jr < nc; jr += nr, dst += nr * kc) {
    const long cols = std::min<long>(nr, nc - jr);
    if (tb == Trans::N) {
      interleave_rows(dst, b + p0 + (j0 + jr) * ldb, ldb, kc, cols, nr);
      continue;
    }
    copy_panel_width(dst, b + (j0 + jr) + p0 * ldb, ldb, kc, cols, nr);
  }
}

// op(B)[p0 : p0+kc, j0 : j0+nc] -> ceil(nc/NR) panels of kc x NR.
template <typename T, int NR>
void pack_b(T *__restrict dst, const T *__restrict b, long ldb, Trans tb, long p0, long kc, long j0, long nc) {
  for (long jr = 0; jr < nc; jr += NR, dst += NR * kc) {
    const long cols = std::min<long>(NR, nc - jr);
    if (tb == Trans::T) copy_panel<T, NR>(dst, b + (j0 + jr) + p0 * ldb, ldb, kc, cols);
    else interleave_rows(dst, b + p0 + (j0 + jr) * ldb, ldb, kc, cols, NR);
  }
}

}  // namespace
}  // namespace hcops
