// Thin products (n <= 16 or k <= 16) that one block holds go where the
// family's measured costs send them (kernel.h's GemmKernel::thin_choice:
// the skinny kernel, the shallow one, or one block), under HCOPS_SKINNY=auto;
// under always the thin kernels take all they apply to, under never none
// (engine/test_thin_choice.sh runs all three).
//
// - The driver follows a choice: the chosen f32 and f64 kernels with a
//   scripted thin_choice, on random shapes, strides, transposes, scalars,
//   NaN in C where beta = 0: the report must name the scripted path where
//   one block holds the product and the thin kernels' own order elsewhere;
//   the choice must be asked with the right `skinny` and `shallow`; and
//   every product must agree with an f64 reference within its error bound.
// - The avx2 family's costs (kernels/avx2/thin_choice.h), where the CPU
//   runs it: its choice on products whose paths were measured far apart,
//   and the same products through the driver on that family.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>  // 1.1 has no C++ guard of its own
}

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gemm/blocking.h"
#include "gemm/gemm.h"
#include "gemm/gemm_with.h"
#include "gemm/pack_policy.h"
#include "kernels/registry.h"

namespace {

using hcops::ThinPath;
using hcops::Trans;

const char *path_name(ThinPath p) {
  return p == ThinPath::skinny ? "skinny" : p == ThinPath::shallow ? "shallow" : "one block";
}

// The path a report names (the general path is neither).
const char *report_path(const hcops::GemmReport &r) {
  if (!std::strcmp(r.b, "skinny")) return "skinny";
  if (!std::strcmp(r.b, "shallow")) return "shallow";
  return r.one_block ? "one block" : "general";
}

// The scripted choice: the path the test asks for, when it is one the
// product can take; what thin_choice was told.
ThinPath g_script = ThinPath::one_block;
int g_asked = 0;
bool g_told_skinny = false, g_told_shallow = false;
ThinPath scripted(Trans, Trans, long, long, long, bool skinny, bool shallow) {
  ++g_asked;
  g_told_skinny = skinny;
  g_told_shallow = shallow;
  if (g_script == ThinPath::skinny && !skinny) return ThinPath::one_block;
  if (g_script == ThinPath::shallow && !shallow) return ThinPath::one_block;
  return g_script;
}

template <typename Ty>
using T = typename Ty::c_type;

// C = alpha op(A) op(B) + beta C in f64, and each element's bound: the sum
// of |terms| times k + 2 units of the type's epsilon (beta C's rounding
// too), as the blocked sums of any path may order them.
template <typename Ty>
void check_against_f64(Trans ta, Trans tb, long m, long n, long k, double alpha, const std::vector<T<Ty>> &a, long lda,
                       const std::vector<T<Ty>> &b, long ldb, double beta, const std::vector<T<Ty>> &c0,
                       const std::vector<T<Ty>> &c, long ldc, const char *what) {
  const double eps = std::numeric_limits<T<Ty>>::epsilon();
  for (long j = 0; j < n; ++j)
    for (long i = 0; i < m; ++i) {
      double s = 0, mag = 0;
      for (long p = 0; p < k; ++p) {
        const double x = a[ta == Trans::N ? i + p * lda : p + i * lda];
        const double y = b[tb == Trans::N ? p + j * ldb : j + p * ldb];
        s += x * y;
        mag += std::fabs(x * y);
      }
      const double old = beta == 0 ? 0 : double(c0[i + j * ldc]);
      const double want = alpha * s + beta * old;
      const double bound = (double(k) + 2) * eps * (std::fabs(alpha) * mag + std::fabs(beta * old)) + 1e-300;
      const double got = c[i + j * ldc];
      if (!(std::fabs(got - want) <= bound))
        fail_msg("%s %c%c %ldx%ldx%ld: C(%ld,%ld) = %.17g, f64 %.17g (bound %.3g)", what, char(ta), char(tb), m, n, k,
                 i, j, got, want, bound);
    }
}

template <typename Ty>
void test_driver_follows(const char *what) {
  const hcops::ChosenKernel<Ty> &chosen = hcops::chosen_kernel<Ty>();
  assert_non_null(chosen.kernel);
  if (!chosen.kernel->skinny && !chosen.kernel->shallow) {
    std::printf("SKIP: %s: %s has no skinny or shallow kernel: no thin choice to make\n", what, chosen.family->name);
    return;
  }
  hcops::GemmKernel<Ty> kern = *chosen.kernel;
  kern.thin_choice = &scripted;
  const hcops::Blocking blk = hcops::blocking_for(hcops::topology(), kern);
  std::mt19937 rng(4242);
  std::uniform_int_distribution<int> coin(0, 1), pad(0, 3), special(0, 39);
  std::uniform_int_distribution<long> dim(1, 16), wide(17, 120), rows(1, blk.mc + 40), deep(17, 300);
  std::uniform_real_distribution<double> u(-1, 1);
  int taken[3] = {0, 0, 0}, elsewhere = 0;
  for (int it = 0; it < 600; ++it) {
    g_script = static_cast<ThinPath>(it % 3);
    // n thin, k thin, or both.
    const int kind = it / 3 % 3;
    const long m = rows(rng), n = kind == 1 ? wide(rng) : dim(rng), k = kind == 0 ? deep(rng) : dim(rng);
    const Trans ta = coin(rng) ? Trans::T : Trans::N, tb = coin(rng) ? Trans::T : Trans::N;
    const long lda = (ta == Trans::N ? m : k) + pad(rng), ldb = (tb == Trans::N ? k : n) + pad(rng), ldc = m + pad(rng);
    std::vector<T<Ty>> a(lda * (ta == Trans::N ? k : m)), b(ldb * (tb == Trans::N ? n : k));
    for (auto &x : a) x = T<Ty>(u(rng));
    for (auto &x : b) x = T<Ty>(u(rng));
    const double alpha = coin(rng) ? 1.0 : -0.75, beta = special(rng) < 20 ? 0.0 : 0.5;
    std::vector<T<Ty>> c0(ldc * n);
    for (auto &x : c0) x = beta == 0 ? std::numeric_limits<T<Ty>>::quiet_NaN() : T<Ty>(u(rng));
    std::vector<T<Ty>> c = c0;
    g_asked = 0;
    const hcops::GemmReport r =
        hcops::gemm_with<Ty>({ta, tb, m, n, k, T<Ty>(alpha), a.data(), lda, b.data(), ldb, T<Ty>(beta), c.data(), ldc},
                             kern, chosen.family->name);
    check_against_f64<Ty>(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c0, c, ldc, what);

    const bool skinny = kern.skinny && n <= hcops::kSkinnyMaxN && hcops::skinny_allowed();
    const bool shallow = kern.shallow && k <= hcops::kShallowMaxK && hcops::skinny_allowed();
    const hcops::Blocking pb = hcops::blocking_for_product(hcops::topology(), kern, k);
    // One block holds it whether op(B) is packed or not; or not at all.
    const bool held = hcops::single_block_bytes(kern, pb, m, n, k, true) > 0;
    const bool beyond = hcops::single_block_bytes(kern, pb, m, n, k, false) == 0;
    const char *got = report_path(r);
    if (!hcops::skinny_allowed()) {  // HCOPS_SKINNY=never
      if (g_asked || !std::strcmp(got, "skinny") || !std::strcmp(got, "shallow"))
        fail_msg("%s %ldx%ldx%ld: %s under HCOPS_SKINNY=never", what, m, n, k, g_asked ? "asked" : got);
      ++elsewhere;
      continue;
    }
    if (!skinny && !shallow) {
      if (g_asked) fail_msg("%s %ldx%ldx%ld: thin_choice asked for a product no thin kernel takes", what, m, n, k);
      continue;
    }
    if (hcops::thin_choice_allowed() && g_asked) {
      if (g_told_skinny != skinny || g_told_shallow != shallow)
        fail_msg("%s %ldx%ldx%ld: thin_choice told skinny %d shallow %d, not %d %d", what, m, n, k, g_told_skinny,
                 g_told_shallow, skinny, shallow);
    }
    if (!hcops::thin_choice_allowed()) {
      if (g_asked) fail_msg("%s: thin_choice asked under HCOPS_SKINNY=always", what);
      // The thin kernels' order: skinny (its rows suffice for the two
      // threads at most that test_thin_choice.sh runs it on), else shallow.
      const char *order = skinny ? "skinny" : "shallow";
      if (std::strcmp(got, order) != 0)
        fail_msg("%s %ldx%ldx%ld: %s under HCOPS_SKINNY=always, not %s", what, m, n, k, got, order);
      ++elsewhere;
      continue;
    }
    const ThinPath want = scripted(ta, tb, m, n, k, skinny, shallow);
    if (held) {
      if (std::strcmp(got, path_name(want)) != 0)
        fail_msg("%s %c%c %ldx%ldx%ld: %s scripted, the report says %s", what, char(ta), char(tb), m, n, k,
                 path_name(want), got);
      ++taken[static_cast<int>(want)];
    } else if (beyond) {  // the thin kernels' own order
      if (!std::strcmp(got, "one block")) fail_msg("%s %ldx%ldx%ld: one block, which does not hold it", what, m, n, k);
      if (!skinny && std::strcmp(got, "shallow") != 0)
        fail_msg("%s %ldx%ldx%ld: %s, not the shallow kernel, beyond one block", what, m, n, k, got);
      ++elsewhere;
    }
  }
  std::printf(
      "# %s on %s (mc %ld, kc %ld): scripted paths taken where one block holds the product: skinny %d, "
      "shallow %d, one block %d; the thin kernels' order elsewhere: %d\n",
      what, chosen.family->name, blk.mc, blk.kc, taken[0], taken[1], taken[2], elsewhere);
  if (hcops::thin_choice_allowed()) {
    assert_true(taken[2] > 20);
    if (kern.skinny) assert_true(taken[0] > 20);
    if (kern.shallow) assert_true(taken[1] > 10);
  }
  assert_true(elsewhere > 20);
}

void test_driver_f32(void **) { test_driver_follows<hcops::Sgemm>("f32"); }
void test_driver_f64(void **) { test_driver_follows<hcops::Dgemm>("f64"); }

// The avx2 family's kernel for Ty, where this CPU runs it (else null).
template <typename Ty>
const hcops::GemmKernel<Ty> *avx2_kernel() {
  for (int i = 0; i < hcops::kernel_family_count(); ++i) {
    const hcops::KernelFamily &f = hcops::kernel_families()[i];
    if (std::strcmp(f.name, "avx2") != 0 || !hcops::family_runs_here(f)) continue;
    for (int j = 0; j < f.kernels->count; ++j)
      if (f.kernels->refs[j].template serves<Ty>()) return f.kernels->refs[j].template get<Ty>();
  }
  return nullptr;
}

struct Measured {
  char ta, tb;
  long m, n, k;
  ThinPath faster;  // by 1.5x or more on a Zen 3 (kernels/avx2/thin_choice.h)
};

// Products whose paths were measured far apart (1 thread, the grid behind
// kernels/avx2/thin_choice.h: the slower path's time over the faster's).
const Measured kF32[] = {
    {'T', 'N', 4, 2, 256, ThinPath::skinny},       // 4.6x: one block's tile pads 4 rows to 16 and 2 columns to 6
    {'T', 'N', 4, 16, 256, ThinPath::skinny},      // 2.0x
    {'N', 'N', 13, 2, 64, ThinPath::skinny},       // 2.4x
    {'N', 'N', 64, 2, 256, ThinPath::skinny},      // 2.0x
    {'N', 'T', 4, 16, 256, ThinPath::one_block},   // 3.1x: the skinny kernel copies op(B)
    {'N', 'T', 32, 13, 256, ThinPath::one_block},  // 3.6x
    {'T', 'N', 128, 16, 8, ThinPath::one_block},   // 2.9x: 2048 sums across lanes
    {'N', 'N', 128, 16, 17, ThinPath::one_block},  // 2.2x
    {'T', 'T', 13, 16, 17, ThinPath::one_block},   // 3.0x
    {'T', 'N', 64, 32, 8, ThinPath::one_block},    // the shallow kernel 3.4x one block's time
    {'N', 'N', 32, 120, 1, ThinPath::shallow},     // 2.3x
};
const Measured kF64[] = {
    {'T', 'N', 4, 2, 256, ThinPath::skinny},      // 3.4x
    {'N', 'N', 7, 2, 256, ThinPath::skinny},      // 2.6x
    {'N', 'N', 32, 2, 256, ThinPath::skinny},     // 2.3x
    {'N', 'T', 4, 16, 256, ThinPath::one_block},  // 3.0x
    {'T', 'T', 4, 16, 256, ThinPath::one_block},  // 2.6x
    {'N', 'T', 13, 13, 64, ThinPath::one_block},  // 1.9x
};

template <typename Ty, size_t N>
void check_avx2_costs(const Measured (&cases)[N], const char *what) {
  const hcops::GemmKernel<Ty> *kern = avx2_kernel<Ty>();
  if (!kern) {
    std::printf("SKIP: %s: this CPU does not run the avx2 family: its costs are not checked\n", what);
    return;
  }
  assert_non_null(kern->thin_choice);
  for (const Measured &x : cases) {
    const Trans ta = Trans(x.ta), tb = Trans(x.tb);
    const bool skinny = x.n <= hcops::kSkinnyMaxN, shallow = kern->shallow && x.k <= hcops::kShallowMaxK;
    const ThinPath p = kern->thin_choice(ta, tb, x.m, x.n, x.k, skinny, shallow);
    if (p != x.faster)
      fail_msg("%s %c%c %ldx%ldx%ld: the costs choose %s, %s was measured faster", what, x.ta, x.tb, x.m, x.n, x.k,
               path_name(p), path_name(x.faster));
    // Through the driver on that family (under HCOPS_SKINNY=auto).
    const long lda = ta == Trans::N ? x.m : x.k, ldb = tb == Trans::N ? x.k : x.n;
    std::vector<T<Ty>> a(lda * (ta == Trans::N ? x.k : x.m), T<Ty>(0.5)),
        b(ldb * (tb == Trans::N ? x.n : x.k), T<Ty>(2));
    std::vector<T<Ty>> c(x.m * x.n, T<Ty>(-1));
    const hcops::GemmReport r = hcops::gemm_with<Ty>(
        {ta, tb, x.m, x.n, x.k, T<Ty>(1), a.data(), lda, b.data(), ldb, T<Ty>(0), c.data(), x.m}, *kern, "avx2");
    for (const T<Ty> v : c)
      if (v != T<Ty>(x.k)) fail_msg("%s %ldx%ldx%ld: C = %g, not %ld", what, x.m, x.n, x.k, double(v), x.k);
    // Where one block holds it on this CPU's blocking (mc is L2's: 64 rows
    // of f32 on a 256 KiB L2).
    const hcops::Blocking pb = hcops::blocking_for_product(hcops::topology(), *kern, x.k);
    const bool held = hcops::single_block_bytes(*kern, pb, x.m, x.n, x.k, true) > 0;
    if (held && hcops::thin_choice_allowed() && std::strcmp(report_path(r), path_name(x.faster)) != 0)
      fail_msg("%s %c%c %ldx%ldx%ld on avx2: %s, not %s", what, x.ta, x.tb, x.m, x.n, x.k, report_path(r),
               path_name(x.faster));
  }
  std::printf("# %s: the avx2 family's costs choose the measured faster path on %zu products\n", what, N);
}

void test_avx2_f32(void **) { check_avx2_costs<hcops::Sgemm>(kF32, "f32"); }
void test_avx2_f64(void **) { check_avx2_costs<hcops::Dgemm>(kF64, "f64"); }

}  // namespace

int main() {
  std::printf("# HCOPS_SKINNY: %s\n", !hcops::skinny_allowed()       ? "never"
                                      : hcops::thin_choice_allowed() ? "auto"
                                                                     : "always");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_driver_f32),
      cmocka_unit_test(test_driver_f64),
      cmocka_unit_test(test_avx2_f32),
      cmocka_unit_test(test_avx2_f64),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
