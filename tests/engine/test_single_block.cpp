// Small products (one thread's worth of flops, one block in m, n and k) run
// as one block on the calling thread (gemm.cpp's single_block_gemm), not
// through the planner and the team. They must be the general path's
// products bit for bit: the same packing, the same macro-kernel, the same
// sums. Each datatype combination's chosen kernel is run on random shapes,
// transposes, leading dimensions, scalars, NaN and Inf in the operands and
// NaN in C where beta = 0, an epilogue on a third of them, once as it is and once with its
// min_flops_per_thread at 1 (the product is then worth more than one
// thread, so the general path takes it: HCOPS_NUM_THREADS=1 keeps that path
// on one thread), with the skinny and shallow kernels off in both so that
// products of n or k <= 16 take these paths too; and the report must say
// which path ran.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>  // 1.1 has no C++ guard of its own
}

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "gemm/blocking.h"
#include "gemm/gemm.h"
#include "gemm/gemm_with.h"
#include "kernels/registry.h"

namespace {

using hcops::Trans;

template <typename T>
T value(std::mt19937 &rng) {
  std::uniform_real_distribution<float> u(-2, 2);
  std::uniform_int_distribution<int> special(0, 199);
  switch (special(rng)) {
    case 0: return T(std::numeric_limits<float>::quiet_NaN());
    case 1: return T(std::numeric_limits<float>::infinity());
    case 2: return T(-0.0f);
    default: return T(u(rng));
  }
}

// An epilogue that depends on each element's place in C, so that a block
// given the wrong origin shows.
template <typename Acc>
void place_epilogue(const void *, Acc *c, long ldc, long i0, long m, long j0, long n) {
  for (long j = 0; j < n; ++j)
    for (long i = 0; i < m; ++i) c[i + j * ldc] = c[i + j * ldc] * Acc(2) + Acc(i0 + i) - Acc(0.5) * Acc(j0 + j);
}

template <typename Ty>
void compare_paths(const char *what) {
  using A = typename Ty::a_type;
  using B = typename Ty::b_type;
  using C = typename Ty::c_type;
  using Acc = typename Ty::acc_type;
  const hcops::ChosenKernel<Ty> &chosen = hcops::chosen_kernel<Ty>();
  assert_non_null(chosen.kernel);
  hcops::GemmKernel<Ty> one = *chosen.kernel;
  one.skinny = nullptr;
  one.shallow = nullptr;
  hcops::GemmKernel<Ty> general = one;
  general.min_flops_per_thread = 1;
  const hcops::Blocking blk = hcops::blocking_for(hcops::topology(), one);

  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> pick(0, 3), pad(0, 5);
  std::uniform_int_distribution<long> dim(1, 120);
  int one_block = 0, cases = 0;
  // The edges first (1, and around the tile), then random shapes.
  // (The last three are not one block where KC is the family's usual
  // one: k one past KC, m one past MC, and more flops than one thread's
  // worth; the general path then splits k in two, or m.)
  const long edges[][3] = {{1, 1, 1},
                           {one.mr, one.nr, 1},
                           {one.mr + 1, one.nr + 1, 17},
                           {one.mr - 1, one.nr - 1, 33},
                           {2 * one.mr + 3, 3 * one.nr + 1, 100},
                           {17, 17, 17},
                           {5, 7, blk.kc + 1},
                           {blk.mc + 1, 3, 20},
                           {100, 120, 200}};
  constexpr int kEdges = sizeof edges / sizeof *edges;
  constexpr bool c_is_acc = std::is_same_v<C, Acc>;
  for (int c = 0; c < 400; ++c) {
    long m, n, k;
    if (c < kEdges) {
      m = std::max(1L, edges[c][0]);
      n = std::max(1L, edges[c][1]);
      k = edges[c][2];
    } else {
      m = 1 + dim(rng) % std::min(120L, blk.mc + 8);  // mostly one block of rows (f64 on avx2: mc = 64)
      n = dim(rng);
      k = dim(rng) + (c % 7 == 0 ? 150 : 0);
    }
    const Trans ta = pick(rng) & 1 ? Trans::T : Trans::N, tb = pick(rng) & 1 ? Trans::T : Trans::N;
    const long lda = (ta == Trans::N ? m : k) + pad(rng), ldb = (tb == Trans::N ? k : n) + pad(rng), ldc = m + pad(rng);
    std::vector<A> a(lda * (ta == Trans::N ? k : m));
    std::vector<B> b(ldb * (tb == Trans::N ? n : k));
    for (A &x : a) x = value<A>(rng);
    for (B &x : b) x = value<B>(rng);
    const Acc alpha = pick(rng) == 0 ? Acc(-1.5) : Acc(0.75);
    const Acc beta = pick(rng) == 0 ? Acc(0) : Acc(0.5);
    std::vector<C> c0(ldc * n);
    for (C &x : c0) x = beta == Acc(0) ? C(std::numeric_limits<float>::quiet_NaN()) : value<C>(rng);
    std::vector<C> c1 = c0, c2 = c0;
    hcops::GemmArgs<Ty> g1{ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c1.data(), ldc};
    const bool with_epilogue = c_is_acc && c % 3 == 1;  // an epilogue reads and writes C in Acc
    if (with_epilogue) g1.epilogue.apply = &place_epilogue<Acc>;
    hcops::GemmArgs<Ty> g2 = g1;
    g2.c = c2.data();
    const hcops::GemmReport r1 = hcops::gemm_with<Ty>(g1, one, chosen.family->name);
    const hcops::GemmReport r2 = hcops::gemm_with<Ty>(g2, general, chosen.family->name);
    const hcops::Blocking pb = hcops::blocking_for_product(hcops::topology(), one, k);
    if (hcops::single_block_bytes(one, pb, m, n, k, true) > 0) assert_true(r1.one_block);
    if (hcops::single_block_bytes(one, pb, m, n, k, false) == 0) assert_false(r1.one_block);
    assert_false(r2.one_block);
    one_block += r1.one_block;
    ++cases;
    if (std::memcmp(c1.data(), c2.data(), sizeof(C) * c1.size()) != 0) {
      for (size_t i = 0; i < c1.size(); ++i)
        if (std::memcmp(&c1[i], &c2[i], sizeof(C)) != 0)
          fail_msg(
              "%s %c%c %ldx%ldx%ld (lda %ld ldb %ld ldc %ld): C[%zu] = %.9g on one block, %.9g on the general path",
              what, ta == Trans::N ? 'N' : 'T', tb == Trans::N ? 'N' : 'T', m, n, k, lda, ldb, ldc, i,
              double(float(c1[i])), double(float(c2[i])));
    }
  }
  std::printf("# %s on %s (mc %ld, nc %ld, kc %ld): %d of %d products as one block, each equal to the general path's\n",
              what, chosen.family->name, blk.mc, blk.nc, blk.kc, one_block, cases);
  assert_true(one_block > cases / 2);
}

void test_f32(void **) { compare_paths<hcops::Sgemm>("f32"); }
void test_f64(void **) { compare_paths<hcops::Dgemm>("f64"); }
void test_bf16_f32(void **) { compare_paths<hcops::Bf16Gemm>("bf16 -> f32"); }
void test_bf16_bf16(void **) { compare_paths<hcops::Bf16Bf16Gemm>("bf16 -> bf16"); }
void test_f32_as_bf16(void **) { compare_paths<hcops::SgemmBf16>("f32 as bf16"); }
void test_f32_as_bf16x3(void **) { compare_paths<hcops::SgemmBf16x3>("f32 as bf16x3"); }

// A small product from an atexit handler, after glibc has destroyed the
// thread's thread_locals (it does so first): the thread's panels are gone,
// and the product must go the general way, not into unmapped memory.
float g_exit_a[17 * 17], g_exit_b[17 * 17], g_exit_c[17 * 17];
void exit_product() {
  for (float &x : g_exit_c) x = -1;
  const hcops::GemmReport r =
      hcops::gemm<hcops::Sgemm>({Trans::N, Trans::N, 17, 17, 17, 1.0f, g_exit_a, 17, g_exit_b, 17, 0.0f, g_exit_c, 17});
  for (float x : g_exit_c)
    if (x != 17.0f) {
      std::printf("FAIL: a product from an atexit handler gave %g, not 17\n", double(x));
      _exit(1);
    }
  std::printf("# a product from an atexit handler after the thread's panels were destroyed: right (%s)\n",
              r.one_block ? "one block" : "general path");
}

}  // namespace

int main() {
  setenv("HCOPS_NUM_THREADS", "1", 1);  // before the engine's first read: the general path on one thread
  for (float &x : g_exit_a) x = 1;
  for (float &x : g_exit_b) x = 1;
  std::atexit(exit_product);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_f32),       cmocka_unit_test(test_f64),         cmocka_unit_test(test_bf16_f32),
      cmocka_unit_test(test_bf16_bf16), cmocka_unit_test(test_f32_as_bf16), cmocka_unit_test(test_f32_as_bf16x3),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
