// The register-blocked microkernel shared by the intrinsics families: 2 x NR
// accumulator vectors, two A vectors per k step, A prefetched eight steps
// ahead and the C tile prefetched before the loop, so its misses overlap the
// FMAs instead of following them. Partial
// tiles use the same code: fewer columns are compile-time variants (no FMAs
// on padding), fewer rows are masked loads and stores of C.
//
// Written for any architecture: x86-64's families and AArch64's neon.
// W is a vector-traits type: V (vector), Mask, lanes, zero, load (aligned),
// loadu/storeu (with and without Mask), set1, fmadd, mul, and
// mask(rows) -> the Mask of the first `rows` lanes.
#pragma once


#include <array>
#include <utility>

#include "kernels/kernel.h"
#include "kernels/macro_kernel.h"
#include "kernels/pack.h"

namespace hcops {
namespace kernels {

// MV: A vectors per k step, 2 for a full tile, 1 for a partial one of at
// most `lanes` rows (half the FMAs of a masked full tile; m = 72 products).
template <typename W, typename T, int NR, int MV>
__attribute__((always_inline)) inline void tile_step(const T *a, const T *b, long csb, typename W::V *c0,
                                                     typename W::V *c1) {
  const auto a0 = W::load(a);
  typename W::V a1{};
  if constexpr (MV == 2) a1 = W::load(a + W::lanes);
#pragma GCC unroll 12
  for (int j = 0; j < NR; ++j) {
    const auto bj = W::set1(b[j * csb]);
    c0[j] = W::fmadd(a0, bj, c0[j]);
    if constexpr (MV == 2) c1[j] = W::fmadd(a1, bj, c1[j]);
  }
}

// C[:, 0:NR] = alpha A~B + beta C; kMasked limits rows to masks m0 / m1
// (MV = 1: rows to m0 alone).
// B(p, j) is b[p * rsb + j * csb]: a packed panel (rsb = its width, csb = 1,
// both compile-time constants after inlining) or op(B) read in place.
// Forced inline: left to itself GCC shares one clone between the packed and
// in-place entry points, so the packed kernel got runtime strides, spilled
// accumulators and ran ~12% slower (Xeon, AVX-512). The k loop is a plain
// loop unrolled by the compiler: a hand-unrolled body of four steps needs
// more than 32 zmm registers once its loads are hoisted, and spilled too.
template <typename W, typename T, int NR, bool kMasked, int MV = 2>
__attribute__((always_inline)) inline void tile(long kc, T alpha, const T *__restrict a, const T *__restrict b,
                                                long rsb, long csb, T beta, T *__restrict c, long ldc,
                                                typename W::Mask m0, typename W::Mask m1) {
  constexpr int MR = 2 * W::lanes;
  typename W::V c0[NR], c1[NR];
#pragma GCC unroll 12
  for (int j = 0; j < NR; ++j) {
    c0[j] = c1[j] = W::zero();
    __builtin_prefetch(c + j * ldc, 0, 3);  // prefetcht0 / prfm pldl1keep
    __builtin_prefetch(c + j * ldc + MV * W::lanes - 1, 0, 3);  // prefetcht0 / prfm pldl1keep
  }
#pragma GCC unroll 4
  for (long p = 0; p < kc; ++p, a += MR, b += rsb) {
    __builtin_prefetch(a + 8 * MR, 0, 3);  // prefetcht0 / prfm pldl1keep
    tile_step<W, T, NR, MV>(a, b, csb, c0, c1);
  }

  const auto va = W::set1(alpha), vb = W::set1(beta);
#pragma GCC unroll 12
  for (int j = 0; j < NR; ++j) {
    T *cj = c + j * ldc;
    auto r0 = W::mul(va, c0[j]);
    if constexpr (MV == 1) {
      if (beta != T(0)) r0 = W::fmadd(vb, W::loadu(cj, m0), r0);
      W::storeu(cj, r0, m0);
      continue;
    }
    auto r1 = W::mul(va, c1[j]);
    if (kMasked) {
      if (beta != T(0)) {
        r0 = W::fmadd(vb, W::loadu(cj, m0), r0);
        r1 = W::fmadd(vb, W::loadu(cj + W::lanes, m1), r1);
      }
      W::storeu(cj, r0, m0);
      W::storeu(cj + W::lanes, r1, m1);
    } else {
      if (beta != T(0)) {
        r0 = W::fmadd(vb, W::loadu(cj), r0);
        r1 = W::fmadd(vb, W::loadu(cj + W::lanes), r1);
      }
      W::storeu(cj, r0);
      W::storeu(cj + W::lanes, r1);
    }
  }
}

// The GemmKernel entry points for traits W with an NR-wide tile: packed B
// (full, edge) and B in place (full_direct, edge_direct).
template <typename W, typename T, int NR>
struct SimdKernel {
  static void full(long kc, T alpha, const T *a, const T *b, T beta, T *c, long ldc) {
    tile<W, T, NR, false>(kc, alpha, a, b, NR, 1, beta, c, ldc, W::mask(W::lanes), W::mask(W::lanes));
  }

  static void full_direct(long kc, T alpha, const T *a, const T *b, long rsb, long csb, T beta, T *c, long ldc) {
    tile<W, T, NR, false>(kc, alpha, a, b, rsb, csb, beta, c, ldc, W::mask(W::lanes), W::mask(W::lanes));
  }

  // Only the first N columns of B are read, so a B in place is never read
  // past its last column. kDirect = false keeps the packed strides constant.
  template <bool kDirect, int N>
  static void cols(long kc, T alpha, const T *a, const T *b, long rsb, long csb, T beta, T *c, long ldc, int m) {
    const long rs = kDirect ? rsb : NR, cs = kDirect ? csb : 1;
    if (m <= W::lanes) tile<W, T, N, true, 1>(kc, alpha, a, b, rs, cs, beta, c, ldc, W::mask(m), W::mask(0));
    else tile<W, T, N, true, 2>(kc, alpha, a, b, rs, cs, beta, c, ldc, W::mask(W::lanes), W::mask(m - W::lanes));
  }

  template <bool kDirect, int... N>
  static constexpr auto table(std::integer_sequence<int, N...>) {
    using Fn = void (*)(long, T, const T *, const T *, long, long, T, T *, long, int);
    return std::array<Fn, sizeof...(N)>{&cols<kDirect, N + 1>...};
  }

  static void edge_direct(long kc, T alpha, const T *a, const T *b, long rsb, long csb, T beta, T *c, long ldc, int m,
                          int n) {
    static constexpr auto by_cols = table<true>(std::make_integer_sequence<int, NR>{});
    by_cols[n - 1](kc, alpha, a, b, rsb, csb, beta, c, ldc, m);
  }

  static void edge(long kc, T alpha, const T *a, const T *b, T beta, T *c, long ldc, int m, int n) {
    static constexpr auto by_cols = table<false>(std::make_integer_sequence<int, NR>{});
    by_cols[n - 1](kc, alpha, a, b, NR, 1, beta, c, ldc, m);
  }
};

// The GemmKernel of a traits family for datatypes Ty (A, B, C all W's
// element type): a 2-vector x NR tile, B packed or read in place, the
// default macro-kernel, and the family's pack_a.

namespace {
template <typename Ty, typename W, int NR>
constexpr GemmKernel<Ty> simd_gemm_kernel(PackA<Ty> pack_a) {
  using T = typename Ty::c_type;
  using K = SimdKernel<W, T, NR>;
  return {
      .mr = 2 * W::lanes,
      .nr = NR,
      .k_align = 1,
      .full = &K::full,
      .edge = &K::edge,
      .full_direct = &K::full_direct,
      .edge_direct = &K::edge_direct,
      .pack_a = pack_a,
      .pack_b = &pack_b<T, NR>,
      .macro = &macro_kernel<Ty>,
  };
}
}  // namespace

}  // namespace kernels
}  // namespace hcops
