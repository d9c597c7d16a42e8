// Small products (one thread's worth of flops, one block in m, n and k) run
// as one block on the calling thread (gemm.cpp's single_block_gemm), not
// through the planner and the team. They must be the general path's
// products bit for bit: the same packing, the same macro-kernel, the same
// sums. Each datatype combination's chosen kernel is run on random shapes,
// transposes, leading dimensions, scalars, NaN and Inf in the operands and
// NaN in C where beta = 0, once as it is and once with its
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

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
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
  const long edges[][3] = {{1, 1, 1},
                           {one.mr, one.nr, 1},
                           {one.mr + 1, one.nr + 1, 17},
                           {one.mr - 1, one.nr - 1, 33},
                           {2 * one.mr + 3, 3 * one.nr + 1, 100},
                           {17, 17, 17}};
  for (int c = 0; c < 400; ++c) {
    long m, n, k;
    if (c < 6) {
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
    const hcops::GemmReport r1 = hcops::gemm_with<Ty>(
        {ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c1.data(), ldc}, one, chosen.family->name);
    const hcops::GemmReport r2 = hcops::gemm_with<Ty>(
        {ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c2.data(), ldc}, general, chosen.family->name);
    const bool expect_one =
        hcops::single_block_bytes(one, hcops::blocking_for_product(hcops::topology(), one, k), m, n, k, true) > 0;
    if (expect_one) assert_true(r1.one_block);
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
void test_f32_as_bf16x3(void **) { compare_paths<hcops::SgemmBf16x3>("f32 as bf16x3"); }

}  // namespace

int main() {
  setenv("HCOPS_NUM_THREADS", "1", 1);  // before the engine's first read: the general path on one thread
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_f32),       cmocka_unit_test(test_f64),           cmocka_unit_test(test_bf16_f32),
      cmocka_unit_test(test_bf16_bf16), cmocka_unit_test(test_f32_as_bf16x3),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
