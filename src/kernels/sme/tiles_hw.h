// SME's outer products on the hardware: FMOPA (f32) and BFMOPA (bf16 pairs
// into f32) into the four f32 tiles of ZA, for gemm_family.h. Each call is
// one streaming-mode region: SMSTART (streaming mode and ZA on), ZERO
// {ZA}, the k loop (two A and two B vector loads, four outer products),
// the tiles stored to acc column by column (vertical slices), SMSTOP. Only
// these instructions run in streaming mode: no compiled code, which GCC 12
// would build for non-streaming SVE/NEON (many NEON instructions are
// illegal in streaming mode without FEAT_SME_FA64), and the k loop holds no
// mode switch.
//
// GCC 12 has no SME in -march: each asm block names the architecture
// itself (.arch armv9-a+sme). SMSTART and SMSTOP zero the Z, P and FFR
// registers, so every vector register is clobbered (v8-v15's low halves are
// callee-saved: the compiler saves them around the block).
//
// ZA is private to these calls: it is off on entry in any process whose
// code is not SME-aware (no lazy save pending, TPIDR2_EL0 = 0), which is
// every BLAS and PyTorch caller; a caller holding dormant ZA state of its
// own would have it discarded (SMSTART ZA does not save it).
#pragma once

#if !defined(__aarch64__)
#error "kernels/sme/tiles_hw.h is AArch64 code"
#endif

#include "common/dtype.h"

namespace hcops::kernels::sme {

struct HwTiles {
  // SVL/32: RDSVL runs outside streaming mode too.
  static long words() {
    static const long w = [] {
      long bytes;
      asm volatile(".arch armv9-a+sme\n\trdsvl %0, #1" : "=r"(bytes));
      return bytes / 4;
    }();
    return w;
  }

#define HCOPS_SME_CLOBBERS                                                                                          \
  "x9", "x10", "x11", "x12", "x13", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", \
      "v13", "v14", "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", \
      "v29", "v30", "v31", "cc", "memory"

// The tiles to acc: column j of ZA0 (vertical slice j) is acc's column j,
// rows 0..w-1; ZA1 the rows below; ZA2 and ZA3 the columns w + j.
#define HCOPS_SME_STORE_ZA                         \
  "cntw x9\n\t"             /* w */                \
  "lsl x10, x9, #3\n\t"     /* bytes per column of acc: 2w floats */ \
  "mov x11, %[acc]\n\t"                            \
  "mul x13, x9, x10\n\t"                           \
  "add x13, x11, x13\n\t"   /* acc's column w */   \
  "mov w12, #0\n"                                  \
  "3:\n\t"                                         \
  "st1w {za0v.s[w12, 0]}, p0, [x11]\n\t"           \
  "st1w {za1v.s[w12, 0]}, p0, [x11, x9, lsl #2]\n\t" \
  "st1w {za2v.s[w12, 0]}, p0, [x13]\n\t"           \
  "st1w {za3v.s[w12, 0]}, p0, [x13, x9, lsl #2]\n\t" \
  "add x11, x11, x10\n\t"                          \
  "add x13, x13, x10\n\t"                          \
  "add w12, w12, #1\n\t"                           \
  "cmp x12, x9\n\t"                                \
  "b.lt 3b\n\t"

// One streaming-mode region: the k loop of LD1 loads (element T) and MOPA
// outer products over %[n] steps, then the tiles to acc.
#define HCOPS_SME_REGION(LD1, T, MOPA)                                          \
  ".arch armv9-a+sme\n\t"                                                     \
  "smstart\n\t"                                                               \
  "ptrue p0.b\n\t"                                                            \
  "zero {za}\n\t"                                                             \
  "cbz %[n], 2f\n"                                                            \
  "1:\n\t" LD1 " {z0." T "}, p0/z, [%[a]]\n\t" LD1 " {z1." T "}, p0/z, [%[a], #1, mul vl]\n\t" LD1 \
  " {z2." T "}, p0/z, [%[b]]\n\t" LD1 " {z3." T "}, p0/z, [%[b], #1, mul vl]\n\t" MOPA                \
  " za0.s, p0/m, p0/m, z0." T ", z2." T "\n\t" MOPA " za1.s, p0/m, p0/m, z1." T ", z2." T "\n\t" MOPA \
  " za2.s, p0/m, p0/m, z0." T ", z3." T "\n\t" MOPA " za3.s, p0/m, p0/m, z1." T ", z3." T "\n\t"      \
  "addvl %[a], %[a], #2\n\t"                                                  \
  "addvl %[b], %[b], #2\n\t"                                                  \
  "subs %[n], %[n], #1\n\t"                                                   \
  "b.ne 1b\n"                                                                 \
  "2:\n\t" HCOPS_SME_STORE_ZA "smstop\n\t"

  static void fmopa(long kc, const float *a, const float *b, float *acc) {
    asm volatile(HCOPS_SME_REGION("ld1w", "s", "fmopa")
                 : [n] "+r"(kc), [a] "+r"(a), [b] "+r"(b)
                 : [acc] "r"(acc)
                 : HCOPS_SME_CLOBBERS);
  }

  static void bfmopa(long pairs, const bf16 *a, const bf16 *b, float *acc) {
    asm volatile(HCOPS_SME_REGION("ld1h", "h", "bfmopa")
                 : [n] "+r"(pairs), [a] "+r"(a), [b] "+r"(b)
                 : [acc] "r"(acc)
                 : HCOPS_SME_CLOBBERS);
  }
#undef HCOPS_SME_REGION
#undef HCOPS_SME_STORE_ZA
#undef HCOPS_SME_CLOBBERS
};

}  // namespace hcops::kernels::sme
