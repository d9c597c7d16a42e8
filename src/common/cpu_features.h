// What this CPU and OS can execute, from cpuid and XCR0 — never from model
// numbers, which is how a BLAS ends up on an SSE3 kernel on a new CPU.
#pragma once

#include <string>

namespace hcops {

struct CpuFeatures {
  bool sse2 = false, fma = false, avx = false, avx2 = false;
  bool avx512f = false, avx512dq = false, avx512bw = false, avx512vl = false;
  bool avx512_bf16 = false, amx_tile = false, amx_bf16 = false;
  std::string vendor, brand;
  std::string describe() const;  // "avx2 fma avx512f ..." (usable ones only)
};

// Detected once; a feature counts only when the OS also saves its registers.
const CpuFeatures &cpu_features();

// Kernel families, lowest first; `generic` runs on any x86-64.
enum class Isa { generic = 0, avx2 = 1, avx512 = 2 };

const char *isa_name(Isa isa);
Isa best_isa(const CpuFeatures &f);
// best_isa(), lowered by HCOPS_ISA=avx512|avx2|generic; asking for more than
// the CPU has warns once and uses the best the CPU has.
Isa selected_isa();

}  // namespace hcops
