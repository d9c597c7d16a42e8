// Whether this CPU's vdpbf16ps is the slower way to a bf16 product: the
// `declines` of the avx512_bf16 family's vdpbf16ps kernels for bf16 inputs
// (kernel.h's KernelRef), which then give way to the family's next kernels
// for those datatypes: the tile widened onto the FMA pipes
// (avx512/bf16_tile.h) with the family's own skinny and shallow kernels.
//
// No CPUID bit says how fast an instruction is, and the CPUs with
// AVX512_BF16 differ by a factor of four: on AMD Zen 4 and Zen 5 one
// vdpbf16ps does twice the flops of an f32 FMA in the same time (hcops-peak:
// 234 against 117 GFLOPS a Zen 4 core); on a 2-core Intel Xeon guest
// (family 6 model 207, no AMX) half (83 against 170). So it is measured,
// once per process, at the first bf16 product: 12 independent chains of
// each instruction (more than latency x throughput on every one of them),
// the same flops both ways (one vdpbf16ps = two FMAs), alternated and best
// of 5, about 0.3 ms in all. The widened tile costs 4 integer ops per 48
// FMAs and one widening of each B panel, so vdpbf16ps is kept unless it is
// well behind: more than 1.3x the FMAs' time. The measured ratios lie far
// either side (0.5 and 2.05), so a disturbed probe does not flip the choice.
// HCOPS_ISA=avx512_bf16 keeps these kernels whatever the probe says
// (registry.cpp); HCOPS_ISA=avx512 takes the widened ones.
#pragma once

#include <immintrin.h>
#include <time.h>

#include <algorithm>
#include <cstdio>

#include "common/fp_env.h"

namespace hcops::kernels::avx512_bf16 {
namespace {

constexpr int kProbeChains = 12;
constexpr long kProbeIters = 1024;

inline double probe_now() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// Seconds for kProbeIters x kProbeChains vdpbf16ps (`dot`) or twice as
// many vfmadd231ps. The operands keep the sums small and normal; the FMAs'
// are inexact, which raises the precision flag in the calling thread: the
// caller's environment is restored after the probe (the probe is our
// bookkeeping, not the caller's arithmetic: abi/test_fp_env checks it).
__attribute__((noinline)) inline double probe_time(bool dot) {
  __m512 acc[kProbeChains];
  for (auto &a : acc) a = _mm512_setzero_ps();
  const __m512bh x = (__m512bh)_mm512_set1_epi16(0x3a80);  // 2^-10
  const __m512 f = _mm512_set1_ps(0.999f), g = _mm512_set1_ps(1e-6f);
  const double t0 = probe_now();
  if (dot) {
    for (long it = 0; it < kProbeIters; ++it) {
#pragma GCC unroll 12
      for (auto &a : acc) a = _mm512_dpbf16_ps(a, x, x);
    }
  } else {
    for (long it = 0; it < kProbeIters; ++it) {
#pragma GCC unroll 12
      for (auto &a : acc) a = _mm512_fmadd_ps(_mm512_fmadd_ps(a, f, g), f, g);
    }
  }
  const double t = probe_now() - t0;
  __m512 s = acc[0];
  for (int i = 1; i < kProbeChains; ++i) s = _mm512_add_ps(s, acc[i]);
  volatile float keep = _mm512_reduce_add_ps(s);  // the chains stay live
  (void)keep;
  return t;
}

// The reason to pass over vdpbf16ps here, or null to keep it. Thread-safe
// (a function-local static), measured once.
inline const char *vdpbf16ps_slower_than_fma() {
  static char reason[160];
  static const bool slower = [] {
    const KeepFpEnv keep;
    double dot = 1e9, fma = 1e9;
    for (int r = 0; r < 5; ++r) {
      dot = std::min(dot, probe_time(true));
      fma = std::min(fma, probe_time(false));
    }
    const double ratio = dot / fma;
    std::snprintf(reason, sizeof reason,
                  "vdpbf16ps takes %.2fx the time of the same flops as f32 FMAs on this CPU (measured): "
                  "bf16 widened onto the FMAs is faster",
                  ratio);
    return ratio > 1.3;
  }();
  return slower ? reason : nullptr;
}

}  // namespace
}  // namespace hcops::kernels::avx512_bf16
