// op(A) packed once by the caller for a run of products (gemm/held_a.h), on
// every kernel family this CPU runs and every datatype combination it
// serves: products with the held panels give C bit for bit as without them,
// for several op(B), C and n in a row (the panels must be where a unit's own
// packing would put them: odd m, k over several k blocks, A and A^T, lda past
// the rows, more rows than one unit); the verbose line says "held". A product
// of another op(A) (another address, m, k, lda or transposition) or with
// panels not held packs as usual and is right. Where a product would not read
// packed panels (the skinny and shallow kernels), nothing is held. Also
// gemm() as attention reaches it: the chosen kernels, a bf16 C deeper than
// one k block (through the f32-C copy), and products for the whole team,
// which test_held_a.sh also runs in one part per NUMA domain of synthetic
// machines.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>  // 1.1 has no C++ guard of its own
}

#include <cstdio>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "common/topology.h"
#include "gemm/blocking.h"
#include "gemm/gemm.h"
#include "gemm/gemm_with.h"
#include "gemm/held_a.h"
#include "kernels/registry.h"
#include "whole_a_check.h"

namespace {

using namespace hcops;
using whole_a_check::same_bits;
using whole_a_check::use_of;

std::mt19937 rng(20261202);

template <typename T>
std::vector<T> random_values(size_t n) {
  return whole_a_check::random_values<T>(rng, n);
}

int failures = 0;

void expect(bool ok, const char *family, const char *what, const std::string &detail) {
  if (ok) return;
  std::printf("FAILED %s: %s (%s)\n", family, what, detail.c_str());
  ++failures;
}

// One product of Ty on `kern` with op(B) n wide, C compared with the same
// product without held panels; returns what the product said of op(A).
template <typename Ty>
std::string product(const GemmKernel<Ty> &kern, const char *family, GemmArgs<Ty> g, long n, const HeldPackedA *held,
                    bool *same) {
  using B = typename Ty::b_type;
  using C = typename Ty::c_type;
  std::vector<B> b = random_values<B>(size_t(g.k * n));
  std::vector<C> ref = random_values<C>(size_t(g.m * n)), c = ref;  // beta = 0.5 reads C
  g.n = n;
  g.b = b.data();
  g.ldb = g.k;
  g.beta = 0.5f;
  g.c = ref.data();
  g.ldc = g.m;
  g.a_held = nullptr;
  gemm_with(g, kern, family);
  g.c = c.data();
  g.a_held = held;
  const GemmReport r = gemm_with(g, kern, family);
  *same = same_bits(c, ref);
  return use_of(r);
}

template <typename Ty>
void check_shape(const GemmKernel<Ty> &kern, const char *family, Trans ta, long m, long n, long k) {
  using A = typename Ty::a_type;
  const long ar = ta == Trans::N ? m : k, ac = ta == Trans::N ? k : m, lda = ar + 3;
  std::vector<A> a = random_values<A>(size_t(lda * ac));
  GemmArgs<Ty> g{ta, Trans::N, m, n, k, 1, a.data(), lda, nullptr, k, 0, nullptr, m};
  const std::string shape = std::string(1, char(ta)) + " m=" + std::to_string(m) + " n=" + std::to_string(n) +
                            " k=" + std::to_string(k);
  HeldPackedA held;
  // Held exactly where the product packs op(A): not on the skinny and
  // shallow kernels (n = 1; k <= 16), whose products then read nothing held.
  for (long thin_n : {1L, n}) {
    GemmArgs<Ty> t = g;
    t.n = thin_n;
    std::vector<typename Ty::b_type> b = random_values<typename Ty::b_type>(size_t(k * thin_n));
    std::vector<typename Ty::c_type> c(size_t(m * thin_n));
    t.b = b.data();
    t.c = c.data();
    const std::string path = gemm_with(t, kern, family).b;
    const bool packs = path != "skinny" && path != "shallow";
    const std::string what = shape + " n=" + std::to_string(thin_n) + " (" + path + ")";
    expect(hold_packed_a_with(t, kern, held) == packs, family, "held where the product packs op(A)", what);
    if (packs) continue;
    bool same = false;
    const std::string use = product(kern, family, t, thin_n, &held, &same);
    expect(same && use == "(none)", family, "not packed: nothing read", what + ": " + use);
    if (thin_n == n) return;
  }
  // A block height that is not a multiple of the tile's rows (an mr of 24:
  // SVE at 384 bits) may start units inside a panel: packed as usual.
  const bool units_on_panels = blocking_for_product(topology(), kern, k).mc % kern.mr == 0;
  bool same = false;
  for (long nj : {n, n + 5, 2 * n + 1}) {  // several op(B) and C, one op(A)
    const std::string use = product(kern, family, g, nj, &held, &same);
    expect(same, family, "C with the held panels", shape + " n=" + std::to_string(nj));
    expect(use == "held" || (!units_on_panels && use == "(none)"), family, "the held panels read", shape + ": " + use);
  }
  // Another op(A): another address (the same values), one row fewer, one
  // step less deep, another lda, the other transposition: packed as usual.
  std::vector<A> copy = a;
  GemmArgs<Ty> other = g;
  other.a = copy.data();
  std::string use = product(kern, family, other, n, &held, &same);
  expect(same && use == "(none)", family, "another address: packed as usual", shape + ": " + use);
  other = g;
  other.m = m - 1;
  use = product(kern, family, other, n, &held, &same);
  expect(same && use == "(none)", family, "m - 1: packed as usual", shape + ": " + use);
  other = g;
  other.k = k - 1;
  use = product(kern, family, other, n, &held, &same);
  expect(same && use == "(none)", family, "k - 1: packed as usual", shape + ": " + use);
  other = g;
  other.lda = lda - 1;
  use = product(kern, family, other, n, &held, &same);
  expect(same && use == "(none)", family, "lda - 1: packed as usual", shape + ": " + use);
  if (m == k) {
    other = g;
    other.ta = ta == Trans::N ? Trans::T : Trans::N;
    use = product(kern, family, other, n, &held, &same);
    expect(same && use == "(none)", family, "the other transposition: packed as usual", shape + ": " + use);
  }
  // Panels that are not (or no longer) held: never read.
  held.valid = false;
  use = product(kern, family, g, n, &held, &same);
  expect(same && use == "(none)", family, "panels not held: packed as usual", shape + ": " + use);
}

void test_every_family(void **) {
  const int checked = whole_a_check::every_family("with held panels", [](const auto &kern, const char *family) {
    const long tall = blocking_for_product(topology(), kern, 64).mc + kern.mr + 3;
    for (Trans ta : {Trans::N, Trans::T}) {
      check_shape(kern, family, ta, 67, 45, 700);  // several k blocks, odd rows
      check_shape(kern, family, ta, 2 * kern.mr + 1, 33, 37);
      check_shape(kern, family, ta, tall, 21, 64);  // more rows than one unit
      check_shape(kern, family, ta, 72, 40, 72);    // square: the other transposition too
      check_shape(kern, family, ta, 67, 45, 9);     // shallow where the family has that kernel
    }
  });
  assert_true(checked >= 2);
  assert_int_equal(failures, 0);
}

// Whether a bf16 C product of depth k, deeper than one k block, goes
// through an f32-C kernel that packs op(A) as the chosen kernel does (the
// same packer, tile height and k block): its units then read held panels
// too (the widened tile's f32 panels, read by its f32-C copy).
template <typename Ty>
using WideCOf = GemmTypes<typename Ty::a_type, typename Ty::b_type, typename Ty::acc_type, typename Ty::acc_type,
                          typename Ty::packed_a_type, typename Ty::packed_b_type, Ty::splits>;  // gemm.cpp's WideC
template <typename Ty>
bool wide_c_packs_alike(long k) {
  if constexpr (std::is_same_v<typename Ty::c_type, typename Ty::acc_type>) {
    return false;
  } else {
    const GemmKernel<Ty> *own = chosen_kernel<Ty>().kernel;
    const GemmKernel<WideCOf<Ty>> *wide = chosen_kernel<WideCOf<Ty>>().kernel;
    if (!own || !wide) return false;
    const Blocking ob = blocking_for_product(topology(), *own, k), wb = blocking_for_product(topology(), *wide, k);
    return reinterpret_cast<const void *>(own->pack_a) == reinterpret_cast<const void *>(wide->pack_a) &&
           own->mr == wide->mr && own->panel_scale == wide->panel_scale && ob.kc == wb.kc && ob.mc == wb.mc;
  }
}

// gemm() as attention calls it, on the chosen kernels: C bit for bit as
// without the panels; says which products read them.
// team: a product for the whole team, which on a machine of several
// compute domains (test_held_a.sh's synthetic ones) must run in several
// parts, each reading the held panels.
template <typename Ty>
void through_gemm(const char *what, long m, long n, long k, Trans ta, bool team = false) {
  using A = typename Ty::a_type;
  using B = typename Ty::b_type;
  using C = typename Ty::c_type;
  const long lda = ta == Trans::N ? m : k;
  std::vector<A> a = random_values<A>(size_t(m * k));
  GemmArgs<Ty> g{ta, Trans::N, m, n, k, 1, a.data(), lda, nullptr, k, 0, nullptr, m};
  HeldPackedA held;
  std::vector<B> b = random_values<B>(size_t(k * n));
  g.b = b.data();
  const bool ok = hold_packed_a(g, held);
  expect(ok, what, "held (a packed product on the chosen kernel)", "");
  for (int rep = 0; rep < 2; ++rep) {
    b = random_values<B>(size_t(k * n));
    g.b = b.data();
    std::vector<C> ref(size_t(m * n)), c(size_t(m * n));
    g.c = ref.data();
    g.a_held = nullptr;
    gemm(g);
    g.c = c.data();
    g.a_held = &held;
    const GemmReport r = gemm(g);
    expect(same_bits(c, ref), what, "C through gemm() with the held panels", use_of(r));
    if (rep == 0)
      std::printf("%s %ldx%ldx%ld: %s, %s (%d threads, %d domains)\n", what, m, n, k, ok ? "held" : "not held",
                  use_of(r).c_str(), r.threads, r.domains);
    // Held, then read: the chosen kernel's own products read them wherever
    // its units start on whole panels (not with a block height that is no
    // multiple of the tile's rows: SVE at 384 bits); a bf16 C through the
    // f32-C copy where that kernel packs op(A) alike (wide_c_packs_alike).
    const ChosenKernel<Ty> &chosen = chosen_kernel<Ty>();
    const Blocking blk = blocking_for_product(topology(), *chosen.kernel, k);
    const bool on_panels = blk.mc % chosen.kernel->mr == 0;
    const bool own_kernel = std::is_same_v<C, typename Ty::acc_type> || k <= blk.kc;  // no f32-C copy
    if (on_panels && (own_kernel || wide_c_packs_alike<Ty>(k))) expect(use_of(r) == "held", what, "read", use_of(r));
    if (team && topology().domains.size() > 1)
      expect(r.domains > 1, what, "in one part per domain", std::to_string(r.domains) + " part(s)");
  }
}

void test_through_gemm(void **) {
  through_gemm<Sgemm>("f32", 1024, 128, 72, Trans::T);  // attention's scores: K, S x E
  through_gemm<Sgemm>("f32", 72, 128, 1024, Trans::N);  // O = P V: V
  through_gemm<Bf16Gemm>("bf16 -> f32", 1024, 128, 72, Trans::T);
  through_gemm<Bf16Bf16Gemm>("bf16 -> bf16", 72, 128, 1024, Trans::N);
  // Deeper than the widened tile's k block (2048) for a bf16 C: through the f32-C copy.
  through_gemm<Bf16Bf16Gemm>("bf16 -> bf16", 72, 128, 2100, Trans::N);
  through_gemm<Bf16Bf16Gemm>("bf16 -> bf16", 72, 128, 2100, Trans::T);
  through_gemm<Bf16Bf16Gemm>("bf16 -> bf16", 72, 128, 64, Trans::N);
  // Large enough for the whole team (under a synthetic topology of several
  // NUMA domains, test_held_a.sh: in one part per domain).
  through_gemm<Sgemm>("f32, team", 1536, 384, 300, Trans::N, true);
  through_gemm<Sgemm>("f32, team", 1544, 384, 300, Trans::T, true);
  through_gemm<Bf16Gemm>("bf16 -> f32, team", 1536, 384, 300, Trans::T, true);
  assert_int_equal(failures, 0);
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_family),
      cmocka_unit_test(test_through_gemm),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
