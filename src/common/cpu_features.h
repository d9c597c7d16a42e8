// What this CPU and OS can execute: on x86-64 from cpuid and XCR0, on AArch64
// from the kernel's hardware capabilities (getauxval(AT_HWCAP, AT_HWCAP2)) —
// never from model numbers, which is how a BLAS ends up on an SSE3 kernel on
// a new CPU.
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
  // AArch64. NEON (Advanced SIMD) is in every AArch64 Linux runs on; the
  // SME bits are the streaming-mode outer products into ZA, by datatype.
  kNeon = 1u << 16,
  kSve = 1u << 17,
  kSve2 = 1u << 18,
  kBf16 = 1u << 19,  // BFDOT/BFMMLA (FEAT_BF16)
  kI8mm = 1u << 20,
  kSme = 1u << 21,
  kSmeF32F32 = 1u << 22,
  kSmeB16F32 = 1u << 23,
  kSveBf16 = 1u << 24,  // SVE's BFDOT/BFMMLA (FEAT_BF16 with SVE)
  kSmeF64F64 = 1u << 25,  // SME's f64 outer products (FEAT_SME_F64F64, optional)
};

struct CpuFeatures {
  bool sse2 = false, fma = false, avx = false, avx2 = false;
  bool avx512f = false, avx512dq = false, avx512bw = false, avx512vl = false;
  // amx_*: the CPU has it and XCR0 enables the tile state; the process may
  // still lack Linux's permission for it (tile_state_granted).
  bool avx512_bf16 = false, amx_tile = false, amx_bf16 = false;
  bool neon = false, sve = false, sve2 = false, bf16 = false, sve_bf16 = false, i8mm = false;
  bool sme = false, sme_f32f32 = false, sme_b16f32 = false, sme_f64f64 = false;
  std::string vendor, brand;
  // What HCOPS_CPU_DISABLE turned off (CpuFeature bits, with the features
  // that extend them): the CPU has them, HCOps does not use them.
  uint64_t disabled = 0;
  uint64_t mask() const;         // the CpuFeature bits of the usable features
  std::string describe() const;  // "avx2 fma avx512f ..." (usable ones only)
};

// "avx2 fma" for a set of CpuFeature bits.
std::string feature_names(uint64_t mask);

// Detected once; a feature counts only when the OS also saves its registers,
// and HCOPS_CPU_DISABLE has not turned it off.
const CpuFeatures &cpu_features();

// HCOPS_CPU_DISABLE's value applied to detected features `f`: each name
// (separated by commas or white space, case-insensitive) is turned off, with every
// feature that extends it (avx512f takes avx512_bf16 and the AMX bits with
// it, sme its datatypes, bf16 sme), and recorded in f.disabled. A name of the other
// architecture does nothing (one setting serves a mixed cluster); an unknown
// name, or the baseline (sse2, neon: the generic family needs it), warns
// once and is ignored. Never turns a feature on. (Exposed for the tests.)
void apply_cpu_disable(CpuFeatures &f, const char *value);

// Whether this process may execute tile instructions: on a CPU with AMX,
// Linux's permission is asked on the first call (request_tile_permission)
// and the answer kept; a refusal is said once under HCOPS_VERBOSE. Asked
// lazily, by the registry when a datatype the amx family serves is first
// computed, never by a process that only runs f32/f64 GEMM or operators:
// once granted, Linux enlarges the process's signal frames and refuses
// sigaltstacks too small for the tile state, a cost a host application
// should not pay for nothing.
bool tile_state_granted();
// The CPU and OS have AMX but Linux refused the tile state (asks if not yet asked).
bool tile_state_refused();

// The SVE vector length of the calling thread in bits (Linux: fixed for the
// process unless it changes it), 0 without SVE.
int sve_vector_bits();

// Whether `needs` is out of reach only because HCOPS_CPU_DISABLE turned some
// of it off: the CPU has all the rest (what hcops-info, HCOPS_ISA's warning
// and the registry's verbose note blame on the variable).
bool features_turned_off(uint64_t needs);

// Whether the CPU (and OS, and for AMX Linux's permission) provide every
// CpuFeature bit of `needs`: what a kernel family needs to run here.
bool features_usable(uint64_t needs);

// Asks Linux for the AMX tile data state, XFEATURE_XTILEDATA (18), which a
// process must have before its first tile instruction (else SIGILL):
// arch_prctl(ARCH_GET_XCOMP_PERM) to see if it is already granted, else
// arch_prctl(ARCH_REQ_XCOMP_PERM). Inherited across fork. False when
// refused (e.g. a kernel before 5.16, or a sigaltstack too small for the
// state), with errno set.
bool request_tile_permission();

// Whether the AMX family may run: the CPU has AMX-TILE and AMX-BF16, XCR0
// enables the tile state, and then `request` (request_tile_permission, or a
// test's own) grants it. `request` is never called when the CPU or the OS
// says no: a process on a CPU without AMX never asks.
bool amx_usable(bool cpu_has_amx, bool os_saves_tiles, bool (*request)());

}  // namespace hcops
