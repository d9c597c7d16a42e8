// The checks of the tile families (amx, sme), shared by their emulated-tile
// tests (every CPU) and their hardware tests: each datatype combination the
// family serves, every transpose, edge and odd sizes, k over several k
// blocks and not a multiple of 32, alpha/beta cases (NaN in C with beta =
// 0), against an f64 reference of the inputs as the family sees them:
//   f32 C:  |C - ref| <= k * splits * 2^-24 * sum|a||b| (f32 accumulation)
//   f64 C:  the same with 2^-53 (sme's f64 tiles)
//   bf16 C: that plus half a bf16 ulp (round to nearest, so within one
//           ulp of the rounded reference); with several k blocks, C is
//           rounded to bf16 between blocks (the driver accumulates in C):
//           half an ulp of sum|a||b| per block
//   bf16x3: the reference is the f32 inputs' exact product, plus the terms
//           bf16x3 drops (a_lo b_lo, the roundings of lo): 2^-14 sum|a||b|
// Rows of C past m (ldc > m) must be left untouched. Where the family
// reads op(B) in place (GemmKernel::b_in_place: AMX, bf16 B with k and n
// multiples of 32), the product must say so and equal, bit for bit, the same
// product with B packed (the same kernel without b_in_place, run through
// gemm_with): the in-place tiles hold the same values in the same order.
#pragma once

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>  // 1.1 has no C++ guard of its own
}

#include <algorithm>
#include <atomic>
#include <cfenv>
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
#include "gemm/gemm_with.h"
#include "gemm/pack_policy.h"
#include "kernels/kernel.h"
#include "kernels/registry.h"

namespace tile_check {

using hcops::bf16;
using hcops::Trans;

inline float as_float(float x) { return x; }
inline float as_float(bf16 x) { return float(x); }
inline double as_float(double x) { return x; }  // sme's f64 tiles: checked in f64

// The value the family multiplies for input x: x itself for bf16 inputs
// and f32 panels, bf16(x) for f32 inputs in bf16 mode; bf16x3 is checked
// against x.
template <typename Ty, typename T>
double seen(T x) {
  if constexpr (std::is_same_v<T, float> && std::is_same_v<typename Ty::packed_a_type, bf16> && Ty::splits == 1)
    return double(float(bf16(x)));
  else return double(as_float(x));
}

struct Case {
  float alpha, beta;
};

// An epilogue that adds offset(i, j) to C(i, j) and counts its calls per
// element: the family's fused epilogue (gemm_family.h) must give each
// element of C exactly once, at C's own coordinates, before rounding.
struct AddingEpilogue {
  long m, n;
  std::vector<int> calls;  // each element by one thread only
  std::atomic<bool> outside{false};
  static float offset(long i, long j) { return float(i % 7 - 3) + 0.25f * float(j % 5); }
  template <typename Acc>  // f32, or f64 for DGEMM
  static void apply(const void *ctx, Acc *c, long ldc, long i0, long rows, long j0, long cols) {
    auto *self = const_cast<AddingEpilogue *>(static_cast<const AddingEpilogue *>(ctx));
    for (long j = 0; j < cols; ++j)
      for (long i = 0; i < rows; ++i) {
        const long ci = i0 + i, cj = j0 + j;
        if (ci < 0 || ci >= self->m || cj < 0 || cj >= self->n) {
          self->outside.store(true, std::memory_order_relaxed);
          continue;
        }
        c[i + j * ldc] += Acc(offset(ci, cj));
        ++self->calls[ci + cj * self->m];
      }
  }
};
// alpha = 1 with beta 0 or 1 takes the tiles' straight stores (and loads)
// of C; the others the scratch-tile epilogue; beta = 0 with NaN in C.
constexpr Case kCases[] = {{1.0f, 0.0f}, {1.0f, 1.0f}, {0.5f, 0.0f}, {-1.5f, 0.75f}};

// Runs C = alpha op(A) op(B) + beta C through `run` (a GemmArgs<Ty> ->
// GemmReport) and checks it; `family` is the family run must report.
template <typename Ty, typename Run>
void check_product(const hcops::GemmKernel<Ty> &kern, Run run, const char *family, Trans ta, Trans tb, long m, long n,
                   long k, Case cs, bool with_epilogue = false) {
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
  hcops::GemmArgs<Ty> args{ta, tb, m, n, k, cs.alpha, a.data(), lda, b.data(), ldb, cs.beta, c.data(), ldc};
  AddingEpilogue added{m, n, std::vector<int>(m * n, 0)};
  using Acc = typename Ty::acc_type;
  if (with_epilogue) args.epilogue = {&AddingEpilogue::apply<Acc>, &added};
  const hcops::GemmReport rep = run(args);
  assert_string_equal(rep.family, family);
  if (with_epilogue) {
    if (added.outside) fail_msg("the epilogue was given elements outside C (m=%ld n=%ld k=%ld)", m, n, k);
    for (long x = 0; x < m * n; ++x)
      if (added.calls[x] != 1)
        fail_msg("C(%ld,%ld) got the epilogue %d times (m=%ld n=%ld k=%ld)", x % m, x / m, added.calls[x], m, n, k);
  }
  const bool in_place = kern.b_in_place && hcops::b_packing() != hcops::BPacking::always && k > 0 && m > 0 &&
                        n > 0 && cs.alpha != 0.0f && kern.b_in_place(tb, n, k);
  // A family with skinny and shallow kernels (amx: avx512_bf16/skinny_bf16.h,
  // shallow.h) takes products of at most 16 columns or 16 steps of k there;
  // check_chosen checks its tiles on them too.
  const bool thin = hcops::skinny_allowed() &&
                    ((kern.skinny && n <= hcops::kSkinnyMaxN && std::strcmp(rep.b, "skinny") == 0) ||
                     (kern.shallow && k <= hcops::kShallowMaxK && std::strcmp(rep.b, "shallow") == 0));
  if (!thin) assert_string_equal(rep.b, in_place ? "in-place" : "packed");
  if (in_place) {
    hcops::GemmKernel<Ty> packing = kern;
    packing.b_in_place = nullptr;
    std::vector<C> cp = c0;
    hcops::GemmArgs<Ty> again = args;
    again.c = cp.data();
    AddingEpilogue added_again{m, n, std::vector<int>(m * n, 0)};
    if (with_epilogue) again.epilogue = {&AddingEpilogue::apply<Acc>, &added_again};
    const hcops::GemmReport packed = hcops::gemm_with<Ty>(again, packing, family);
    assert_string_equal(packed.b, "packed");
    if (std::memcmp(cp.data(), c.data(), sizeof(C) * c.size()) != 0)
      fail_msg("B in place and B packed differ (m=%ld n=%ld k=%ld ta=%c tb=%c alpha=%g beta=%g)", m, n, k, char(ta),
               char(tb), cs.alpha, cs.beta);
  }

  // The k blocks the driver cut k into (gemm.cpp's part_blocks).
  const hcops::Blocking blk = hcops::blocking_for_product(hcops::topology(), kern, k);
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
      const double extra = with_epilogue ? double(AddingEpilogue::offset(i, j)) : 0.0;
      const double want = cs.alpha * sum + cs.beta * cin + extra;
      const double scale = std::fabs(cs.alpha) * mag + std::fabs(cs.beta * cin) + std::fabs(extra);
      // The accumulation's unit roundoff: 2^-24 (f32), 2^-53 (f64 tiles).
      const double u = std::numeric_limits<Acc>::epsilon() / 2;
      double bound = (double(k) * Ty::splits + 2) * u * scale;
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
// either side, k odd (pair padding), k not a multiple of 32, k over
// several k blocks (kc <= 512) with edges in m and n, and past one block
// of SME's largest tiles (128); and the shapes AMX reads B in place for (k
// and n multiples of 32), with an edge in m, several column panels, and k
// deeper than one block of an f32 C (bf16 C takes it in one).
constexpr long kShapes[][3] = {{1, 1, 1},    {5, 3, 7},     {15, 17, 5},   {16, 16, 32},  {17, 15, 33},
                               {32, 32, 64}, {33, 47, 65},  {31, 64, 96},  {70, 41, 300}, {45, 37, 1100},
                               {129, 131, 40}, {45, 96, 1152}, {64, 160, 32}};

// A bf16 C whose values are f32 denormals is rounded as bf16(float) rounds
// them (bf16 has the same exponent range), not flushed to zero as
// vcvtneps2bf16 would. TDPBF16PS flushes denormal sums, so they come from
// alpha: 2^-100 * 3 * 2^-30 = 3 * 2^-130, and -2^-130 where a row's A is
// negative, next to normal values in the same vector of the store.
template <typename Ty, typename Run>
void check_denormal_c(Run run, const char *family) {
  if constexpr (sizeof(typename Ty::c_type) == 2) {
    using A = typename Ty::a_type;
    using B = typename Ty::b_type;
    const long m = 37, n = 19, k = 3;  // edges in m and n
    const float tiny = std::ldexp(1.0f, -15), alpha = std::ldexp(1.0f, -100);
    std::vector<A> a(m * k);
    std::vector<B> b(k * n, B(tiny));
    for (long i = 0; i < m; ++i)
      for (long p = 0; p < k; ++p)
        a[i + p * m] = i % 5 == 1 ? A(p == 0 ? -tiny : 0.0f) : i % 5 == 3 ? A(1.0f) : A(tiny);
    std::vector<bf16> c(m * n, bf16(7.0f));
    const hcops::GemmReport rep =
        run(hcops::GemmArgs<Ty>{Trans::N, Trans::N, m, n, k, alpha, a.data(), m, b.data(), k, 0.0f, c.data(), m});
    assert_string_equal(rep.family, family);
    for (long j = 0; j < n; ++j)
      for (long i = 0; i < m; ++i) {
        const float want = i % 5 == 1   ? -std::ldexp(1.0f, -130)
                           : i % 5 == 3 ? 3 * tiny * alpha
                                        : 3 * std::ldexp(1.0f, -130);
        const float got = float(c[i + j * m]);
        if (got != want) fail_msg("denormal C(%ld,%ld) = %g, want %g", i, j, double(got), double(want));
      }
  }
}

// A product whose every value is finite raises no floating-point flag but
// inexact: a block of C whose rows are fewer than 16 (the last of m = 40)
// must not compute on what the block before it left in the unused rows
// (2e38 there, times alpha = 2, overflowed before the epilogue's arithmetic
// was masked by rows). A of 1e19 in rows 16-31 at k = 0, 1 below; B's k = 0
// row 1e19: C up to 2e38, finite. Checked with beta = 0 and beta = 0.5.
template <typename Ty, typename Run>
void check_no_spurious_flags(Run run, const char *family) {
  using A = typename Ty::a_type;
  using B = typename Ty::b_type;
  using C = typename Ty::c_type;
  const long m = 40, n = 32, k = 32;
  std::vector<A> a(m * k, A(0.0f));
  for (long i = 0; i < m; ++i) a[i] = A(i >= 16 && i < 32 ? 1e19f : 1.0f);
  for (long i = 32; i < m; ++i)
    for (long p = 1; p < k; ++p) a[i + p * m] = A(1.0f);
  std::vector<B> b(k * n, B(1.0f));
  for (long j = 0; j < n; ++j) b[j * k] = B(1e19f);
  for (const float beta : {0.0f, 0.5f}) {
    std::vector<C> c(m * n, C(1.0f));
    std::feclearexcept(FE_ALL_EXCEPT);
    const hcops::GemmReport rep =
        run(hcops::GemmArgs<Ty>{Trans::N, Trans::N, m, n, k, 2.0f, a.data(), m, b.data(), k, beta, c.data(), m});
    const int raised = std::fetestexcept(FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID | FE_DIVBYZERO);
    assert_string_equal(rep.family, family);
    for (const C &x : c)
      if (!std::isfinite(as_float(x))) fail_msg("a value of C is not finite (beta %g)", double(beta));
    if (raised)
      fail_msg("flags raised by a product of finite values (beta %g):%s%s%s%s", double(beta),
               raised & FE_OVERFLOW ? " overflow" : "", raised & FE_UNDERFLOW ? " underflow" : "",
               raised & FE_INVALID ? " invalid" : "", raised & FE_DIVBYZERO ? " divbyzero" : "");
  }
}

// Every shape, transpose and alpha/beta case for datatypes Ty.
template <typename Ty, typename Run>
void check_all(const hcops::GemmKernel<Ty> &kern, Run run, const char *family) {
  for (const auto &s : kShapes)
    for (Trans ta : {Trans::N, Trans::T})
      for (Trans tb : {Trans::N, Trans::T})
        for (const Case &cs : kCases) {
          check_product<Ty>(kern, run, family, ta, tb, s[0], s[1], s[2], cs);
          check_product<Ty>(kern, run, family, ta, tb, s[0], s[1], s[2], cs, true);
        }
  // Large enough for several thread blocks and macro blocks of C: the fused
  // epilogue's coordinates from each block's origin.
  check_product<Ty>(kern, run, family, Trans::N, Trans::T, 300, 600, 64, kCases[0], true);
  check_product<Ty>(kern, run, family, Trans::T, Trans::N, 300, 608, 96, kCases[0], true);
  check_denormal_c<Ty>(run, family);
  check_no_spurious_flags<Ty>(run, family);
}

// The registry's own choice for Ty must be `family`, and pass check_all
// through the whole driver (gemm()): a tile family on the hardware. A
// family that has skinny or shallow kernels too passes check_all again
// without them (gemm_with), so that the tiles meet the thin shapes as well.
template <typename Ty>
void check_chosen(const char *family) {
  const hcops::ChosenKernel<Ty> &chosen = hcops::chosen_kernel<Ty>();
  assert_non_null(chosen.kernel);
  assert_string_equal(chosen.family->name, family);
  check_all<Ty>(
      *chosen.kernel, [](const hcops::GemmArgs<Ty> &g) { return hcops::gemm<Ty>(g); }, family);
  if (chosen.kernel->skinny || chosen.kernel->shallow) {
    static hcops::GemmKernel<Ty> tiles_only = *chosen.kernel;
    tiles_only.skinny = nullptr;
    tiles_only.shallow = nullptr;
    check_all<Ty>(
        tiles_only, [family](const hcops::GemmArgs<Ty> &g) { return hcops::gemm_with<Ty>(g, tiles_only, family); },
        family);
  }
}

}  // namespace tile_check
