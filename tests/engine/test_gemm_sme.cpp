// The sme kernel family on the hardware (under QEMU in make check-aarch64):
// where the CPU has SME, the registry must choose it for f32 and every bf16
// datatype combination (and f64 where FEAT_SME_F64F64), and it must pass
// the checks of tile_check.h, the
// same as the emulated-tile test (test_gemm_sme_emulated), through the
// whole driver (gemm()). Elsewhere it says plainly that it is skipped.
#include <cstdio>
#include <cstdlib>

#include "tile_check.h"
#include "common/cpu_features.h"
#include "kernels/registry.h"

namespace {

template <typename Ty>
void check_family() {
  tile_check::check_chosen<Ty>("sme");
}

void test_f32(void **) { check_family<hcops::Sgemm>(); }
void test_bf16_f32_c(void **) { check_family<hcops::Bf16Gemm>(); }
void test_bf16_bf16_c(void **) { check_family<hcops::Bf16Bf16Gemm>(); }
void test_f32_as_bf16(void **) { check_family<hcops::SgemmBf16>(); }
void test_f32_as_bf16x3(void **) { check_family<hcops::SgemmBf16x3>(); }
// The f64 tiles where the CPU has FEAT_SME_F64F64 (QEMU's max CPU does);
// elsewhere DGEMM must go to the next row, never to sme.
void test_f64(void **) {
  if (hcops::cpu_features().sme_f64f64) {
    check_family<hcops::Dgemm>();
  } else {
    std::printf("# no FEAT_SME_F64F64 here: DGEMM from the next row\n");
    const hcops::ChosenKernel<hcops::Dgemm> &chosen = hcops::chosen_kernel<hcops::Dgemm>();
    assert_non_null(chosen.family);
    assert_string_not_equal(chosen.family->name, "sme");
  }
}

}  // namespace

int main() {
  unsetenv("HCOPS_ISA");  // the registry's own choice, whatever the caller's environment
  const hcops::CpuFeatures &f = hcops::cpu_features();
  if (!f.sme || !f.sme_f32f32 || !f.sme_b16f32) {
    std::printf("SKIP: test_gemm_sme: no SME with f32 and bf16 outer products on this CPU (%s)\n",
                f.describe().c_str());
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_f32),         cmocka_unit_test(test_bf16_f32_c),    cmocka_unit_test(test_bf16_bf16_c),
      cmocka_unit_test(test_f32_as_bf16), cmocka_unit_test(test_f32_as_bf16x3), cmocka_unit_test(test_f64),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
