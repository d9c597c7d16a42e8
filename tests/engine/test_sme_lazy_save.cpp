// A caller that keeps ZA state of its own across a GEMM (SME-aware code
// calling a function that does not share ZA: it leaves a lazy save pending,
// TPIDR2_EL0 naming its save block) must find its ZA in its buffer after
// the sme family ran, TPIDR2_EL0 cleared, as AAPCS64 requires of any
// function that uses ZA privately; and the GEMM must be right. AArch64
// with SME only (make check-aarch64 runs it under QEMU); skipped elsewhere.
#include <sys/auxv.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gemm/gemm.h"
#include "kernels/registry.h"

#ifndef HWCAP2_SME
#define HWCAP2_SME (1UL << 23)
#endif

namespace {

struct Tpidr2Block {  // AAPCS64
  void *za_save_buffer;
  uint16_t num_za_save_slices;
  uint8_t reserved[6];
};

long svl_bytes() {
  long b;
  asm volatile(".arch_extension sme\n\trdsvl %0, #1" : "=r"(b));
  return b;
}

uint64_t tpidr2() {
  uint64_t v;
  asm volatile(".arch_extension sme\n\tmrs %0, tpidr2_el0" : "=r"(v));
  return v;
}

int failures = 0;
void check(bool ok, const char *what) {
  std::printf("%s: %s\n", ok ? "PASS" : "FAIL", what);
  failures += !ok;
}

}  // namespace

int main() {
  if (!(getauxval(AT_HWCAP2) & HWCAP2_SME)) {
    std::printf("SKIP: test_sme_lazy_save: this CPU has no SME (hwcap2)\n");
    return 77;
  }
  unsetenv("HCOPS_ISA");  // the registry's own choice, whatever the caller's environment
  const hcops::ChosenKernel<hcops::Sgemm> &chosen = hcops::chosen_kernel<hcops::Sgemm>();
  if (!chosen.family || std::strcmp(chosen.family->name, "sme") != 0) {
    std::printf("FAIL: SME present but sgemm is on %s\n", chosen.family ? chosen.family->name : "none");
    return 1;
  }
  const long svl = svl_bytes();
  std::vector<uint8_t> pattern(svl * svl), saved(svl * svl, 0);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = uint8_t(i * 7 + 3);
  // Half the slices: the commit must save as many as the block says.
  Tpidr2Block blk{saved.data(), uint16_t(svl / 2), {}};

  const long m = 70, n = 45, k = 33;
  std::vector<float> a(m * k), b(k * n), c(m * n, 0.0f);
  for (long i = 0; i < m * k; ++i) a[i] = float(i % 13) - 6.0f;
  for (long i = 0; i < k * n; ++i) b[i] = float(i % 7) * 0.5f - 1.0f;

  // ZA on, its slices the pattern, a lazy save pending.
  asm volatile(
      ".arch_extension sme\n\t"
      "smstart za\n\t"
      "mov x10, %[p]\n\t"
      "mov w12, #0\n"
      "1:\n\t"
      "ldr za[w12, 0], [x10]\n\t"
      "add x10, x10, %[svl]\n\t"
      "add w12, w12, #1\n\t"
      "cmp x12, %[svl]\n\t"
      "b.lt 1b\n\t"
      "msr tpidr2_el0, %[blk]"
      :
      : [p] "r"(pattern.data()), [svl] "r"(svl), [blk] "r"(&blk)
      : "x10", "x12", "cc", "memory");
  const hcops::GemmArgs<hcops::Sgemm> args{hcops::Trans::N, hcops::Trans::N, m, n, k, 1.0f, a.data(), m,
                                          b.data(),          k,               0.0f, c.data(), m};
  const hcops::GemmReport rep = hcops::gemm(args);
  const uint64_t after = tpidr2();
  asm volatile(".arch_extension sme\n\tsmstop za" ::: "memory");

  check(std::strcmp(rep.family, "sme") == 0, "the GEMM ran on sme");
  check(after == 0, "TPIDR2_EL0 cleared (the lazy save committed)");
  check(std::memcmp(saved.data(), pattern.data(), svl * svl / 2) == 0, "the caller's ZA slices in its save buffer");
  bool rest_untouched = true;
  for (long i = svl * svl / 2; i < svl * svl; ++i) rest_untouched = rest_untouched && saved[i] == 0;
  check(rest_untouched, "no slice past num_za_save_slices written");
  double worst = 0;
  for (long j = 0; j < n; ++j)
    for (long i = 0; i < m; ++i) {
      double want = 0;
      for (long p = 0; p < k; ++p) want += double(a[i + p * m]) * b[p + j * k];
      worst = std::fmax(worst, std::fabs(c[i + j * m] - want));
    }
  check(worst == 0, "the product exact (small integers and halves)");
  return failures ? 1 : 0;
}
