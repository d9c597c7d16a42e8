// The transposing pack of op(A)^T panels shared by the families that
// transpose square blocks in registers (avx512/transpose_pack.h: 16 x 16
// f32, 8 x 8 f64; avx2/transpose_pack.h: 8 x 8 f32, 4 x 4 f64): rows of
// op(A) that are contiguous in memory (A^T) become the k-step vectors of a
// panel. pack.h's interleave_rows moves one element per instruction, and
// it sits on the path of every TN product (PyTorch's forward Linear, as BLAS
// sees it) and every transposed attention product. Included by each
// family's source and compiled with its ISA flags; the anonymous namespace
// gives each family its own copy.
#pragma once

#include <xmmintrin.h>

#include <algorithm>

namespace hcops::kernels::transposing {
namespace {

// How many lanes x lanes blocks ahead transpose_rows prefetches, in its
// loop's order. Each block reads a vector from each of `lanes` rows, and a
// row of an A block is only kc values (24 lines at DiT's kc = 384): streams
// too short and too many for the hardware prefetchers to follow. On Zen 5
// (AVX-512), DiT-XL's forward Linear 512 x 3456 x 1152 f32 (A = the weight,
// transposed) went from 9.27 to 8.68 ms on 2 threads, level with the same
// product on a contiguous W^T (8.6).
constexpr long kPrefetchBlocks = 4;

// interleave_rows' contract (pack.h) for A panels, whose width MR is a
// multiple of the lane count: dst[p * width + r] = src[r * ld + p] for
// r < rows, zero for rows <= r < width. W is the family's vector traits and
// square(v) its transpose of lanes x lanes (v[i] row i in, column i out);
// the tails of k are read with masked loads (nothing past a row is read),
// rows past `rows` are zero. The loops are unrolled whole: left to itself
// GCC kept the AVX2 family's rolled, with v on the stack, no faster than
// the scalar copy.
template <typename W, typename T, void (*square)(typename W::V *)>
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
      if (np == n) {
#pragma GCC unroll 16
        for (int i = 0; i < n; ++i) v[i] = i < nrows ? W::loadu(src + (r0 + i) * ld + p0) : W::zero();
      } else {
        const typename W::Mask m = W::mask(np);
#pragma GCC unroll 16
        for (int i = 0; i < n; ++i) v[i] = i < nrows ? W::loadu(src + (r0 + i) * ld + p0, m) : W::zero();
      }
      if (nrows) square(v);
      if (np == n) {
#pragma GCC unroll 16
        for (int q = 0; q < n; ++q) W::storeu(dst + (p0 + q) * width + r0, v[q]);
      } else {
        for (int q = 0; q < np; ++q) W::storeu(dst + (p0 + q) * width + r0, v[q]);
      }
    }
  }
}

}  // namespace
}  // namespace hcops::kernels::transposing
