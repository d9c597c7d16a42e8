// Packing op(A) and op(B) blocks into the panel layouts of kernels/kernel.h,
// zero-padding partial panels so the microkernel never sees an edge.
#pragma once

#include <algorithm>

#include "gemm.h"

namespace hcops {

// op(A)[i0 : i0+mc, p0 : p0+kc] -> ceil(mc/mr) panels of kc x mr.
template <typename T>
void pack_a(T *dst, const T *a, long lda, Trans ta, long i0, long mc, long p0, long kc, int mr) {
  for (long ir = 0; ir < mc; ir += mr, dst += mr * kc) {
    const long rows = std::min<long>(mr, mc - ir);
    if (ta == Trans::N) {
      const T *src = a + (i0 + ir) + p0 * lda;
      for (long p = 0; p < kc; ++p, src += lda) {
        long i = 0;
        for (; i < rows; ++i) dst[p * mr + i] = src[i];
        for (; i < mr; ++i) dst[p * mr + i] = T(0);
      }
    } else {
      for (long i = 0; i < rows; ++i) {
        const T *src = a + p0 + (i0 + ir + i) * lda;
        for (long p = 0; p < kc; ++p) dst[p * mr + i] = src[p];
      }
      for (long i = rows; i < mr; ++i)
        for (long p = 0; p < kc; ++p) dst[p * mr + i] = T(0);
    }
  }
}

// op(B)[p0 : p0+kc, j0 : j0+nc] -> ceil(nc/nr) panels of kc x nr.
template <typename T>
void pack_b(T *dst, const T *b, long ldb, Trans tb, long p0, long kc, long j0, long nc, int nr) {
  for (long jr = 0; jr < nc; jr += nr, dst += nr * kc) {
    const long cols = std::min<long>(nr, nc - jr);
    if (tb == Trans::N) {
      for (long j = 0; j < cols; ++j) {
        const T *src = b + p0 + (j0 + jr + j) * ldb;
        for (long p = 0; p < kc; ++p) dst[p * nr + j] = src[p];
      }
      for (long j = cols; j < nr; ++j)
        for (long p = 0; p < kc; ++p) dst[p * nr + j] = T(0);
    } else {
      const T *src = b + (j0 + jr) + p0 * ldb;
      for (long p = 0; p < kc; ++p, src += ldb) {
        long j = 0;
        for (; j < cols; ++j) dst[p * nr + j] = src[j];
        for (; j < nr; ++j) dst[p * nr + j] = T(0);
      }
    }
  }
}

}  // namespace hcops
