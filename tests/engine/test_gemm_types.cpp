// The driver's datatypes seam: one driver serves f32, f64, and bf16 inputs
// with f32 accumulation into an f32 or a bf16 C. No kernel family serves
// bf16 yet, so the engine must say so (family "none", unpacked) and still be
// right: against an f64 product of the same bf16-rounded inputs, within
// k * 2^-24 * sum|a||b| (f32 accumulation), and a bf16 C within one bf16
// rounding of that. Also the bf16 conversions themselves.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>  // 1.1 has no C++ guard of its own
}

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gemm/gemm.h"
#include "kernels/registry.h"

namespace {

using hcops::bf16;

void test_bf16_conversion(void **) {
  assert_int_equal(bf16(1.0f).bits, 0x3f80);
  assert_int_equal(bf16(-2.0f).bits, 0xc000);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1).
  assert_int_equal(bf16(1.0f + std::ldexp(1.0f, -8)).bits, 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties to even (1 + 2^-6).
  assert_int_equal(bf16(1.0f + 3 * std::ldexp(1.0f, -8)).bits, 0x3f82);
  assert_int_equal(bf16(std::numeric_limits<float>::infinity()).bits, 0x7f80);
  assert_true(std::isnan(float(bf16(std::numeric_limits<float>::quiet_NaN()))));
  // A NaN whose payload sits only in the low half must not round to Inf.
  uint32_t u = 0x7f800001u;
  float snan;
  std::memcpy(&snan, &u, sizeof snan);
  assert_true(std::isnan(float(bf16(snan))));
  assert_true(float(bf16(3.0f)) == 3.0f);
}

template <typename Ty>
void check_product(hcops::Trans ta, hcops::Trans tb, long m, long n, long k) {
  using C = typename Ty::c_type;
  std::mt19937 rng(static_cast<unsigned>(m * 7 + n * 3 + k));
  std::uniform_real_distribution<float> u(-1, 1);
  const long lda = (ta == hcops::Trans::N ? m : k) + 1, ldb = (tb == hcops::Trans::N ? k : n) + 2, ldc = m + 3;
  std::vector<bf16> a(lda * (ta == hcops::Trans::N ? k : m)), b(ldb * (tb == hcops::Trans::N ? n : k));
  for (bf16 &x : a) x = bf16(u(rng));
  for (bf16 &x : b) x = bf16(u(rng));
  std::vector<C> c(ldc * n, C(std::numeric_limits<float>::quiet_NaN()));  // beta = 0 must not read C
  const float alpha = 0.5f;
  const hcops::GemmReport rep =
      hcops::gemm<Ty>({ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, 0.0f, c.data(), ldc});
  assert_string_equal(rep.family, "none");
  assert_string_equal(rep.b, "unpacked");
  auto at = [&](long i, long p) { return double(float(ta == hcops::Trans::N ? a[i + p * lda] : a[p + i * lda])); };
  auto bt = [&](long p, long j) { return double(float(tb == hcops::Trans::N ? b[p + j * ldb] : b[j + p * ldb])); };
  for (long j = 0; j < n; ++j)
    for (long i = 0; i < m; ++i) {
      double want = 0, mag = 0;
      for (long p = 0; p < k; ++p) {
        want += at(i, p) * bt(p, j);
        mag += std::fabs(at(i, p) * bt(p, j));
      }
      want *= alpha;
      double bound = k * std::ldexp(1.0, -24) * alpha * mag + 1e-30;
      if (sizeof(C) == 2) bound += std::fabs(want) * std::ldexp(1.0, -8);  // one bf16 rounding of C
      const double got = double(float(c[i + j * ldc]));
      if (!(std::fabs(got - want) <= bound))
        fail_msg("C(%ld,%ld) = %.9g, want %.9g within %.3g (m=%ld n=%ld k=%ld)", i, j, got, want, bound, m, n, k);
    }
}

void test_bf16_inputs(void **) {
  assert_null(hcops::chosen_kernel<hcops::Bf16Gemm>().kernel);
  for (hcops::Trans ta : {hcops::Trans::N, hcops::Trans::T})
    for (hcops::Trans tb : {hcops::Trans::N, hcops::Trans::T}) {
      check_product<hcops::Bf16Gemm>(ta, tb, 33, 17, 65);
      check_product<hcops::Bf16Bf16Gemm>(ta, tb, 33, 17, 65);
      check_product<hcops::Bf16Gemm>(ta, tb, 1, 5, 1);
    }
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bf16_conversion),
      cmocka_unit_test(test_bf16_inputs),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
