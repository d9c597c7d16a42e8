// What this CPU and OS can execute, from cpuid and XCR0 — never from model
// numbers, which is how a BLAS ends up on an SSE3 kernel on a new CPU.
#pragma once

#include <cstdint>
#include <string>

namespace hcops {

// One bit per feature a kernel family may need (kernels/families.def).
enum CpuFeature : uint64_t {
  kSse2 = 1u << 0,
  kAvx = 1u << 1,
  kFma = 1u << 2,
  kAvx2 = 1u << 3,
  kAvx512f = 1u << 4,
  kAvx512dq = 1u << 5,
  kAvx512bw = 1u << 6,
  kAvx512vl = 1u << 7,
  kAvx512Bf16 = 1u << 8,
  kAmxTile = 1u << 9,
  kAmxBf16 = 1u << 10,
};

struct CpuFeatures {
  bool sse2 = false, fma = false, avx = false, avx2 = false;
  bool avx512f = false, avx512dq = false, avx512bw = false, avx512vl = false;
  bool avx512_bf16 = false, amx_tile = false, amx_bf16 = false;
  std::string vendor, brand;
  uint64_t mask() const;         // the CpuFeature bits of the usable features
  std::string describe() const;  // "avx2 fma avx512f ..." (usable ones only)
};

// "avx2 fma" for a set of CpuFeature bits.
std::string feature_names(uint64_t mask);

// Detected once; a feature counts only when the OS also saves its registers.
const CpuFeatures &cpu_features();

}  // namespace hcops
