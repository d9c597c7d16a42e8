// Compile-time agreement between the flags a kernel family's translation
// units are built with (configure.ac's ISA_*_FLAGS, src/kernels/<family>/
// family.am, src/ops/ops.am) and the CPU features its row of
// kernels/families.def checks before the dispatch runs it: an instruction
// set the compiler may use but the row does not check would be a SIGILL on
// a CPU without it. Each family translation unit states
//   HCOPS_FAMILY_FLAGS_MATCH(<family>);
// and fails to build when its flags enable more than its row needs.
#pragma once

#include "config.h"  // HCOPS_HAVE_AMX, for families.def

#include <cstdint>

#include "common/cpu_features.h"

// Every CpuFeature bit has its line in compiled(): a bit without one would
// let a flag for that instruction set pass unchecked.
namespace hcops::family_flags {
namespace {  // compiled() differs from one translation unit to the next

// The CpuFeature bits the compiler may use in this translation unit.
constexpr uint64_t compiled() {
  uint64_t f = 0;
#ifdef __SSE2__
  f |= kSse2;
#endif
#ifdef __AVX__
  f |= kAvx;
#endif
#ifdef __FMA__
  f |= kFma;
#endif
#ifdef __AVX2__
  f |= kAvx2;
#endif
#ifdef __AVX512F__
  f |= kAvx512f;
#endif
#ifdef __AVX512DQ__
  f |= kAvx512dq;
#endif
#ifdef __AVX512BW__
  f |= kAvx512bw;
#endif
#ifdef __AVX512VL__
  f |= kAvx512vl;
#endif
#ifdef __AVX512BF16__
  f |= kAvx512Bf16;
#endif
#ifdef __AMX_TILE__
  f |= kAmxTile;
#endif
#ifdef __AMX_BF16__
  f |= kAmxBf16;
#endif
#ifdef __ARM_NEON
  f |= kNeon;
#endif
#ifdef __ARM_FEATURE_SVE
  f |= kSve;
#endif
#ifdef __ARM_FEATURE_SVE2
  f |= kSve2;
#endif
#ifdef __ARM_FEATURE_BF16_VECTOR_ARITHMETIC
  f |= kBf16;
#endif
#ifdef __ARM_FEATURE_MATMUL_INT8
  f |= kI8mm;
#endif
// GCC 12 defines no __ARM_FEATURE_SVE_BF16 for +sve+bf16, yet emits SVE's
// BF16 instructions with both on.
#if defined(__ARM_FEATURE_SVE_BF16) || (defined(__ARM_FEATURE_SVE) && defined(__ARM_FEATURE_BF16_VECTOR_ARITHMETIC))
  f |= kSveBf16;
#endif
#ifdef __ARM_FEATURE_SME
  f |= kSme;
#endif
  return f;
}

}  // namespace

// A row's needs with what they imply architecturally (and what the compiler
// turns on with them): x86-64 has SSE2, AArch64 NEON; AVX-512F includes
// AVX2, AVX2 AVX; SVE2 includes SVE.
constexpr uint64_t closure(uint64_t needs) {
#if defined(__x86_64__)
  needs |= kSse2;
#elif defined(__aarch64__)
  needs |= kNeon;
#endif
  if (needs & kAvx512f) needs |= kAvx2;
  if (needs & kAvx2) needs |= kAvx;
  if (needs & kSve2) needs |= kSve;
  if (needs & kSveBf16) needs |= kSve | kBf16;
  return needs;
}

constexpr bool same(const char *a, const char *b) {
  while (*a && *a == *b) ++a, ++b;
  return *a == *b;
}

// The needs of the row named `name`; none (0) when there is no such row.
constexpr uint64_t row_needs(const char *name) {
#define HCOPS_KERNEL_FAMILY(ns, needs, summary) \
  if (same(name, #ns)) return closure(needs);
#include "kernels/families.def"
#undef HCOPS_KERNEL_FAMILY
  return 0;
}

}  // namespace hcops::family_flags

#define HCOPS_FAMILY_FLAGS_STR_(x) #x
#define HCOPS_FAMILY_FLAGS_STR(x) HCOPS_FAMILY_FLAGS_STR_(x)
#define HCOPS_FAMILY_FLAGS_MATCH(family)                                                                  \
  static_assert(                                                                                          \
      (hcops::family_flags::compiled() & ~hcops::family_flags::row_needs(HCOPS_FAMILY_FLAGS_STR(family))) == 0, \
      "the compiler flags of family " HCOPS_FAMILY_FLAGS_STR(family)                                      \
      " enable instructions its row of kernels/families.def does not check (configure.ac ISA_*_FLAGS)")
