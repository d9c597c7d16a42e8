// HCOPS_CPU_DISABLE (common/cpu_features.cpp, apply_cpu_disable): on a
// made-up CPU with every feature of both architectures, each name turns off
// that feature and every feature extending it, on this architecture only;
// never turns a feature on; separators, case and empty items; unknown names
// and the baseline change nothing. The registry's side (families passed
// over, hcops-info, the verbose note) is tests/engine/test_env.sh's.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>  // 1.1 has no C++ guard of its own
}

#include <cstdint>
#include <string>

#include "common/cpu_features.h"

namespace {

using namespace hcops;

CpuFeatures everything() {
  CpuFeatures f;
  for (bool *b : {&f.sse2, &f.fma, &f.avx, &f.avx2, &f.avx512f, &f.avx512dq, &f.avx512bw, &f.avx512vl,
                  &f.avx512_bf16, &f.amx_tile, &f.amx_bf16, &f.neon, &f.sve, &f.sve2, &f.bf16, &f.sve_bf16, &f.i8mm,
                  &f.sme, &f.sme_f32f32, &f.sme_b16f32, &f.sme_f64f64})
    *b = true;
  return f;
}

#if defined(__aarch64__)
constexpr uint64_t kThisArch = kNeon | kSve | kSve2 | kBf16 | kI8mm | kSme | kSmeF32F32 | kSmeB16F32 | kSveBf16 |
                               kSmeF64F64;
#else
constexpr uint64_t kThisArch = kSse2 | kAvx | kFma | kAvx2 | kAvx512f | kAvx512dq | kAvx512bw | kAvx512vl |
                               kAvx512Bf16 | kAmxTile | kAmxBf16;
#endif

// What `value` turns off, on this architecture's half of the made-up CPU
// (the other half must be untouched), checked against `expect`.
void expect_off(const char *value, uint64_t expect_x86, uint64_t expect_arm) {
#if defined(__aarch64__)
  const uint64_t expect = expect_arm;
  (void)expect_x86;
#else
  const uint64_t expect = expect_x86;
  (void)expect_arm;
#endif
  CpuFeatures f = everything();
  const uint64_t before = f.mask();
  apply_cpu_disable(f, value);
  if (f.disabled != expect || f.mask() != (before & ~expect))
    fail_msg("HCOPS_CPU_DISABLE=\"%s\": turned off %s (expected %s)", value ? value : "(unset)",
             feature_names(f.disabled).c_str(), feature_names(expect).c_str());
  assert_true((f.disabled & ~kThisArch) == 0);
}

constexpr uint64_t kAvx512All = kAvx512f | kAvx512dq | kAvx512bw | kAvx512vl | kAvx512Bf16 | kAmxTile | kAmxBf16;
constexpr uint64_t kSmeAll = kSme | kSmeF32F32 | kSmeB16F32 | kSmeF64F64;

void test_x86_names(void **) {
  expect_off("avx512f", kAvx512All, 0);
  expect_off("avx512_bf16", kAvx512Bf16, 0);
  expect_off("amx_tile", kAmxTile | kAmxBf16, 0);
  expect_off("amx_bf16", kAmxBf16, 0);
  expect_off("avx2", kAvx2 | kAvx512All, 0);
  // fma is not extended by AVX-512 in the ISA; the families need it themselves.
  expect_off("fma", kFma, 0);
  expect_off("avx", kAvx | kFma | kAvx2 | kAvx512All, 0);
}

void test_arm_names(void **) {
  expect_off("sme_f64f64", 0, kSmeF64F64);
  expect_off("sme", 0, kSmeAll);
  // SVE does not carry SME (a CPU may stream without SVE proper); BF16 does.
  expect_off("sve", 0, kSve | kSve2 | kSveBf16);
  expect_off("bf16", 0, kBf16 | kSveBf16 | kSmeAll);
  expect_off("i8mm", 0, kI8mm);
}

void test_syntax(void **) {
  expect_off(nullptr, 0, 0);
  expect_off("", 0, 0);
  expect_off(" , ,,\t\n", 0, 0);
  expect_off("AVX512_BF16,\tSme_F64f64 ", kAvx512Bf16, kSmeF64F64);
  expect_off("amx_bf16 i8mm,", kAmxBf16, kI8mm);
  // Unknown names and the baseline warn and change nothing; the rest applies.
  expect_off("avx512_bf16x,nosuch,sse2,neon", 0, 0);
  expect_off("nosuch,amx_bf16,sme_f64f64,sse2", kAmxBf16, kSmeF64F64);
}

void test_never_on(void **) {
  CpuFeatures f;  // a CPU with nothing but the baseline and AVX2
  f.sse2 = f.neon = true;
  f.avx = f.fma = f.avx2 = true;
  f.sve = true;
  apply_cpu_disable(f, "avx2,sve,amx_tile,sme");
  assert_false(f.avx512f || f.amx_tile || f.amx_bf16 || f.sme || f.sme_f64f64 || f.sve2);
  assert_true(f.sse2 && f.neon);
#if defined(__aarch64__)
  assert_true(f.avx2);  // the other architecture's name does nothing
  assert_int_equal(f.disabled, kSve);
#else
  assert_true(f.sve);
  assert_int_equal(f.disabled, kAvx2);
#endif
  // Applied twice (a second setting): the record accumulates, nothing returns.
  apply_cpu_disable(f, "fma");
#if !defined(__aarch64__)
  assert_int_equal(f.disabled, kAvx2 | kFma);
  assert_false(f.fma || f.avx2);
#endif
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_x86_names),
      cmocka_unit_test(test_arm_names),
      cmocka_unit_test(test_syntax),
      cmocka_unit_test(test_never_on),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
