// The GEMM engine's epilogue (gemm/gemm.h: GemmArgs::epilogue) with the
// output operations of ops/output_ops.h, through hcops::gemm<Ty> for Sgemm,
// Bf16Gemm, Bf16Bf16Gemm and SgemmBf16, on the kernel family HCOPS_ISA
// selects (test_gemm_epilogue.sh runs it once per family this CPU runs, with
// 1 and 2 threads, passing the family as argv[1]: when it serves the
// datatypes that compute, it must be the one that ran).
//
// The reference: the f64 product of the inputs as the kernel multiplies them
// (bf16, or f32 rounded to bf16 for SgemmBf16; f32 for Sgemm), alpha and
// beta applied, within test_gemm_bf16's bound (k + 2 ceil(k/32) + 6) u T,
// then output_ops_ref.h's reference and bound of the bias and activation. A
// bf16 C is rounded once: within one bf16 ulp of the f64 value of the whole
// expression, plus the bound, and between bf16(ref - bound) and bf16(ref +
// bound) (rounding is monotone), which a C rounded before its epilogue and
// again after fails.
//
// Each bias case runs with Epilogue::row_bias offered (output_epilogue's
// overload for a C of m rows: a bias along rows alone, which the AMX
// kernel adds as it stores C instead of calling apply) and without.
//
// Also: every element gets the epilogue exactly once, at its own
// coordinates, after its final value (an epilogue that adds 1 and counts
// calls per element), on products of one and of several k blocks, alpha = 0,
// k = 0, a bf16 C wider than one of gemm.cpp's f32 column blocks, without
// packing memory (mmap failing: the unpacked path) and without the bf16 C's
// f32 copy, through gemm_with on a bf16 C, and through gemm<Sgemm> in each
// HCOPS_FP32_MATH mode and with a short OpenMP team (the script's last runs:
// `test_gemm_epilogue "" fp32_math|short_team`).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>  // 1.1 has no C++ guard of its own
}

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "common/topology.h"
#include "gemm/team.h"
#include "ops/output_ops_ref.h"
#include "gemm/blocking.h"
#include "gemm/fp32_math.h"
#include "gemm/gemm.h"
#include "gemm/gemm_with.h"
#include "gemm/pack_policy.h"
#include "kernels/registry.h"
#include "ops/output_ops.h"
#include "combo.h"
#include "fail_mmap.h"

// The f32 copy of a bf16 C (gemm.cpp) is a nothrow new[]: while set, it
// fails (the test's own allocations use the throwing forms).
std::atomic<bool> fail_nothrow_new{false};
void *operator new[](size_t size, const std::nothrow_t &) noexcept {
  return fail_nothrow_new.load() ? nullptr : std::malloc(size);  // the default operator delete[] frees it
}

namespace {

using hcops::bf16;
using hcops::Dtype;
using hcops::Trans;
using hcops::ops::Activation;
using hcops::ops::OutputOps;

const char *forced_family = nullptr;  // argv[1]: the family HCOPS_ISA forces
using namespace engine_test;
// What the kernel multiplies when the input is x: rounded to its packed
// type (SgemmBf16: bf16), unless the product ran unpacked (gemm.cpp's
// fallback multiplies the inputs as given).
template <typename Ty, typename T>
double multiplied(T x, bool unpacked) {
  if constexpr (std::is_same_v<typename Ty::packed_a_type, bf16>)
    if (!unpacked) return float(bf16(float(x)));
  return float(x);
}

double round_bf16(double x) {
  if (!std::isfinite(x) || x == 0) return x;
  const int e = std::ilogb(x) - 7;
  return std::ldexp(std::nearbyint(std::ldexp(x, -e)), e);
}
double bf16_ulp(double x) { return x == 0 ? 0x1p-133 : std::ldexp(1.0, std::ilogb(x) - 7); }

// The datatypes whose kernels compute: a bf16 C with an epilogue goes
// through an f32 copy, computed with the f32-C kernels of the same inputs,
// unless its family fuses the epilogue and k fits one block (gemm.cpp).
template <typename Ty>
using Computing =
    hcops::GemmTypes<typename Ty::a_type, typename Ty::b_type, typename Ty::acc_type, typename Ty::acc_type,
                     typename Ty::packed_a_type, typename Ty::packed_b_type, Ty::splits>;

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
template <typename W>
const char *expected_family() {
  if (forced_family_serves<W>()) return forced_family;
  const hcops::ChosenKernel<W> &chosen = hcops::chosen_kernel<W>();
  return chosen.family ? chosen.family->name : "none";
}
// Whether the family that ran is right: that of Ty's kernels, or of the f32-C
// ones for a bf16 C that went through its f32 copy.
template <typename Ty>
bool right_family(const char *ran) {
  return !std::strcmp(ran, expected_family<Ty>()) || !std::strcmp(ran, expected_family<Computing<Ty>>());
}

// The epilogue that counts: adds 1 to each element it is given and counts
// the calls per element of C (at the coordinates it is told), so that an
// element given it twice, never, or at the wrong coordinates shows.
struct Counter {
  long m, n;
  std::unique_ptr<std::atomic<uint8_t>[]> count;
  std::atomic<bool> outside{false};
  Counter(long m_, long n_) : m(m_), n(n_), count(new std::atomic<uint8_t>[std::max(1L, m_ * n_)]) {
    for (long i = 0; i < m * n; ++i) count[i] = 0;
  }
  static void apply(const void *ctx, float *c, long ldc, long i0, long m, long j0, long n) {
    const auto *k = static_cast<const Counter *>(ctx);
    if (i0 < 0 || j0 < 0 || i0 + m > k->m || j0 + n > k->n) {
      const_cast<Counter *>(k)->outside = true;
      return;
    }
    for (long j = 0; j < n; ++j)
      for (long i = 0; i < m; ++i) {
        c[i + j * ldc] += 1.0f;
        ++k->count[(i0 + i) + (j0 + j) * k->m];
      }
  }
  hcops::Epilogue<float> epilogue() const { return {&Counter::apply, this}; }
  std::string check() const {
    if (outside) return "the epilogue was given elements outside C";
    for (long j = 0; j < n; ++j)
      for (long i = 0; i < m; ++i)
        if (count[i + j * m] != 1) {
          char s[120];
          std::snprintf(s, sizeof s, "C(%ld,%ld) got the epilogue %d times", i, j, int(count[i + j * m]));
          return s;
        }
    return "";
  }
};

struct Case {
  Trans ta = Trans::N, tb = Trans::N;
  long m = 0, n = 0, k = 0;
  long pad_a = 1, pad_b = 2, pad_c = 3;
  float alpha = 1, beta = 0;
  unsigned seed = 1;
  // The output operations (the bias values are the test's own).
  bool bias = false;
  Dtype bias_type = Dtype::f32;
  bool bias_rows = false;
  float bias_scale = 1;
  Activation act = Activation::none;
  float act_alpha = 0, act_scale = 1;
  bool special_bias = false;         // NaN and +-Inf among the bias values
  bool row_bias = false;             // output_epilogue(ops, m, storage): Epilogue::row_bias where it applies
  bool counting = false;             // the counting epilogue instead of the output operations
  bool b_null = false;               // alpha = 0 or k = 0: A and B null, never read
  const char *b_expected = nullptr;  // how the engine must report op(B), when set
  long value_columns = 1;            // values checked in every value_columns-th column (and its neighbours)
  long c_offset = 0;                 // C starts this many elements past a 64-byte boundary
};

std::string describe(const Case &c) {
  char s[300];
  std::snprintf(s, sizeof s,
                "m=%ld n=%ld k=%ld ta=%c tb=%c alpha=%g beta=%g seed=%u; bias %s %s %s scale %g; act %s alpha %g "
                "scale %g%s%s",
                c.m, c.n, c.k, char(c.ta), char(c.tb), c.alpha, c.beta, c.seed, c.bias ? "yes" : "no",
                c.bias_type == Dtype::bf16 ? "bf16" : "f32", c.bias_rows ? "rows" : "columns", c.bias_scale,
                outref::name(c.act), c.act_alpha, c.act_scale, c.counting ? " (counting epilogue)" : "",
                c.row_bias ? " (row_bias offered)" : "");
  return s;
}

// One product with its epilogue, checked element by element.
template <typename Ty>
std::string run_case(const Case &cs, hcops::GemmReport *rep_out = nullptr) {
  using A = typename Ty::a_type;
  using B = typename Ty::b_type;
  using C = typename Ty::c_type;
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
  auto a_at = [&](long i, long p) { return cs.ta == Trans::N ? a[i + p * lda] : a[p + i * lda]; };
  auto b_at = [&](long p, long j) { return cs.tb == Trans::N ? b[p + j * ldb] : b[j + p * ldb]; };
  // C at a chosen distance from a 64-byte boundary (a vector's own
  // alignment varies with the allocator), as the shallow kernel's streamed
  // stores depend on it.
  const long c_size = ldc * std::max(1L, n);
  std::vector<C> c_storage(c_size + 64);
  const auto c_addr = reinterpret_cast<uintptr_t>(c_storage.data());
  C *const c = c_storage.data() + ((64 - c_addr % 64) % 64) / sizeof(C) + cs.c_offset;
  for (long i = 0; i < c_size; ++i) c[i] = from_double<C>(cs.beta == 0 ? kNaN : u(rng));  // beta = 0 must not read C
  const std::vector<C> c0(c, c + c_size);

  const long nbias = std::max(m, n) + 1;
  std::vector<float> bias_f32(nbias);
  std::vector<bf16> bias_bf16(nbias);
  const double specials[] = {kNaN, kInf, -kInf};
  for (long i = 0; i < nbias; ++i) {
    bias_f32[i] = cs.special_bias && i % 4 == 1 ? float(specials[(i / 4) % 3]) : 2 * u(rng);
    bias_bf16[i] = bf16(bias_f32[i]);
  }
  OutputOps ops;
  if (cs.bias) {
    ops.bias = cs.bias_type == Dtype::bf16 ? static_cast<const void *>(bias_bf16.data()) : bias_f32.data();
    ops.bias_type = cs.bias_type;
    ops.bias_along_rows = cs.bias_rows;
    ops.bias_scale = cs.bias_scale;
  }
  ops.act = cs.act;
  ops.act_alpha = cs.act_alpha;
  ops.act_scale = cs.act_scale;
  Counter counter(m, n);

  hcops::GemmArgs<Ty> g{
      cs.ta, cs.tb,   m, n,  k, cs.alpha, cs.b_null ? nullptr : a.data(), lda, cs.b_null ? nullptr : b.data(),
      ldb,   cs.beta, c, ldc};
  std::unique_ptr<float[]> row_bias;
  g.epilogue = cs.counting   ? counter.epilogue()
               : cs.row_bias ? hcops::ops::output_epilogue(ops, m, row_bias)
                             : hcops::ops::output_epilogue(ops);
  if (cs.row_bias && cs.bias && cs.bias_rows && cs.bias_scale == 1.0f && cs.act == Activation::none &&
      !g.epilogue.row_bias)
    return "output_epilogue gave no row_bias for a bias along rows alone: " + describe(cs);
  const hcops::GemmReport rep = hcops::gemm<Ty>(g);
  if (rep_out) *rep_out = rep;

  if (cs.counting) {
    const std::string e = counter.check();
    if (!e.empty()) return e + ": " + describe(cs);
  }
  if (cs.b_expected && std::strcmp(rep.b, cs.b_expected) != 0)
    return std::string("B ") + rep.b + ", " + cs.b_expected + " expected: " + describe(cs);
  if (m > 0 && n > 0 && k > 0 && cs.alpha != 0 && std::strcmp(rep.b, "unpacked") != 0 && !right_family<Ty>(rep.family))
    return std::string("family ") + rep.family + " ran, " + expected_family<Computing<Ty>>() +
           " expected: " + describe(cs);
  for (long i = 0; i < c_size; ++i)
    if (i % ldc >= m && std::memcmp(&c[i], &c0[i], sizeof(C)) != 0) return "wrote C outside its m x n: " + describe(cs);

  const double alpha = cs.alpha, beta = cs.beta;
  const bool unpacked = !std::strcmp(rep.b, "unpacked");
  const double adds = double(k) + 2 * double((k + 31) / 32) + 6;
  // op(A) row-major and op(B) column-major, as multiplied: contiguous dot products.
  std::vector<double> ar(alpha != 0 ? m * k : 0), br(alpha != 0 ? k * n : 0);
  for (long i = 0; i < m && alpha != 0; ++i)
    for (long p = 0; p < k; ++p) ar[i * k + p] = multiplied<Ty>(a_at(i, p), unpacked);
  for (long j = 0; j < n && alpha != 0; ++j)
    for (long p = 0; p < k; ++p) br[j * k + p] = multiplied<Ty>(b_at(p, j), unpacked);
  char msg[600];
  for (long j = 0; j < n; ++j)
    for (long i = 0; i < m; ++i) {
      if ((j + 1) % cs.value_columns > 2) break;
      const double cij = beta == 0 ? 0 : beta * as_double(c0[i + j * ldc]);
      double s = 0, mag = 0;
      if (alpha != 0)
        for (long p = 0; p < k; ++p) {
          const double t = ar[i * k + p] * br[j * k + p];
          s += t;
          mag += std::fabs(t);
        }
      const double x = alpha * s + cij;
      const double ex = alpha == 0 ? kU * std::fabs(cij) : adds * kU * (std::fabs(alpha) * mag + std::fabs(cij));
      const outref::Value r =
          cs.counting ? outref::Value{x + 1, ex + kU * std::fabs(x + 1)} : outref::apply(ops, x, ex, i, j);
      const double got = as_double(c[i + j * ldc]);
      auto bad = [&](const char *what, double want, double bound) {
        std::snprintf(msg, sizeof msg, "C(%ld,%ld) = %.9g, want %.9g within %.3g (%s; %s, B %s): %s", i, j, got, want,
                      bound, what, rep.family, rep.b, describe(cs).c_str());
        return std::string(msg);
      };
      if (std::isnan(r.v)) {
        if (!std::isnan(got)) return bad("NaN expected", r.v, 0);
        continue;
      }
      if (std::isinf(r.v)) {
        if (got != r.v) return bad("the same infinity expected", r.v, 0);
        continue;
      }
      if (sizeof(C) == 4) {
        if (!(std::fabs(got - r.v) <= r.bound)) return bad("f32 C", r.v, r.bound);
      } else {
        const double w = round_bf16(r.v), tol = bf16_ulp(w) + r.bound;
        if (!(std::fabs(got - w) <= tol)) return bad("bf16 C within one bf16 ulp", w, tol);
        const double lo = round_bf16(r.v - r.bound), hi = round_bf16(r.v + r.bound);
        if (!(lo <= got && got <= hi)) return bad("bf16 C: rounded once, after the epilogue", r.v, r.bound);
      }
    }
  return "";
}

template <typename Ty>
void check(const Case &cs, hcops::GemmReport *rep = nullptr) {
  const std::string e = run_case<Ty>(cs, rep);
  if (!e.empty()) fail_msg("%s: %s", Combo<Ty>::name, e.c_str());
}

struct ActKind {
  Activation act;
  float alpha, scale;
};
const ActKind kActs[] = {
    {Activation::none, 0, 1},        {Activation::relu, 0, 1},      {Activation::relu, 0.1f, 1},
    {Activation::relu, -2.0f, 0.5f}, {Activation::gelu_tanh, 0, 1}, {Activation::gelu_erf, 0, -1.5f},
    {Activation::swish, 1, 1},       {Activation::swish, 1.7f, 1},  {Activation::swish, -0.5f, 2}};

// The output operations of a case from a number: bias kind (none, f32/bf16
// along rows/columns, bias_scale 1 or not) and activation.
void set_ops(Case &c, unsigned pick) {
  const unsigned bias = pick % 5, act = (pick / 5) % (sizeof kActs / sizeof kActs[0]);
  c.bias = bias != 0;
  c.bias_type = bias == 2 || bias == 4 ? Dtype::bf16 : Dtype::f32;
  c.bias_rows = bias <= 2;
  c.bias_scale = bias == 3 ? -0.5f : bias == 4 ? 1.25f : 1.0f;
  c.act = kActs[act].act;
  c.act_alpha = kActs[act].alpha;
  c.act_scale = kActs[act].scale;
}

const float kScalars[] = {0.0f, 1.0f, -1.0f, 0.5f};

template <typename Ty>
void say_family() {
  Case c;
  c.m = 9;
  c.n = 5;
  c.k = 3;
  c.act = Activation::relu;
  hcops::GemmReport rep;
  check<Ty>(c, &rep);
  std::printf("%s with an epilogue: served by %s (HCOPS_ISA=%s, %d threads)\n", Combo<Ty>::name, rep.family,
              forced_family ? forced_family : "unset", hcops::max_threads());
}

// Random sizes 0..300 (and some k over one k block), transposes, alpha,
// beta, every bias kind and activation.
template <typename Ty>
void test_random(void **) {
  say_family<Ty>();
  std::mt19937 rng(4321 + 7 * int(Ty::c) + 13 * int(Ty::a) + 29 * int(Ty::packed_a));
  std::uniform_int_distribution<long> dim(0, 300), small(0, 40), pad(0, 5), pick(0, 3);
  for (int t = 0; t < 45; ++t) {
    Case c;
    c.m = t < 15 ? small(rng) : dim(rng);
    c.n = t < 15 ? small(rng) : dim(rng);
    c.k = t < 15 ? small(rng) : dim(rng);
    c.ta = pick(rng) & 1 ? Trans::T : Trans::N;
    c.tb = pick(rng) & 1 ? Trans::T : Trans::N;
    c.pad_a = pad(rng);
    c.pad_b = pad(rng);
    c.pad_c = pad(rng);
    c.alpha = kScalars[1 + pick(rng) % 3];
    c.beta = kScalars[pick(rng)];
    c.seed = static_cast<unsigned>(rng());
    set_ops(c, unsigned(t));
    c.row_bias = t & 1;
    check<Ty>(c);
  }
}

// Every bias kind with every activation, on one product of one k block and
// one of several (the per-block path and, for a bf16 C, the copy's both).
template <typename Ty>
void test_every_op(void **) {
  for (unsigned pick = 0; pick < 5 * (sizeof kActs / sizeof kActs[0]); ++pick)
    for (long k : {37L, 700L}) {
      Case c;
      c.m = 45;
      c.n = 29;
      c.k = k;
      c.ta = pick & 1 ? Trans::T : Trans::N;
      c.tb = pick & 2 ? Trans::T : Trans::N;
      c.alpha = pick % 3 == 0 ? -1.0f : 0.5f;
      c.beta = pick % 2 ? 0.5f : 0.0f;
      c.seed = 100 + pick;
      set_ops(c, pick);
      check<Ty>(c);
      c.row_bias = true;  // the same with Epilogue::row_bias offered (taken by the AMX tiles' store)
      check<Ty>(c);
    }
}

// Each element gets the epilogue once: products of one and several k
// blocks, large enough to split over two threads, alpha = 0, k = 0, with and
// without beta.
template <typename Ty>
void test_exactly_once(void **) {
  // k = 520: one k block for a bf16 C on every family that fuses the
  // epilogue (avx2 takes up to 1024 steps: GemmKernel::narrow_c_max_kc);
  // k = 4608 (DiT-XL's fc2): one deep k block on avx512_bf16 and amx, the
  // f32 copy of C on avx2; k = 8221: deeper than a bf16 C takes in one block
  // on any family (blocking.h's kNarrowCMaxKc), so through the f32 copy.
  const long shapes[][3] = {{1, 1, 1},      {17, 13, 7},    {300, 257, 129}, {61, 45, 2101},
                            {97, 400, 520}, {37, 29, 4608}, {33, 21, 8221}};
  static_assert(4608 <= hcops::kNarrowCMaxKc && 8221 > hcops::kNarrowCMaxKc, "one deep k block, then the f32 copy");
  bool two_threads = false;
  for (const auto &s : shapes)
    for (int t = 0; t < 4; ++t) {
      Case c;
      c.m = s[0];
      c.n = s[1];
      c.k = s[2];
      c.ta = t & 1 ? Trans::T : Trans::N;
      c.tb = t & 2 ? Trans::T : Trans::N;
      c.beta = t == 2 ? 0.0f : 0.75f;
      c.seed = unsigned(s[0] + t);
      c.counting = true;
      hcops::GemmReport rep;
      check<Ty>(c, &rep);
      two_threads = two_threads || rep.threads == 2;
    }
  if (hcops::max_threads() == 2 && !two_threads) fail_msg("%s: no product ran on 2 threads", Combo<Ty>::name);
  for (float beta : kScalars) {
    Case c;  // alpha = 0 and k = 0: C = beta C, then the epilogue, A and B never read
    c.m = 23;
    c.n = 11;
    c.k = 5;
    c.alpha = 0;
    c.beta = beta;
    c.b_null = true;
    c.counting = true;
    check<Ty>(c);
    c.k = 0;
    c.alpha = 1;
    check<Ty>(c);
    c.counting = false;
    c.bias = true;
    c.act = Activation::gelu_erf;
    check<Ty>(c);
    c.k = 5;
    c.alpha = 0;
    c.bias_rows = true;
    c.act = Activation::swish;
    c.act_alpha = 1.5f;
    check<Ty>(c);
  }
  for (long m : {0L, 3L}) {  // nothing to do: no call
    Case c;
    c.m = m;
    c.n = 3 - m;
    c.k = 4;
    c.counting = true;
    check<Ty>(c);
  }
}

// NaN and +-Inf reach every activation through the bias; a NaN or Inf in C
// with beta = 0 reaches nothing.
template <typename Ty>
void test_nonfinite(void **) {
  for (unsigned act = 0; act < sizeof kActs / sizeof kActs[0]; ++act)
    for (long k : {9L, 520L}) {
      Case c;
      c.m = 37;
      c.n = 21;
      c.k = k;
      c.beta = act % 2 ? 0.0f : -1.0f;
      c.seed = 7 + act;
      c.bias = true;
      c.bias_rows = act % 2;
      c.bias_type = act % 3 ? Dtype::f32 : Dtype::bf16;
      c.special_bias = true;
      c.act = kActs[act].act;
      c.act_alpha = kActs[act].alpha;
      c.act_scale = kActs[act].scale;
      check<Ty>(c);
    }
}

// A bf16 C wider than one of gemm.cpp's f32 column blocks (64 MiB of f32):
// the epilogue gets C's own column coordinates in every block.
void test_wide_c_blocks(void **) {
  Case c;
  c.m = 70000;  // 239 columns of f32 per 64 MiB
  c.n = 300;
  c.k = 1;
  c.pad_c = 0;
  c.counting = true;
  c.value_columns = 16;  // all counted; the values of one column in 16 (and of its neighbours)
  check<hcops::Bf16Bf16Gemm>(c);
}

// Runs first (packing buffers are reused, so the fallback shows only on a
// call needing more than any before): without packing memory the engine
// computes unpacked, and the epilogue is still applied, once; a bf16 C
// without its f32 copy either is computed unpacked straight into C, and
// rounded once all the same.
void test_unpacked_without_packing_memory(void **) {
  Case tiny;
  tiny.m = tiny.n = tiny.k = 2;
  check<hcops::Sgemm>(tiny);
  check<hcops::Bf16Gemm>(tiny);
  check<hcops::Bf16Bf16Gemm>(tiny);
  check<hcops::SgemmBf16>(tiny);
  fail_mmap = true;
  for (int t = 0; t < 2; ++t) {
    Case c;
    c.m = t ? 33 : 200;
    c.n = t ? 17 : 210;
    c.k = 65;
    c.ta = t ? Trans::T : Trans::N;
    c.beta = 0.5f;
    c.bias = true;
    c.bias_rows = t;
    c.act = Activation::gelu_tanh;
    c.b_expected = "unpacked";
    check<hcops::Sgemm>(c);
    check<hcops::Bf16Gemm>(c);
    check<hcops::Bf16Bf16Gemm>(c);
    check<hcops::SgemmBf16>(c);
    fail_nothrow_new = true;
    check<hcops::Bf16Bf16Gemm>(c);
    fail_nothrow_new = false;
    c.counting = true;
    check<hcops::Sgemm>(c);
    check<hcops::Bf16Bf16Gemm>(c);
    fail_nothrow_new = true;
    check<hcops::Bf16Bf16Gemm>(c);
    fail_nothrow_new = false;
  }
}
int allow_memory(void **) {  // after the test above, also when it failed
  fail_mmap = false;
  fail_nothrow_new = false;
  return 0;
}

// gemm_with on a bf16 C (a test's own kernel, or gemm()'s fallback when the
// f32 copy cannot be had): the epilogue on each block, C rounded by the
// kernel and again after it; every element once.
void test_gemm_with_bf16_c(void **) {
  using Ty = hcops::Bf16Bf16Gemm;
  const hcops::ChosenKernel<Ty> &chosen = hcops::chosen_kernel<Ty>();
  assert_non_null(chosen.kernel);
  const long m = 70, n = 53, k = 600;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<bf16> a(m * k), b(k * n), c(m * n);
  for (bf16 &x : a) x = bf16(u(rng));
  for (bf16 &x : b) x = bf16(u(rng));
  for (bf16 &x : c) x = bf16(float(kNaN));
  Counter counter(m, n);
  hcops::GemmArgs<Ty> g{Trans::N, Trans::N, m, n, k, 1.0f, a.data(), m, b.data(), k, 0.0f, c.data(), m};
  g.epilogue = counter.epilogue();
  hcops::gemm_with(g, *chosen.kernel, chosen.family->name);
  const std::string e = counter.check();
  if (!e.empty()) fail_msg("gemm_with, bf16 C: %s", e.c_str());
  for (long j = 0; j < n; ++j)
    for (long i = 0; i < m; ++i) {
      double s = 0, mag = 0;
      for (long p = 0; p < k; ++p) {
        s += double(float(a[i + p * m])) * double(float(b[p + j * k]));
        mag += std::fabs(double(float(a[i + p * m])) * double(float(b[p + j * k])));
      }
      // Each k block's partial sum rounded to bf16, then + 1, then rounded.
      const double bound = (k + 2 * ((k + 31) / 32) + 6) * kU * mag + (k / 8 + 2) * bf16_ulp(mag + 1);
      const double got = float(c[i + j * m]);
      if (!(std::fabs(got - (s + 1)) <= bound))
        fail_msg("gemm_with, bf16 C: C(%ld,%ld) = %.9g, want %.9g within %.3g", i, j, got, s + 1, bound);
    }
}

// An f32 GEMM in HCOPS_FP32_MATH's mode (gemm<Sgemm> hands it to the bf16
// or bf16x3 datatypes, and says so): the epilogue goes with it. The script runs this alone
// under each mode; the bound is SgemmBf16's against the exact f32 inputs.
void test_fp32_math(void **) {
  std::printf("HCOPS_FP32_MATH: %s\n", hcops::fp32_math_detail().c_str());
  const long m = 150, n = 70, k = 700;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> a(m * k), b(k * n), c(m * n);
  for (float &x : a) x = u(rng);
  for (float &x : b) x = u(rng);
  for (float &x : c) x = float(kNaN);
  Counter counter(m, n);
  hcops::GemmArgs<hcops::Sgemm> g{Trans::N, Trans::T, m, n, k, 1.0f, a.data(), m, b.data(), n, 0.0f, c.data(), m};
  g.epilogue = counter.epilogue();
  const hcops::GemmReport rep = hcops::gemm(g);
  if (rep.math != hcops::fp32_math_detail().c_str())
    fail_msg("gemm<Sgemm> reports math=%s, the engine's mode is %s", rep.math ? rep.math : "(null)",
             hcops::fp32_math_detail().c_str());
  const std::string e = counter.check();
  if (!e.empty()) fail_msg("gemm<Sgemm>: %s", e.c_str());
  for (long j = 0; j < n; ++j)
    for (long i = 0; i < m; ++i) {
      double s = 0, mag = 0;
      for (long p = 0; p < k; ++p) {
        s += double(a[i + p * m]) * double(b[j + p * n]);
        mag += std::fabs(double(a[i + p * m]) * double(b[j + p * n]));
      }
      const double bound = (0x1p-7 + 0x1p-16) * mag + (k + 2 * ((k + 31) / 32) + 6) * kU * 1.02 * mag + kU * (s + 1);
      if (!(std::fabs(c[i + j * m] - (s + 1)) <= bound))
        fail_msg("gemm<Sgemm>: C(%ld,%ld) = %.9g, want %.9g within %.3g", i, j, c[i + j * m], s + 1, bound);
    }
}

// When OpenMP gives a smaller team than planned (the script runs this alone
// with OMP_THREAD_LIMIT=1 and HCOPS_NUM_THREADS=2), the engine plans again
// for one thread: each element still gets the epilogue once.
void test_short_team(void **) {
  assert_int_equal(hcops::max_threads(), 2);
  Case c;
  c.m = 300;
  c.n = 257;
  c.k = 129;
  c.beta = 0.5f;
  c.counting = true;
  hcops::GemmReport rep;
  check<hcops::Sgemm>(c, &rep);
  assert_int_equal(rep.threads, 1);
  check<hcops::Bf16Bf16Gemm>(c, &rep);
  assert_int_equal(rep.threads, 1);
  c.counting = false;
  c.bias = true;
  c.act = Activation::gelu_erf;
  check<hcops::Bf16Gemm>(c);
}

// Shallow products (k <= 16) whose C outgrows the L2 caches of the threads
// writing it: the family's shallow kernel stores C non-temporally
// (kernels/shallow.h; gemm.cpp's shallow_streams_c) when nothing reads C
// back, beta = 0 and no epilogue, and C's columns start on 64-byte lines
// (C and ldc aligned, as PyTorch's tensors are), and must say so
// (GemmReport::c_streamed); with beta != 0, an epilogue, ldc off a multiple
// of a line or C off a line it must not. Each checked in full against f64,
// with rows past the last whole 32-row block, both transposes, and NaN in
// C (beta = 0 never reads it).
template <typename Ty>
void test_shallow_stream(void **) {
  using C = typename Ty::c_type;
  const hcops::ChosenKernel<Ty> &chosen = hcops::chosen_kernel<Ty>();
  if (!chosen.kernel || !chosen.kernel->shallow || !hcops::skinny_allowed()) {
    std::printf("%s: %s has no shallow kernel (or HCOPS_SKINNY=never): streamed C not tested with it\n",
                Combo<Ty>::name, chosen.family ? chosen.family->name : "no family");
    return;
  }
  const long line = 64 / long(sizeof(C));
  const long m = 25 * 32 + 19, k = 7;  // 19 rows past the last whole block
  // Columns for 1.5 times the streaming threshold of the largest team the
  // product may get (fewer threads while the cores are busy: a lower one).
  const long c_bytes = 3 * long(hcops::allowed_threads()) * long(hcops::topology().l2) / 2;
  const long n = c_bytes / (m * long(sizeof(C))) + 5;
  int streamed = 0;
  for (int t = 0; t < 8; ++t) {
    Case c;
    c.m = m + (t & 1 ? 0 : 32 - 19);  // also rows in whole blocks only
    c.n = n;
    c.k = k - t % 3;
    c.ta = t & 2 ? Trans::T : Trans::N;
    c.tb = t & 4 ? Trans::T : Trans::N;
    c.pad_c = t % 4 == 3 ? 1 : (line - c.m % line) % line;  // ldc off a multiple of a line, or on one
    c.c_offset = t == 5 ? 3 : (t == 1 ? line : 0);          // off a line, or a whole line further on
    c.beta = t == 6 ? 0.5f : 0.0f;
    c.alpha = t == 4 ? -0.75f : 1.0f;
    if (t == 7) {  // an epilogue reads C back: not streamed
      c.bias = true;
      c.bias_rows = true;
    }
    c.seed = 9100 + t;
    hcops::GemmReport rep;
    check<Ty>(c, &rep);
    if (std::strcmp(rep.b, "shallow") != 0)
      fail_msg("%s: B %s, shallow expected: %s", Combo<Ty>::name, rep.b, describe(c).c_str());
    const bool want = c.beta == 0 && !c.bias && c.c_offset % line == 0 && (c.m + c.pad_c) % line == 0;
    if (rep.c_streamed != want)
      fail_msg("%s: C %sstreamed, %s expected: %s", Combo<Ty>::name, rep.c_streamed ? "" : "not ",
               want ? "streamed" : "not streamed", describe(c).c_str());
    streamed += rep.c_streamed;
  }
  std::printf("%s: %d of 8 shallow products of %ld x %ld streamed C (%s, up to %d threads, L2 %zu KiB)\n",
              Combo<Ty>::name, streamed, m, n, chosen.family->name, hcops::allowed_threads(),
              hcops::topology().l2 >> 10);
}

}  // namespace

int main(int argc, char **argv) {
  if (argc > 1 && *argv[1]) forced_family = argv[1];
  if (argc > 2 && !std::strcmp(argv[2], "fp32_math")) {
    const struct CMUnitTest only[] = {cmocka_unit_test(test_fp32_math)};
    return cmocka_run_group_tests(only, nullptr, nullptr);
  }
  if (argc > 2 && !std::strcmp(argv[2], "short_team")) {
    const struct CMUnitTest only[] = {cmocka_unit_test(test_short_team)};
    return cmocka_run_group_tests(only, nullptr, nullptr);
  }
#define EPILOGUE_TESTS(Ty)                                                                                         \
  cmocka_unit_test(test_random<Ty>), cmocka_unit_test(test_every_op<Ty>), cmocka_unit_test(test_exactly_once<Ty>), \
      cmocka_unit_test(test_nonfinite<Ty>), cmocka_unit_test(test_shallow_stream<Ty>)
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_unpacked_without_packing_memory, allow_memory),
      EPILOGUE_TESTS(hcops::Sgemm),
      EPILOGUE_TESTS(hcops::Bf16Gemm),
      EPILOGUE_TESTS(hcops::Bf16Bf16Gemm),
      EPILOGUE_TESTS(hcops::SgemmBf16),
      cmocka_unit_test(test_wide_c_blocks),
      cmocka_unit_test(test_gemm_with_bf16_c),
      cmocka_unit_test(test_fp32_math),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
