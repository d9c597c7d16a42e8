// The checks of the amx family, shared by its emulated-tile test (every CPU)
// and its hardware test (CPUs with AMX): each bf16 datatype combination,
// every transpose, edge and odd sizes, k over several k blocks and not a
// multiple of 32, alpha/beta cases (NaN in C with beta = 0), against an f64
// reference of the inputs as the family sees them:
//   f32 C:  |C - ref| <= k * splits * 2^-24 * sum|a||b| (f32 accumulation)
//   bf16 C: that plus half a bf16 ulp (round to nearest, so within one
//           ulp of the rounded reference); with several k blocks, C is
//           rounded to bf16 between blocks (the driver accumulates in C):
//           half an ulp of sum|a||b| per block
//   bf16x3: the reference is the f32 inputs' exact product, plus the terms
//           bf16x3 drops (a_lo b_lo, the roundings of lo): 2^-14 sum|a||b|
// Rows of C past m (ldc > m) must be left untouched.
#pragma once

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>  // 1.1 has no C++ guard of its own
}

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <type_traits>
#include <vector>

#include "common/topology.h"
#include "gemm/blocking.h"
#include "gemm/gemm.h"
#include "kernels/kernel.h"

namespace amx_check {

using hcops::bf16;
using hcops::Trans;

inline float as_float(float x) { return x; }
inline float as_float(bf16 x) { return float(x); }

// The value the family multiplies for input x: x itself for bf16 inputs,
// bf16(x) for f32 inputs in bf16 mode; bf16x3 is checked against x.
template <typename Ty, typename T>
double seen(T x) {
  if constexpr (std::is_same_v<T, float> && Ty::splits == 1) return double(float(bf16(x)));
  else return double(as_float(x));
}

struct Case {
  float alpha, beta;
};
// alpha = 1 with beta 0 or 1 takes the tiles' straight stores (and loads)
// of C; the others the scratch-tile epilogue; beta = 0 with NaN in C.
constexpr Case kCases[] = {{1.0f, 0.0f}, {1.0f, 1.0f}, {0.5f, 0.0f}, {-1.5f, 0.75f}};

// Runs C = alpha op(A) op(B) + beta C through `run` (a GemmArgs<Ty> ->
// GemmReport) and checks it; `family` is the family run must report.
template <typename Ty, typename Run>
void check_product(const hcops::GemmKernel<Ty> &kern, Run run, const char *family, Trans ta, Trans tb, long m, long n,
                   long k, Case cs) {
  using A = typename Ty::a_type;
  using B = typename Ty::b_type;
  using C = typename Ty::c_type;
  std::mt19937 rng(static_cast<unsigned>(m * 131 + n * 17 + k * 3 + (ta == Trans::T) + 2 * (tb == Trans::T)));
  std::uniform_real_distribution<float> u(-1, 1);
  const long lda = (ta == Trans::N ? m : k) + 3, ldb = (tb == Trans::N ? k : n) + 5, ldc = m + 7;
  std::vector<A> a(lda * (ta == Trans::N ? k : m));
  std::vector<B> b(ldb * (tb == Trans::N ? n : k));
  for (A &x : a) x = A(u(rng));
  for (B &x : b) x = B(u(rng));
  std::vector<C> c(ldc * n), c0;
  const float sentinel = 12288.0f;  // exact in bf16
  for (long j = 0; j < n; ++j)
    for (long i = 0; i < ldc; ++i)
      c[i + j * ldc] = i >= m            ? C(sentinel)
                       : cs.beta == 0.0f ? C(std::numeric_limits<float>::quiet_NaN())  // must not be read
                                         : C(u(rng));
  c0 = c;
  const hcops::GemmReport rep =
      run(hcops::GemmArgs<Ty>{ta, tb, m, n, k, cs.alpha, a.data(), lda, b.data(), ldb, cs.beta, c.data(), ldc});
  assert_string_equal(rep.family, family);
  assert_string_equal(rep.b, "packed");

  // The k blocks the driver cut k into (gemm.cpp's part_blocks).
  const hcops::Blocking blk = hcops::blocking_for(hcops::topology(), kern);
  const long kcb = hcops::balanced_block(k, blk.kc, std::lcm(8, kern.k_align));
  const long k_blocks = (k + kcb - 1) / kcb;

  auto at = [&](long i, long p) { return seen<Ty>(ta == Trans::N ? a[i + p * lda] : a[p + i * lda]); };
  auto bt = [&](long p, long j) { return seen<Ty>(tb == Trans::N ? b[p + j * ldb] : b[j + p * ldb]); };
  for (long j = 0; j < n; ++j) {
    for (long i = 0; i < m; ++i) {
      double sum = 0, mag = 0;
      for (long p = 0; p < k; ++p) {
        sum += at(i, p) * bt(p, j);
        mag += std::fabs(at(i, p) * bt(p, j));
      }
      const double cin = cs.beta == 0.0f ? 0.0 : double(as_float(c0[i + j * ldc]));
      const double want = cs.alpha * sum + cs.beta * cin;
      const double scale = std::fabs(cs.alpha) * mag + std::fabs(cs.beta * cin);
      double bound = (double(k) * Ty::splits + 2) * std::ldexp(1.0, -24) * scale;
      if (Ty::splits == 3) bound += std::ldexp(1.0, -14) * std::fabs(cs.alpha) * mag;
      if (sizeof(C) == 2) {
        // Round to nearest: half an ulp, in the binade of the larger of the two.
        const double big = std::max(std::fabs(want), std::fabs(double(as_float(c[i + j * ldc]))));
        bound += big == 0 ? 0 : std::ldexp(1.0, std::ilogb(big) - 8);
        if (k_blocks > 1) bound += k_blocks * std::ldexp(1.0, -8) * scale;
      }
      bound += 1e-30;
      const double got = double(as_float(c[i + j * ldc]));
      if (!(std::fabs(got - want) <= bound))
        fail_msg("C(%ld,%ld) = %.9g, want %.9g within %.3g (m=%ld n=%ld k=%ld ta=%c tb=%c alpha=%g beta=%g)", i, j, got,
                 want, bound, m, n, k, char(ta), char(tb), cs.alpha, cs.beta);
    }
    for (long i = m; i < ldc; ++i)
      if (as_float(c[i + j * ldc]) != sentinel) fail_msg("C(%ld,%ld) past m=%ld was written", i, j, m);
  }
}

// Shapes: single elements, edges of one tile (16) and one block (32) on
// either side, k odd (pair padding), k not a multiple of 32, and k over
// several k blocks (kc <= 512) with edges in m and n.
constexpr long kShapes[][3] = {{1, 1, 1},    {5, 3, 7},    {15, 17, 5},  {16, 16, 32},  {17, 15, 33},
                               {32, 32, 64}, {33, 47, 65}, {31, 64, 96}, {70, 41, 300}, {45, 37, 1100}};

// Every shape, transpose and alpha/beta case for datatypes Ty.
template <typename Ty, typename Run>
void check_all(const hcops::GemmKernel<Ty> &kern, Run run, const char *family) {
  for (const auto &s : kShapes)
    for (Trans ta : {Trans::N, Trans::T})
      for (Trans tb : {Trans::N, Trans::T})
        for (const Case &cs : kCases) check_product<Ty>(kern, run, family, ta, tb, s[0], s[1], s[2], cs);
}

}  // namespace amx_check
