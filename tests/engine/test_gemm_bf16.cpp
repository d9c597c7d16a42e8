// Every bf16 combination of the engine (kernels/gemm_types.h: Bf16Gemm, Bf16Bf16Gemm,
// SgemmBf16, SgemmBf16x3) through hcops::gemm<Ty>, column-major, on the
// kernel family HCOPS_ISA selects. test_gemm_bf16.sh runs it once per family
// this CPU runs and per thread count (HCOPS_NUM_THREADS=1, 2), passing the
// forced family as argv[1]: when that family serves a combination, it must
// be the one that ran.
//
// The bounds, u = 2^-24 (f32 unit roundoff), S = |alpha| sum_p |a_ip b_pj|
// over the inputs as given, T = S + |beta c_ij|:
// - bf16 inputs (and SgemmBf16 against its bf16-rounded inputs): the f64
//   product of the same bf16 values within k u S (the k f32 additions of
//   the pair dot products; each bf16 product is exact in f32), plus a few
//   u T for alpha, beta and the partial sums of C between k blocks:
//   (k + 2 ceil(k/32) + 6) u T.
// - bf16 C: the f32 value above rounded to nearest even: within one bf16 ulp
//   of the rounded reference (the statement; plus the f32 bound, which
//   is larger where beta C cancels the product), and more strictly
//   between bf16(ref - bound) and bf16(ref + bound) (rounding is monotone),
//   which a truncating or a twice-rounding C fails.
// - SgemmBf16 against the exact f32 inputs: each input is off by at most
//   2^-8 of itself, each product by (2^-7 + 2^-16) |a||b|, plus the above.
// - SgemmBf16x3 (a = hi + lo + e, hi = bf16(a), lo = bf16(a - hi)): |lo| <=
//   2^-8 |a|; a - hi has at most 16 significant bits below hi's last, lo keeps
//   the top 8, so |e| <= 2^-17 |a|. a b - (hi_a hi_b + hi_a lo_b + lo_a hi_b)
//   = lo_a lo_b + hi_a e_b + e_a hi_b + lo_a e_b + e_a lo_b + e_a e_b, at most
//   (2^-16 + 2 (1 + 2^-8) 2^-17 + 2^-24) |a b| < 1.01 * 2^-15 |a b|; and the 3k
//   products, each at most (1 + 2^-8)^2 |a b|, are summed in f32:
//   1.01 * 2^-15 S + (3k + 2 ceil(k/32) + 6) u 1.02 T against the exact f64
//   product of the f32 inputs. On random data its largest error must be at
//   least 100x below SgemmBf16's.
// Plus: all four transposes, ld > minimal, products of at most 16 columns
// or 16 steps of k (the skinny and shallow kernels), sizes 0..300 at random and a few
// over 1000 (several k blocks), odd k (pair padding) and k = 1, alpha and
// beta in {0, 1, -1, 0.5}, NaN in C with beta = 0 never propagating, alpha =
// 0 never reading A or B, NaN and Inf in A and B propagating, and calls inside
// an OpenMP parallel region (each thread its own product, serial inside).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>  // 1.1 has no C++ guard of its own
}

#include <omp.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "common/fault.h"
#include "gemm/team.h"
#include "gemm/gemm.h"
#include "gemm/pack_policy.h"
#include "gemm/workspace.h"
#include "kernels/registry.h"
#include "combo.h"

namespace {

using hcops::bf16;
using hcops::Trans;

const char *forced_family = nullptr;  // argv[1]: the family HCOPS_ISA forces
using namespace engine_test;
// What the kernel multiplies when the input is x: bf16 as is, f32 rounded.
double bf16_rounded(float x) { return float(bf16(x)); }
double bf16_rounded(bf16 x) { return float(x); }

// x rounded to 8 significant bits, to nearest even, in double (no double
// rounding through f32); non-finite and zero unchanged.
double round_bf16(double x) {
  if (!std::isfinite(x) || x == 0) return x;
  const int e = std::ilogb(x) - 7;
  return std::ldexp(std::nearbyint(std::ldexp(x, -e)), e);
}
double bf16_ulp(double x) { return x == 0 ? 0x1p-133 : std::ldexp(1.0, std::ilogb(x) - 7); }

bool is_bf16_mode(int splits, bool f32_inputs) { return f32_inputs && splits == 1; }

struct Case {
  Trans ta = Trans::N, tb = Trans::N;
  long m = 0, n = 0, k = 0;
  long pad_a = 1, pad_b = 2, pad_c = 3;  // ld beyond the minimum
  float alpha = 1, beta = 0;
  unsigned seed = 1;
  // Non-finite values planted in op(A)(nan_row, nan_k) = NaN and
  // op(B)(inf_k, inf_col) = Inf, when >= 0.
  long nan_row = -1, nan_k = -1, inf_k = -1, inf_col = -1;
  bool nan_a_unread = false;  // NaN everywhere in A and B (alpha = 0: never read)
};

std::string describe(const Case &c) {
  char s[200];
  std::snprintf(s, sizeof s, "m=%ld n=%ld k=%ld ta=%c tb=%c alpha=%g beta=%g seed=%u", c.m, c.n, c.k, char(c.ta),
                char(c.tb), c.alpha, c.beta, c.seed);
  return s;
}

struct Result {
  std::string error;         // empty: right
  hcops::GemmReport rep;     // what the engine did
  double max_err_exact = 0;  // largest |C - exact f64 product of the inputs as given|
};

// One product, checked element by element. Never calls cmocka (it may run
// inside a parallel region): returns what went wrong.
template <typename Ty>
Result run_case(const Case &cs) {
  using A = typename Ty::a_type;
  using B = typename Ty::b_type;
  using C = typename Ty::c_type;
  constexpr bool f32_inputs = sizeof(A) == sizeof(float);
  Result res;
  const long m = cs.m, n = cs.n, k = cs.k;
  std::mt19937 rng(cs.seed);
  std::uniform_real_distribution<float> u(-1, 1);
  const long arows = cs.ta == Trans::N ? m : k, acols = cs.ta == Trans::N ? k : m;
  const long brows = cs.tb == Trans::N ? k : n, bcols = cs.tb == Trans::N ? n : k;
  const long lda = std::max(1L, arows + cs.pad_a), ldb = std::max(1L, brows + cs.pad_b);
  const long ldc = std::max(1L, m + cs.pad_c);
  std::vector<A> a(lda * acols + 1);
  std::vector<B> b(ldb * bcols + 1);
  for (A &x : a) x = from_double<A>(u(rng));
  for (B &x : b) x = from_double<B>(u(rng));
  auto a_at = [&](long i, long p) -> A & { return cs.ta == Trans::N ? a[i + p * lda] : a[p + i * lda]; };
  auto b_at = [&](long p, long j) -> B & { return cs.tb == Trans::N ? b[p + j * ldb] : b[j + p * ldb]; };
  if (cs.nan_row >= 0) a_at(cs.nan_row, cs.nan_k) = from_double<A>(kNaN);
  if (cs.inf_k >= 0) {
    b_at(cs.inf_k, cs.inf_col) = from_double<B>(kInf);
    // What meets the Inf is exact in bf16 (its bf16x3 lo part is 0): the
    // cross products must not make Inf * 0 = NaN where f32 gives Inf.
    for (long i = 0; i < m; ++i) a_at(i, cs.inf_k) = from_double<A>(0.5);
  }
  if (cs.nan_a_unread) {
    for (A &x : a) x = from_double<A>(kNaN);
    for (B &x : b) x = from_double<B>(kNaN);
  }
  std::vector<C> c(ldc * std::max(1L, n));
  for (C &x : c) x = from_double<C>(cs.beta == 0 ? kNaN : u(rng));  // beta = 0 must not read C
  const std::vector<C> c0 = c;

  // op(A) row-major and op(B) column-major, exact and as the kernel sees them.
  std::vector<double> ax(m * k), ar(m * k), bx(k * n), br(k * n);
  for (long i = 0; i < m; ++i)
    for (long p = 0; p < k; ++p) {
      ax[i * k + p] = as_double(a_at(i, p));
      ar[i * k + p] = bf16_rounded(a_at(i, p));
    }
  for (long j = 0; j < n; ++j)
    for (long p = 0; p < k; ++p) {
      bx[j * k + p] = as_double(b_at(p, j));
      br[j * k + p] = bf16_rounded(b_at(p, j));
    }

  res.rep = hcops::gemm<Ty>({cs.ta, cs.tb, m, n, k, cs.alpha, a.data(), lda, b.data(), ldb, cs.beta, c.data(), ldc});

  for (long i = 0; i < ldc * std::max(1L, n); ++i)
    if (i % ldc >= m && std::memcmp(&c[i], &c0[i], sizeof(C)) != 0) {
      res.error = "wrote C outside its m x n: " + describe(cs);
      return res;
    }

  const double alpha = cs.alpha, beta = cs.beta;
  const long nblocks = (k + 31) / 32;
  const bool rounded_ref = Ty::splits == 1;  // x3 is checked against the exact inputs only
  const double adds = double(Ty::splits) * k + 2 * nblocks + 6;
  const double split_rel = Ty::splits == 3                        ? 1.01 * 0x1p-15
                           : is_bf16_mode(Ty::splits, f32_inputs) ? 0x1p-7 + 0x1p-16
                                                                  : 0;
  const double growth = f32_inputs ? 1.02 : 1.0;  // rounded products may exceed |a b| a little
  char msg[400];
  for (long j = 0; j < n; ++j)
    for (long i = 0; i < m; ++i) {
      const double cij = beta == 0 ? 0 : beta * as_double(c0[i + j * ldc]);
      double sx = 0, sr = 0, magx = 0, magr = 0;
      bool nonfinite = false;
      if (alpha != 0)
        for (long p = 0; p < k; ++p) {
          sx += ax[i * k + p] * bx[j * k + p];
          sr += ar[i * k + p] * br[j * k + p];
          magx += std::fabs(ax[i * k + p] * bx[j * k + p]);
          magr += std::fabs(ar[i * k + p] * br[j * k + p]);
          nonfinite = nonfinite || !std::isfinite(ax[i * k + p]) || !std::isfinite(bx[j * k + p]);
        }
      const double got = as_double(c[i + j * ldc]);
      auto bad = [&](const char *what, double want, double bound) {
        std::snprintf(msg, sizeof msg, "C(%ld,%ld) = %.9g, want %.9g within %.3g (%s): %s", i, j, got, want, bound,
                      what, describe(cs).c_str());
        res.error = msg;
      };
      if (nonfinite) {  // NaN or Inf in this row of A or column of B
        if (std::isfinite(got)) return bad("a NaN or Inf input must propagate", kNaN, 0), res;
        const double want = alpha * sx + cij;  // an Inf, not a NaN, stays that Inf
        if (std::isinf(want) && got != want) return bad("an Inf product must stay that Inf", want, 0), res;
        continue;
      }
      if (alpha == 0) {  // C = beta C, A and B never read
        const double want = sizeof(C) == 2 ? float(bf16(float(cij))) : double(float(cij));
        if (!(got == want || (want == 0 && got == 0))) return bad("alpha = 0: C = beta C", want, 0), res;
        continue;
      }
      // Against the exact product of the inputs as given.
      const double wantx = alpha * sx + cij;
      const double boundx =
          split_rel * std::fabs(alpha) * magx + adds * kU * growth * (std::fabs(alpha) * magx + std::fabs(cij));
      const double wx = sizeof(C) == 2 ? round_bf16(wantx) : wantx;
      res.max_err_exact = std::max(res.max_err_exact, std::fabs(got - wantx));
      if (!rounded_ref || f32_inputs) {
        const double bx_all = sizeof(C) == 2 ? boundx + bf16_ulp(wx) : boundx;
        if (!(std::fabs(got - wantx) <= bx_all + 1e-37)) return bad("against the exact f32 inputs", wantx, bx_all), res;
      }
      if (!rounded_ref) continue;
      // Against the f64 product of the bf16-rounded inputs.
      const double want = alpha * sr + cij;
      const double bound = adds * kU * (std::fabs(alpha) * magr + std::fabs(cij)) + 1e-37;
      if (sizeof(C) == 4) {
        if (!(std::fabs(got - want) <= bound)) return bad("f32 C against the bf16 inputs", want, bound), res;
      } else {
        // One bf16 ulp of the rounded reference, beyond the f32 bound (which
        // exceeds it where beta C cancels the product).
        const double w = round_bf16(want), tol = bf16_ulp(w) + bound;
        if (!(std::fabs(got - w) <= tol)) return bad("bf16 C within one bf16 ulp", w, tol), res;
        const double lo = round_bf16(want - bound), hi = round_bf16(want + bound);
        if (!(lo <= got && got <= hi)) return bad("bf16 C: the f32 result rounded to nearest even", want, bound), res;
      }
    }
  return res;
}

// Whether the forced family lists a kernel for Ty.
template <typename Ty>
bool forced_family_serves() {
  if (!forced_family) return false;
  for (int i = 0; i < hcops::kernel_family_count(); ++i) {
    const hcops::KernelFamily &f = hcops::kernel_families()[i];
    if (std::strcmp(f.name, forced_family) != 0) continue;
    for (int j = 0; j < f.kernels->count; ++j)
      if (f.kernels->refs[j].template serves<Ty>()) return true;
  }
  return false;
}

// The family that must have run: the forced one when it serves Ty, else the
// registry's choice; never none (generic serves every bf16 combination).
template <typename Ty>
const char *expected_family() {
  if (forced_family_serves<Ty>()) return forced_family;
  const hcops::ChosenKernel<Ty> &chosen = hcops::chosen_kernel<Ty>();
  return chosen.family ? chosen.family->name : "none";
}

// Whether products of at most kSkinnyMaxN columns may go to the chosen
// family's skinny kernel (HCOPS_SKINNY=never: they are packed).
template <typename Ty>
bool skinny_kernel() {
  const hcops::GemmKernel<Ty> *kern = hcops::chosen_kernel<Ty>().kernel;
  return kern && kern->skinny && hcops::skinny_allowed();
}

// The same for products of at most kShallowMaxK steps of k.
template <typename Ty>
bool shallow_kernel() {
  const hcops::GemmKernel<Ty> *kern = hcops::chosen_kernel<Ty>().kernel;
  return kern && kern->shallow && hcops::skinny_allowed();
}

bool computes(const Case &c) { return c.m > 0 && c.n > 0 && c.k > 0 && c.alpha != 0; }

template <typename Ty>
void check(const Case &cs, Result *out = nullptr) {
  const Result r = run_case<Ty>(cs);
  if (!r.error.empty()) fail_msg("%s: %s", Combo<Ty>::name, r.error.c_str());
  if (computes(cs)) {
    if (std::strcmp(r.rep.family, expected_family<Ty>()) != 0)
      fail_msg("%s: family %s ran, %s expected (%s)", Combo<Ty>::name, r.rep.family, expected_family<Ty>(),
               describe(cs).c_str());
    // k in pairs: B packed, but where the family's own macro-kernel reads
    // it in place (AMX tiles: bf16 op(B) = B, k and n multiples of 32), or
    // for a product of at most 16 columns on the family's skinny kernel
    // (test_skinny checks which), or of at most 16 steps of k on its shallow
    // kernel (test_shallow).
    const hcops::GemmKernel<Ty> *kern = hcops::chosen_kernel<Ty>().kernel;
    const bool in_place = kern && kern->b_in_place && hcops::b_packing() != hcops::BPacking::always &&
                          kern->b_in_place(cs.tb, cs.n, cs.k);
    const bool may_be_skinny = skinny_kernel<Ty>() && cs.n <= hcops::kSkinnyMaxN;
    const bool may_be_shallow = shallow_kernel<Ty>() && cs.k <= hcops::kShallowMaxK;
    if (std::strcmp(r.rep.b, in_place ? "in-place" : "packed") != 0 &&
        !(may_be_skinny && std::strcmp(r.rep.b, "skinny") == 0) &&
        !(may_be_shallow && std::strcmp(r.rep.b, "shallow") == 0))
      fail_msg("%s: B %s, %s expected (%s)", Combo<Ty>::name, r.rep.b, in_place ? "in-place" : "packed",
               describe(cs).c_str());
  }
  if (out) *out = r;
}

const float kScalars[] = {0.0f, 1.0f, -1.0f, 0.5f};

// The rest of a random case: op(B)'s transpose, leading dimensions padded
// by up to max_pad, alpha (never 0: it has its own cases), beta and the
// data's seed.
void randomize(Case &c, std::mt19937 &rng, long max_pad) {
  std::uniform_int_distribution<long> pad(0, max_pad), pick(0, 3);
  c.tb = pick(rng) & 1 ? Trans::T : Trans::N;
  c.pad_a = pad(rng);
  c.pad_b = pad(rng);
  c.pad_c = pad(rng);
  c.alpha = kScalars[1 + pick(rng) % 3];
  c.beta = kScalars[pick(rng)];
  c.seed = static_cast<unsigned>(rng());
}

Case random_case(std::mt19937 &rng, long max_dim) {
  std::uniform_int_distribution<long> dim(0, max_dim), pick(0, 3);
  Case c;
  c.m = dim(rng);
  c.n = dim(rng);
  c.k = dim(rng);
  c.ta = pick(rng) & 1 ? Trans::T : Trans::N;
  randomize(c, rng, 5);
  return c;
}

// Which family served each combination (the report of one product), once
// per run, for the script's log.
template <typename Ty>
void say_family() {
  Case c;
  c.m = 9;
  c.n = 5;
  c.k = 3;
  Result r;
  check<Ty>(c, &r);
  std::printf("%s: served by %s (HCOPS_ISA=%s, %d threads)\n", Combo<Ty>::name, r.rep.family,
              forced_family ? forced_family : "unset", hcops::max_threads());
}

template <typename Ty>
void test_random(void **) {
  assert_string_not_equal(expected_family<Ty>(), "none");
  say_family<Ty>();
  std::mt19937 rng(1234 + Ty::splits + 7 * int(Ty::c) + 13 * int(Ty::a));
  for (int i = 0; i < 60; ++i) check<Ty>(random_case(rng, i < 20 ? 40 : 300));
}

// A product of shape s (m, n, k) with transposes from t's bits (1: A, 2: B).
Case shaped(const long (&s)[3], int t) {
  Case c;
  c.m = s[0];
  c.n = s[1];
  c.k = s[2];
  c.ta = t & 1 ? Trans::T : Trans::N;
  c.tb = t & 2 ? Trans::T : Trans::N;
  c.seed = static_cast<unsigned>(s[0] * 31 + s[1] * 7 + s[2] + t);
  return c;
}

template <typename Ty>
void test_edges_of_k(void **) {
  // k = 1 and odd k: the last pair is half padding; small m, n: edge tiles.
  const long shapes[][3] = {{1, 1, 1}, {9, 5, 1}, {8, 4, 3}, {17, 13, 7}, {33, 9, 63}, {3, 70, 129}, {64, 64, 2}};
  for (const auto &s : shapes)
    for (int t = 0; t < 4; ++t) check<Ty>(shaped(s, t));
}

template <typename Ty>
void test_alpha_beta(void **) {
  for (float alpha : kScalars)
    for (float beta : kScalars)
      for (int t = 0; t < 4; ++t) {
        Case c;
        c.m = 21;
        c.n = 11;
        c.k = 37;
        c.alpha = alpha;
        c.beta = beta;
        c.ta = t & 1 ? Trans::T : Trans::N;
        c.tb = t & 2 ? Trans::T : Trans::N;
        c.seed = 99 + t;
        check<Ty>(c);
        c.nan_a_unread = alpha == 0;  // alpha = 0: NaN in A and B is never read
        if (alpha == 0) check<Ty>(c);
      }
  Case empty;  // k = 0: C = beta C
  empty.m = 5;
  empty.n = 3;
  empty.beta = 0.5f;
  check<Ty>(empty);
}

// The t-th (0-3) case of non-finite inputs of shape s (m, n, k): transposes
// from t's bits (1: A, 2: B), beta 0.5 for t = 3 (else 0: NaN in C unread),
// op(A)(nan[0], nan[1]) = NaN and op(B)(inf[0], inf[1]) = Inf.
Case nonfinite_case(int t, const long (&s)[3], const long (&nan)[2], const long (&inf)[2], unsigned seed) {
  Case c = shaped(s, t);
  c.beta = t == 3 ? 0.5f : 0.0f;
  c.nan_row = nan[0];
  c.nan_k = nan[1];
  c.inf_k = inf[0];
  c.inf_col = inf[1];
  c.seed = seed;
  return c;
}

template <typename Ty>
void test_nonfinite(void **) {
  // The last k step (half of a padded pair) and the edge tile of columns too.
  for (int t = 0; t < 4; ++t) check<Ty>(nonfinite_case(t, {29, 19, 45}, {3 + t, 44 - t}, {7 * t, 18 - t}, 5 + t));
}

template <typename Ty>
void test_large(void **) {
  // Over 1000 in one dimension, and k over several k blocks (with an odd last
  // one); the first large enough (42 Mflop) for two threads on a family that
  // keeps 16 Mflop per thread (AMX: kernel.h, min_flops_per_thread).
  const long shapes[][3] = {{1031, 67, 301}, {37, 1029, 257}, {61, 45, 2101}};
  bool two_threads = false;
  for (int s = 0; s < 3; ++s)
    for (int t = 0; t < 4; t += s == 2 ? 1 : 3) {
      Case c;
      c.m = shapes[s][0];
      c.n = shapes[s][1];
      c.k = shapes[s][2];
      c.ta = t & 1 ? Trans::T : Trans::N;
      c.tb = t & 2 ? Trans::T : Trans::N;
      c.beta = t == 1 ? 1.0f : t == 2 ? -1.0f : 0.0f;
      c.alpha = t == 3 ? -1.0f : 0.5f;
      c.seed = static_cast<unsigned>(17 * s + t);
      Result r;
      check<Ty>(c, &r);
      two_threads = two_threads || r.rep.threads == 2;
    }
  // HCOPS_NUM_THREADS=2 must really run a team: the large products split.
  if (hcops::max_threads() == 2 && !two_threads) fail_msg("%s: no product ran on 2 threads", Combo<Ty>::name);
}

// The shapes a family may read op(B) = B in place for (AMX: k and n
// multiples of 32, bf16 B): several column panels, an edge in m, k in one
// block and over several (f32 C), B's columns padded apart, every
// transpose and alpha/beta, NaN in C with beta = 0.
template <typename Ty>
void test_b_in_place(void **) {
  const long shapes[][3] = {{45, 64, 384}, {96, 32, 32}, {300, 96, 1152}, {17, 160, 64}};
  for (const auto &s : shapes)
    for (int t = 0; t < 4; ++t) {
      Case c = shaped(s, t);
      c.pad_b = t;
      c.alpha = t == 3 ? -1.0f : 1.0f;
      c.beta = t == 1 ? 0.5f : 0.0f;
      check<Ty>(c);
    }
}

// check() of a thin product, which must also have run on the family's
// `path` ("skinny" or "shallow"; null: the family has none) when it
// computes; a shallow product of at most 16 columns may take the skinny
// kernel, which comes first.
template <typename Ty>
Result check_thin(const Case &c, const char *path) {
  Result r;
  check<Ty>(c, &r);
  const bool skinny_first = std::strcmp(r.rep.b, "skinny") == 0 && skinny_kernel<Ty>() && c.n <= hcops::kSkinnyMaxN;
  if (path && computes(c) && std::strcmp(r.rep.b, path) != 0 && !skinny_first)
    fail_msg("%s: B %s, %s expected (%s)", Combo<Ty>::name, r.rep.b, path, describe(c).c_str());
  return r;
}

// Products of at most 16 columns, which a family with a skinny kernel
// (avx512_bf16, amx: avx512_bf16/skinny_bf16.h) streams A for without
// packing: C's row counts around its row blocks (32 rows with op(A) = A, 4
// with A^T) and the driver's pieces (96 rows), pieces of several 256-row
// panels, every n up to 16 (passes of 8 and 4 columns and the rest), k odd
// and even around one vdpbf16ps (32 steps), 1, and over several 64-step
// chunks, op(B) strided in k (copied first), alpha and beta, NaN in C
// with beta = 0, NaN and Inf in A and B (in the last, half-padded pair of
// an odd k too), and DiT's adaLN products (the weight 2304 x 384 streamed,
// the input gradient 384 x 8 x 2304; XL/2's 6912 x 1152 at batch 2) large
// enough for two threads. On such a family each must have run on the
// skinny kernel.
template <typename Ty>
void test_skinny(void **) {
  const bool skinny = skinny_kernel<Ty>();
  auto run = [&](const Case &c) { return check_thin<Ty>(c, skinny ? "skinny" : nullptr); };
  std::mt19937 rng(777 + int(Ty::c));
  const long rows[] = {1, 3, 4, 5, 31, 32, 33, 63, 95, 96, 97, 130, 200};
  const long depths[] = {1, 2, 3, 31, 32, 33, 64, 77, 384};
  std::uniform_int_distribution<long> pick_n(1, hcops::kSkinnyMaxN);
  for (int i = 0; i < 120; ++i) {
    Case c;
    c.m = rows[i % 13];
    c.k = depths[(i / 13 + i) % 9];
    c.n = i < 16 ? i + 1 : pick_n(rng);
    c.ta = i & 1 ? Trans::T : Trans::N;
    randomize(c, rng, 3);
    run(c);
  }
  // Non-finite inputs, the last step of an odd k included (the Inf's step
  // of A is all 0.5, so the NaN is planted at another).
  for (int t = 0; t < 4; ++t)
    run(nonfinite_case(t, {70, 11, 45}, {3 + 20 * t, t == 0 ? 30 : 44}, {t == 0 ? 44 : 7 * t, 10 - t}, 50 + t));
  // Pieces of more than one panel of the ta = N kernel (256 rows at 16
  // columns, 576 at 7), panels of up to 2048 rows (n = 1, 2) in pieces of
  // 512 rows or more, k over several of its chunks (64 steps), the last
  // one odd.
  const long panels[][3] = {{2000, 7, 65}, {1500, 16, 193}, {5000, 1, 3}, {1300, 9, 129}, {9000, 1, 40}, {3000, 2, 131}};
  for (int s = 0; s < 6; ++s) {
    Case c;
    c.m = panels[s][0];
    c.n = panels[s][1];
    c.k = panels[s][2];
    c.ta = s == 3 ? Trans::T : Trans::N;
    c.tb = s == 1 || s == 5 ? Trans::T : Trans::N;
    c.beta = s == 2 ? 0.5f : s == 5 ? 1.0f : 0.0f;
    c.seed = static_cast<unsigned>(600 + s);
    run(c);
  }
  // DiT-S/2's adaLN products at batch 8 and DiT-XL/2's at batch 2 (a 6912
  // x 1152 weight).
  const long adaln[][3] = {{2304, 8, 384}, {384, 8, 2304}, {6912, 2, 1152}, {1152, 2, 6912}};
  bool two_threads = false;
  for (int s = 0; s < 4; ++s)
    for (int b = 0; b < 2; ++b) {
      Case c;
      c.m = adaln[s][0];
      c.n = adaln[s][1];
      c.k = adaln[s][2];
      c.ta = s % 2 == 0 ? Trans::T : Trans::N;  // as a Linear's forward and input gradient reach the engine
      c.tb = Trans::N;
      c.pad_a = c.pad_b = c.pad_c = 0;
      c.beta = b ? 1.0f : 0.0f;
      c.seed = static_cast<unsigned>(900 + 2 * s + b);
      two_threads = run(c).rep.threads == 2 || two_threads;
    }
  if (skinny && hcops::max_threads() == 2 && !two_threads)
    fail_msg("%s: no skinny product ran on 2 threads", Combo<Ty>::name);
}

// Products of at most 16 steps of k (k = 1..16), which a family with a
// shallow kernel (kernels/shallow.h) writes a column at a time: C's rows
// around its 32-row blocks, columns around its groups of 4 and its chunks
// of 128, every transpose (op(A) = A^T gathered, op(B) either way), padded
// leading dimensions, alpha and beta, NaN in C with beta = 0, NaN and Inf
// in A and B, and DiT's adaLN weight gradient (384 x 2304 x 8, NT) on two
// threads. On such a family each must have run on the shallow kernel
// (those of at most 16 columns may go to the skinny one first).
template <typename Ty>
void test_shallow(void **) {
  const bool shallow = shallow_kernel<Ty>();
  auto run = [&](const Case &c) { return check_thin<Ty>(c, shallow ? "shallow" : nullptr); };
  std::mt19937 rng(4321 + int(Ty::c));
  const long rows[] = {1, 15, 16, 17, 31, 32, 33, 64, 95, 200};
  const long cols[] = {17, 19, 20, 21, 127, 128, 129, 260};
  for (int i = 0; i < 96; ++i) {
    Case c;
    c.m = rows[i % 10];
    c.n = cols[(i / 10 + i) % 8];
    c.k = 1 + i % 16;
    c.ta = i & 1 ? Trans::T : Trans::N;
    randomize(c, rng, 3);
    run(c);
  }
  for (int t = 0; t < 4; ++t)  // non-finite inputs
    run(nonfinite_case(t, {45, 37, 7 + t}, {40 - t, t}, {6 + t, 36 - 3 * t}, 70 + t));
  Case adaln;  // DiT's adaLN weight gradient: X^T dY, k = the batch
  adaln.m = 384;
  adaln.n = 2304;
  adaln.k = 8;
  adaln.tb = Trans::T;
  adaln.pad_a = adaln.pad_b = adaln.pad_c = 0;
  adaln.seed = 808;
  const Result r = run(adaln);
  if (shallow && hcops::max_threads() == 2 && r.rep.threads != 2)
    fail_msg("%s: the adaLN weight gradient ran on %d threads, 2 expected", Combo<Ty>::name, r.rep.threads);
}

// Inside the application's parallel region: each thread its own product,
// computed serially (no nested team), right.
template <typename Ty>
void test_in_parallel_region(void **) {
  Result results[2];
  Case cases[2];
  for (int t = 0; t < 2; ++t) {
    cases[t].m = 90 + 13 * t;
    cases[t].n = 70 - 11 * t;
    cases[t].k = 141 + 2 * t;
    cases[t].ta = t ? Trans::T : Trans::N;
    cases[t].beta = t ? 0.5f : 0.0f;
    cases[t].seed = 300 + t;
  }
  int team = 0;
#pragma omp parallel num_threads(2)
  {
    const int t = omp_get_thread_num();
#pragma omp single
    team = omp_get_num_threads();
    for (int i = t; i < 2; i += omp_get_num_threads()) results[i] = run_case<Ty>(cases[i]);
  }
  for (int t = 0; t < 2; ++t) {
    if (!results[t].error.empty()) fail_msg("%s in a parallel region: %s", Combo<Ty>::name, results[t].error.c_str());
    if (team == 2) assert_int_equal(results[t].rep.threads, 1);
    assert_string_equal(results[t].rep.family, expected_family<Ty>());
  }
}

// bf16x3 is meant to be near f32: on random data, at least 100x closer to the
// exact product than bf16 alone.
void test_bf16x3_beats_bf16(void **) {
  for (int t = 0; t < 4; ++t) {
    Case c;
    c.m = 67;
    c.n = 45;
    c.k = 255;
    c.ta = t & 1 ? Trans::T : Trans::N;
    c.tb = t & 2 ? Trans::T : Trans::N;
    c.seed = 4242 + t;
    Result r1, r3;
    check<hcops::SgemmBf16>(c, &r1);
    check<hcops::SgemmBf16x3>(c, &r3);
    std::printf("max error against the exact product (%s): bf16 %.3g, bf16x3 %.3g (%.0fx)\n", describe(c).c_str(),
                r1.max_err_exact, r3.max_err_exact, r1.max_err_exact / r3.max_err_exact);
    if (!(r1.max_err_exact >= 100 * r3.max_err_exact))
      fail_msg("bf16x3's max error %.3g is not 100x below bf16's %.3g", r3.max_err_exact, r1.max_err_exact);
  }
}

// Makes the next product take a workspace made for it (the pool hands out
// the one returned last), so that it must allocate its packing buffers: the
// pool's others were grown by earlier products.
void next_workspace_fresh() {
  std::vector<hcops::Workspace *> held;
  const long made = hcops::workspaces_created();
  while (hcops::workspaces_created() == made) held.push_back(hcops::acquire_workspace());
  hcops::Workspace *fresh = held.back();
  held.pop_back();
  for (hcops::Workspace *w : held) hcops::release_workspace(w);
  hcops::release_workspace(fresh);
}

// The widened tile (avx512/bf16_tile.h) takes a bf16 C block of up to 2048
// steps in one k block, its f32 B panels 96 KiB deep, and deeper products
// through the driver's f32 copy of C: k = 2047 (odd: the last pair padded),
// 2048 and 2051 (an odd step past the block, through the f32 copy), B
// packed from either layout, partial tiles both ways, every result right.
// The one-block depths also with the n-th allocation of a fresh workspace
// refused, n = 0, 1, 2 (the packing buffers: refused, the product runs
// unpacked), which must have been refused. (A refused f32 copy of C rounds
// C after each k block, which this test's bound for a bf16 C does not
// allow.)
template <typename Ty>
void test_deep_k(void **) {
  const hcops::GemmKernel<Ty> *kern = hcops::chosen_kernel<Ty>().kernel;
  if (!kern || !kern->tile_note || !std::is_same_v<typename Ty::c_type, hcops::bf16>) return;
  for (long k : {2047L, 2048L, 2051L})
    for (long n = -1; n < (k <= 2048 ? 3 : 0); ++n)
      for (int t = 0; t < 2; ++t) {
        Case c;
        c.m = 70;
        c.n = 30;
        c.k = k;
        c.tb = t == 1 ? Trans::T : Trans::N;
        c.alpha = t == 1 ? -1.0f : 1.0f;
        c.beta = t == 1 ? 0.5f : 0.0f;
        c.seed = static_cast<unsigned>(91 + 2 * n + t + k);
        const long refused = hcops::fault::allocations_failed();
        if (n >= 0) next_workspace_fresh();
        hcops::fault::fail_allocation_after(n);
        const Result r = run_case<Ty>(c);
        hcops::fault::fail_allocation_after(-1);
        if (!r.error.empty())
          fail_msg("%s: k %ld: %s (allocation %ld refused)", Combo<Ty>::name, k, r.error.c_str(), n);
        // A product of this size packs both operands: at least two allocations.
        if (n >= 0 && n < 2 && hcops::fault::allocations_failed() == refused)
          fail_msg("%s: k %ld, %c: allocation %ld of a fresh workspace was never made", Combo<Ty>::name, k,
                   static_cast<char>(c.tb), n);
      }
}

#define COMBO_TESTS(Ty)                                                                                              \
  cmocka_unit_test(test_random<Ty>), cmocka_unit_test(test_edges_of_k<Ty>), cmocka_unit_test(test_alpha_beta<Ty>),   \
      cmocka_unit_test(test_nonfinite<Ty>), cmocka_unit_test(test_large<Ty>), cmocka_unit_test(test_b_in_place<Ty>), \
      cmocka_unit_test(test_skinny<Ty>), cmocka_unit_test(test_shallow<Ty>),                                         \
      cmocka_unit_test(test_in_parallel_region<Ty>), cmocka_unit_test(test_deep_k<Ty>)

}  // namespace

int main(int argc, char **argv) {
  if (argc > 1) forced_family = argv[1];
  const struct CMUnitTest tests[] = {
      COMBO_TESTS(hcops::Bf16Gemm),    COMBO_TESTS(hcops::Bf16Bf16Gemm),         COMBO_TESTS(hcops::SgemmBf16),
      COMBO_TESTS(hcops::SgemmBf16x3), cmocka_unit_test(test_bf16x3_beats_bf16),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
