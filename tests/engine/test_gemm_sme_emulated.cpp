// The sme kernel family on any CPU: its code (kernels/sme/gemm_family.h:
// panels as wide as the streaming vector length, packing, edges, alpha and
// beta, the bf16 rounding of C) on outer products emulated in software
// (kernels/sme/tiles_emulated.h), run through the driver (gemm_with) at
// streaming vector lengths of 128, 256, 512 and 2048 bits, for every
// datatype combination the family serves (tile_check.h's checks), f64 on
// the f64 tiles (FEAT_SME_F64F64) included. First the
// emulation itself against the instructions' definitions, so that a family
// right on the emulation is right on the hardware; make check-aarch64 runs
// the hardware tiles under QEMU.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>  // 1.1 has no C++ guard of its own
}

#include <cmath>
#include <type_traits>
#include <vector>

#include "gemm/gemm_with.h"
#include "kernels/sme/gemm_family.h"
#include "kernels/sme/tiles_emulated.h"
#include "tile_check.h"

namespace {

using hcops::bf16;
using hcops::kernels::sme::EmulatedTiles;

// FMOPA over 3 steps at 128 bits (w = 4, a 8 x 8 block): acc(i, j) = sum_p
// a_p[i] b_p[j], column-major; BFMOPA over 2 pair steps, each element the
// sum of its two products.
void test_emulated_mopa(void **) {
  using T = EmulatedTiles<4>;
  constexpr int n = 8;
  float a[3 * n], b[3 * n], acc[n * n];
  for (int p = 0; p < 3; ++p)
    for (int i = 0; i < n; ++i) a[p * n + i] = float(i + 1) * (p + 1), b[p * n + i] = float(i - p) * 0.5f;
  T::fmopa(3, a, b, acc);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      float want = 0;
      for (int p = 0; p < 3; ++p) want += a[p * n + i] * b[p * n + j];
      assert_float_equal(acc[i + j * n], want, 0.0f);
    }
  bf16 ah[2 * n * 2], bh[2 * n * 2];
  for (int q = 0; q < 2; ++q)
    for (int r = 0; r < n; ++r)
      for (int e = 0; e < 2; ++e) {
        ah[(q * n + r) * 2 + e] = bf16(float(r + e + q));
        bh[(q * n + r) * 2 + e] = bf16(float(r - 2 * e) * 0.25f);
      }
  // FMOPA .d over 3 steps at 128 bits (d = 2, a 4 x 4 block), in f64.
  double ad[3 * 4], bd[3 * 4], accd[4 * 4];
  for (int p = 0; p < 3; ++p)
    for (int i = 0; i < 4; ++i) ad[p * 4 + i] = (i + 1) * (p + 1) / 3.0, bd[p * 4 + i] = (i - p) * 0.1;
  T::dfmopa(3, ad, bd, accd);
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 4; ++i) {
      double want = 0;
      for (int p = 0; p < 3; ++p) want = std::fma(ad[p * 4 + i], bd[p * 4 + j], want);
      assert_true(accd[i + j * 4] == want);
    }
  T::bfmopa(2, ah, bh, acc);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      float want = 0;
      for (int q = 0; q < 2; ++q)
        for (int e = 0; e < 2; ++e) want += float(ah[(q * n + i) * 2 + e]) * float(bh[(q * n + j) * 2 + e]);
      assert_float_equal(acc[i + j * n], want, 0.0f);
    }
}

template <int W, typename Ty>
void check_family() {
  const hcops::GemmKernel<Ty> kern = hcops::kernels::sme::tile_kernel<EmulatedTiles<W>, Ty>();
  const int width = std::is_same_v<typename Ty::acc_type, double> ? W : 2 * W;  // 2 SVL/64 or 2 SVL/32
  assert_int_equal(kern.mr, width);
  assert_int_equal(kern.nr, width);
  const long before = hcops::kernels::sme::emulated_mopa_count.load();
  tile_check::check_all<Ty>(
      kern, [&](const hcops::GemmArgs<Ty> &g) { return hcops::gemm_with<Ty>(g, kern, "sme-emulated"); },
      "sme-emulated");
  assert_true(hcops::kernels::sme::emulated_mopa_count.load() > before);  // the tiles did the work
}

// Every datatype combination at 128 and 512 bits (Apple M4's streaming
// vectors are 512); f32 and bf16 -> bf16 at 256 and 2048 (the largest
// tiles, 128 x 128, where every shape but one is a single edge tile).
template <int W>
void test_all_types(void **) {
  check_family<W, hcops::Sgemm>();
  check_family<W, hcops::Bf16Gemm>();
  check_family<W, hcops::Bf16Bf16Gemm>();
  check_family<W, hcops::SgemmBf16>();
  check_family<W, hcops::SgemmBf16x3>();
  check_family<W, hcops::Dgemm>();  // FMOPA .d (FEAT_SME_F64F64)
}
template <int W>
void test_f32_and_bf16(void **) {
  check_family<W, hcops::Sgemm>();
  check_family<W, hcops::Bf16Bf16Gemm>();
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_emulated_mopa),
      cmocka_unit_test(test_all_types<4>),       // SVL 128
      cmocka_unit_test(test_f32_and_bf16<8>),    // 256
      cmocka_unit_test(test_all_types<16>),      // 512
      cmocka_unit_test(test_f32_and_bf16<64>),   // 2048
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
