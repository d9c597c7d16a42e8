// The amx kernel family on the hardware: where the CPU has AMX (and Linux
// grants the tile state), the registry must choose it for every bf16
// datatype combination and it must pass the checks of tile_check.h, the
// same as the emulated-tile test. Elsewhere it says plainly that it is
// skipped, and why.
#include "config.h"

#include <cstdio>
#include <cstdlib>

#include "tile_check.h"
#include "common/cpu_features.h"
#include "kernels/registry.h"

namespace {

template <typename Ty>
void check_family() {
  tile_check::check_chosen<Ty>("amx");
}

void test_bf16_f32_c(void **) { check_family<hcops::Bf16Gemm>(); }
void test_bf16_bf16_c(void **) { check_family<hcops::Bf16Bf16Gemm>(); }
void test_f32_as_bf16(void **) { check_family<hcops::SgemmBf16>(); }
void test_f32_as_bf16x3(void **) { check_family<hcops::SgemmBf16x3>(); }

}  // namespace

int main() {
  unsetenv("HCOPS_ISA");  // the registry's own choice, whatever the caller's environment
#ifndef HCOPS_HAVE_AMX
  std::printf("SKIP: test_gemm_amx: the amx family is not built (the compiler lacks the AMX intrinsics)\n");
  return 77;
#else
  const hcops::CpuFeatures &f = hcops::cpu_features();
  if (!f.amx_tile || !f.amx_bf16) {
    std::printf("SKIP: test_gemm_amx: no AMX on this CPU (%s)\n", f.describe().c_str());
    return 77;
  }
  if (hcops::tile_state_refused()) {
    std::printf("SKIP: test_gemm_amx: this CPU has AMX but Linux refused the tile state (%s)\n", f.describe().c_str());
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bf16_f32_c),
      cmocka_unit_test(test_bf16_bf16_c),
      cmocka_unit_test(test_f32_as_bf16),
      cmocka_unit_test(test_f32_as_bf16x3),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
#endif
}
