// SME's outer products on the hardware: FMOPA (f32) and BFMOPA (bf16 pairs
// into f32) into the four f32 tiles of ZA, for gemm_family.h. Each call is
// one streaming-mode region: SMSTART (streaming mode and ZA on), ZERO
// {ZA} (or C loaded into it), the k loop (two A and two B vector loads,
// four outer products), the tiles stored column by column (vertical
// slices) to acc or, for an f32 C, to C itself (fmopa_to_c), SMSTOP. Only
// these instructions run in streaming mode: no compiled code, which GCC 12
// would build for non-streaming SVE/NEON (many NEON instructions are
// illegal in streaming mode without FEAT_SME_FA64), and the k loop holds no
// mode switch.
//
// GCC 12 has no SME in -march: each asm block enables it itself
// (.arch_extension sme). SMSTART and SMSTOP zero the Z, P and FFR
// registers, so every vector and predicate register is clobbered (v8-v15's
// low halves are callee-saved: the compiler saves them around the block).
//
// SMSTART and SMSTOP also set FPSR to 0x0800009F (every cumulative flag):
// the region gives the caller's FPSR back (x14). The outer products
// themselves raise no flags: SME's ZA-targeting floating-point
// instructions never update FPSR (nor trap), so an overflowing sgemm on
// this family leaves the caller's flags as they were, where the other
// families add overflow and inexact (tests/abi/test_fp_env.c). The alpha
// and beta arithmetic of fmopa_to_c, inside the region, raises none
// either; that of a bf16 C or an epilogue (gemm_family.h's write_back, in
// C++ after the region) does.
//
// ZA is private to these calls (AAPCS64's SME rules for a function that
// neither shares ZA with its caller nor leaves it on): a caller that keeps
// ZA state of its own across the call has left a lazy save pending
// (TPIDR2_EL0 names its save block), which commit_lazy_save() commits
// before ZA is touched, as __arm_tpidr2_save would: its slices are stored
// to the caller's buffer and TPIDR2_EL0 cleared, so the caller restores
// them on return. Every caller that is not SME-aware (every BLAS and
// PyTorch caller today) has TPIDR2_EL0 = 0: one MRS per call.
#pragma once

#if !defined(__aarch64__)
#error "kernels/sme/tiles_hw.h is AArch64 code"
#endif

#include "common/dtype.h"

namespace hcops::kernels::sme {

struct HwTiles {
  static unsigned bits_of(float x) {
    unsigned u;
    __builtin_memcpy(&u, &x, sizeof u);
    return u;
  }

  // SVL/32: RDSVL runs outside streaming mode too.
  static long words() {
    static const long w = [] {
      long bytes;
      asm volatile(".arch_extension sme\n\trdsvl %0, #1" : "=r"(bytes));
      return bytes / 4;
    }();
    return w;
  }

  // The TPIDR2 block (AAPCS64): the save buffer's address, then the
  // number of ZA slices (rows of SVL bytes) to save in it.
  static void commit_lazy_save() {
    asm volatile(
        ".arch_extension sme\n\t"
        "mrs x9, tpidr2_el0\n\t"
        "cbz x9, 2f\n\t"
        "ldr x10, [x9]\n\t"       /* za_save_buffer */
        "ldrh w11, [x9, #8]\n\t"  /* num_za_save_slices */
        "cbz x10, 1f\n\t"
        "rdsvl x13, #1\n\t"
        "mov w12, #0\n"
        "0:\n\t"
        "cmp x12, x11\n\t"
        "b.ge 1f\n\t"
        "str za[w12, 0], [x10]\n\t"
        "add x10, x10, x13\n\t"
        "add w12, w12, #1\n\t"
        "b 0b\n"
        "1:\n\t"
        "msr tpidr2_el0, xzr\n"
        "2:"
        :
        :
        : "x9", "x10", "x11", "x12", "x13", "cc", "memory");
  }

#define HCOPS_SME_CLOBBERS                                                                                          \
  "x9", "x10", "x11", "x12", "x13", "x14", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", \
      "v13", "v14", "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", \
      "v29", "v30", "v31", "p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9", "p10", "p11", "p12", "p13",      \
      "p14", "p15", "ffr", "cc", "memory"

// The tiles to acc: column j of tile 0 (vertical slice j) is acc's column
// j, rows 0..w-1; tile 1 the rows below; tiles 2 and 3 the columns w + j.
// By element size: CNT counts the w elements of a slice (cntw, cntd), ST1
// stores one (st1w, st1d), ZT names the tiles' element (s, d), LG is log2
// of its bytes (2, 3), LG1 = LG + 1 (a column of acc is 2w elements).
#define HCOPS_SME_STORE_TILES(CNT, ST1, ZT, LG, LG1)                                                     \
  CNT " x9\n\t"              /* w */                                                                      \
  "lsl x10, x9, #" LG1 "\n\t" /* bytes per column of acc */                                              \
  "mov x11, %[acc]\n\t"                                                                                   \
  "mul x13, x9, x10\n\t"                                                                                  \
  "add x13, x11, x13\n\t" /* acc's column w */                                                            \
  "mov w12, #0\n"                                                                                         \
  "3:\n\t" ST1 " {za0v." ZT "[w12, 0]}, p0, [x11]\n\t" ST1 " {za1v." ZT "[w12, 0]}, p0, [x11, x9, lsl #" LG \
  "]\n\t" ST1 " {za2v." ZT "[w12, 0]}, p0, [x13]\n\t" ST1 " {za3v." ZT "[w12, 0]}, p0, [x13, x9, lsl #" LG   \
  "]\n\t"                                                                                                 \
  "add x11, x11, x10\n\t"                                                                                 \
  "add x13, x13, x10\n\t"                                                                                 \
  "add w12, w12, #1\n\t"                                                                                  \
  "cmp x12, x9\n\t"                                                                                       \
  "b.lt 3b\n\t"
#define HCOPS_SME_STORE_ZA HCOPS_SME_STORE_TILES("cntw", "st1w", "s", "2", "3")

// The k loop: LD1 loads (element T) of two A and two B vectors and four
// MOPA outer products into the tiles 0-3 (element ZT) a step, over %[n]
// steps (none when %[n] = 0).
#define HCOPS_SME_K_LOOP_INTO(LD1, T, MOPA, ZT)                                                              \
  "cbz %[n], 2f\n"                                                                                          \
  "1:\n\t" LD1 " {z0." T "}, p0/z, [%[a]]\n\t" LD1 " {z1." T "}, p0/z, [%[a], #1, mul vl]\n\t" LD1          \
  " {z2." T "}, p0/z, [%[b]]\n\t" LD1 " {z3." T "}, p0/z, [%[b], #1, mul vl]\n\t" MOPA " za0." ZT            \
  ", p0/m, p0/m, z0." T ", z2." T "\n\t" MOPA " za1." ZT ", p0/m, p0/m, z1." T ", z2." T "\n\t" MOPA          \
  " za2." ZT ", p0/m, p0/m, z0." T ", z3." T "\n\t" MOPA " za3." ZT ", p0/m, p0/m, z1." T ", z3." T "\n\t"    \
  "addvl %[a], %[a], #2\n\t"                                                                                \
  "addvl %[b], %[b], #2\n\t"                                                                                \
  "subs %[n], %[n], #1\n\t"                                                                                 \
  "b.ne 1b\n"                                                                                               \
  "2:\n\t"
// Into ZA's f32 tiles (FMOPA .s; BFMOPA widens into .s).
#define HCOPS_SME_K_LOOP(LD1, T, MOPA) HCOPS_SME_K_LOOP_INTO(LD1, T, MOPA, "s")

// One streaming-mode region: the k loop, then the tiles to acc.
#define HCOPS_SME_REGION(K_LOOP, STORE) \
  ".arch_extension sme\n\t"             \
  "mrs x14, fpsr\n\t"                   \
  "smstart\n\t"                         \
  "ptrue p0.b\n\t"                      \
  "zero {za}\n\t" K_LOOP STORE          \
  "smstop\n\t"                          \
  "msr fpsr, x14\n\t"

  static void fmopa(long kc, const float *a, const float *b, float *acc) {
    commit_lazy_save();
    asm volatile(HCOPS_SME_REGION(HCOPS_SME_K_LOOP("ld1w", "s", "fmopa"), HCOPS_SME_STORE_ZA)
                 : [n] "+r"(kc), [a] "+r"(a), [b] "+r"(b)
                 : [acc] "r"(acc)
                 : HCOPS_SME_CLOBBERS);
  }

  static void bfmopa(long pairs, const bf16 *a, const bf16 *b, float *acc) {
    commit_lazy_save();
    asm volatile(HCOPS_SME_REGION(HCOPS_SME_K_LOOP("ld1h", "h", "bfmopa"), HCOPS_SME_STORE_ZA)
                 : [n] "+r"(pairs), [a] "+r"(a), [b] "+r"(b)
                 : [acc] "r"(acc)
                 : HCOPS_SME_CLOBBERS);
  }

  // SVL/64: the f64 lanes of a streaming vector (the f64 tiles are d x d).
  static long dwords() { return words() / 2; }

  // The f64 outer products (FMOPA .d, FEAT_SME_F64F64: the family lists
  // this kernel only where the CPU has it) into the tiles ZA0.D-ZA3.D, a
  // 2d x 2d block of C, to acc (2d x 2d doubles). Like the f32 ones they
  // raise no floating-point flag; the C++ write-back after the region does.
  static void dfmopa(long kc, const double *a, const double *b, double *acc) {
    commit_lazy_save();
    // (binutils 2.40 names FEAT_SME_F64F64 "sme-f64"; later ones keep it as
    // an alias of "sme-f64f64".)
    asm volatile(".arch_extension sme-f64\n\t" HCOPS_SME_REGION(
                     HCOPS_SME_K_LOOP_INTO("ld1d", "d", "fmopa", "d"), HCOPS_SME_STORE_TILES("cntd", "st1d", "d", "3", "4"))
                 : [n] "+r"(kc), [a] "+r"(a), [b] "+r"(b)
                 : [acc] "r"(acc)
                 : HCOPS_SME_CLOBBERS);
  }
#undef HCOPS_SME_REGION

// C = alpha ZA + beta C for an f32 C, from the tiles inside the region:
// m x n of C (m, n <= 2w), column j of C as the vertical slices j of ZA0
// (rows 0..w-1) and ZA1 (rows w..2w-1) for j < w, of ZA2 and ZA3 for the
// columns from w; rows past m predicated off (WHILELT). Three ways, by
// `mode`:
//   1 (alpha = 1, beta = 0; PyTorch's mm): ZA stored to C (ST1W of each
//     slice), C never read;
//   2 (alpha = 1, beta = 1; the k blocks after the first): C loaded into
//     ZA before the k loop (LD1W of each slice), the outer products added
//     to it, ZA stored back;
//   0 (any other alpha, beta): each slice read (MOVA), scaled by alpha
//     (FMUL), beta C added (FMLA, one rounding; C not read when beta = 0),
//     stored.
// No pass over a block in memory, and nothing of it outside streaming
// mode. The region gives the caller's FPSR back, so this arithmetic raises
// no flags, as the outer products.
#define HCOPS_SME_COLUMNS(LABEL, BODY)          \
  "mov w12, #0\n" LABEL ":\n\t"                 \
  "cmp x12, x15\n\t"                             \
  "b.ge " LABEL "f\n\t" BODY                    \
  "add x11, x11, %[ldc]\n\t"                    \
  "add w12, w12, #1\n\t"                        \
  "b " LABEL "b\n" LABEL ":\n\t"

// Every column of C in two passes: tiles ZA0/ZA1 (columns 0..n1-1), then
// ZA2/ZA3 (columns w..w+n2-1); x11 walks C's columns.
#define HCOPS_SME_ALL_COLUMNS(BODY, L1, L2)                                         \
  "mov x11, %[c]\n\t"                                                               \
  "mov x15, %[n1]\n\t" HCOPS_SME_COLUMNS(L1, BODY("za0", "za1")) "mov x15, %[n2]\n\t" \
      HCOPS_SME_COLUMNS(L2, BODY("za2", "za3"))

#define HCOPS_SME_LOAD_C(TOP, BOTTOM)                   \
  "ld1w {" TOP "v.s[w12, 0]}, p1/z, [x11]\n\t"          \
  "ld1w {" BOTTOM "v.s[w12, 0]}, p2/z, [x11, x9, lsl #2]\n\t"
#define HCOPS_SME_STORE_C(TOP, BOTTOM)                 \
  "st1w {" TOP "v.s[w12, 0]}, p1, [x11]\n\t"           \
  "st1w {" BOTTOM "v.s[w12, 0]}, p2, [x11, x9, lsl #2]\n\t"
#define HCOPS_SME_SCALE_C(TOP, BOTTOM)                  \
  "mova z4.s, p0/m, " TOP "v.s[w12, 0]\n\t"             \
  "mova z5.s, p0/m, " BOTTOM "v.s[w12, 0]\n\t"          \
  "fmul z4.s, z4.s, z30.s\n\t"                          \
  "fmul z5.s, z5.s, z30.s\n\t"                          \
  "cbz %[has_beta], 7f\n\t"                             \
  "ld1w {z6.s}, p1/z, [x11]\n\t"                        \
  "ld1w {z7.s}, p2/z, [x11, x9, lsl #2]\n\t"            \
  "fmla z4.s, p0/m, z6.s, z31.s\n\t"                    \
  "fmla z5.s, p0/m, z7.s, z31.s\n"                      \
  "7:\n\t"                                              \
  "st1w {z4.s}, p1, [x11]\n\t"                          \
  "st1w {z5.s}, p2, [x11, x9, lsl #2]\n\t"

#define HCOPS_SME_REGION_TO_C(LD1, T, MOPA)                                     \
  ".arch_extension sme\n\t"                                                   \
  "mrs x14, fpsr\n\t"                                                         \
  "smstart\n\t"                                                               \
  "ptrue p0.b\n\t"                                                            \
  "zero {za}\n\t"                                                             \
  "cntw x9\n\t" /* w */                                                       \
  "mov x10, #0\n\t"                                                           \
  "whilelt p1.s, x10, %[m]\n\t" /* rows 0..w-1 of C present */               \
  "whilelt p2.s, x9, %[m]\n\t"  /* rows w..2w-1 */                            \
  "cmp %[mode], #2\n\t"                                                       \
  "b.ne 8f\n\t" HCOPS_SME_ALL_COLUMNS(HCOPS_SME_LOAD_C, "5", "6") "8:\n\t"    \
  HCOPS_SME_K_LOOP(LD1, T, MOPA)                                              \
  "cbz %[mode], 9f\n\t" HCOPS_SME_ALL_COLUMNS(HCOPS_SME_STORE_C, "3", "4")    \
  "b 10f\n"                                                                   \
  "9:\n\t"                                                                    \
  "dup z30.s, %w[alpha]\n\t"                                                  \
  "dup z31.s, %w[beta]\n\t" HCOPS_SME_ALL_COLUMNS(HCOPS_SME_SCALE_C, "3", "4") \
  "10:\n\t"                                                                   \
  "smstop\n\t"                                                                \
  "msr fpsr, x14\n\t"

#define HCOPS_SME_TO_C_OPERANDS                                                                          \
  [alpha] "r"(bits_of(alpha)), [beta] "r"(bits_of(beta)), [has_beta] "r"(long(beta != 0.0f)), [c] "r"(c), \
      [ldc] "r"(ldc * long(sizeof(float))), [m] "r"(long(m)), [n1] "r"(n1), [n2] "r"(n2),                  \
      [mode] "r"(to_c_mode(alpha, beta))

  static long to_c_mode(float alpha, float beta) {
    return alpha == 1.0f && beta == 0.0f ? 1 : alpha == 1.0f && beta == 1.0f ? 2 : 0;
  }

  // m x n of C = alpha (sum over kc steps of a_p (x) b_p) + beta C, from ZA.
  // (acc, the emulation's block, is not used: the sums stay in ZA.)
  static void fmopa_to_c(long kc, const float *a, const float *b, float * /*acc*/, float alpha, float beta, float *c,
                         long ldc, int m, int n) {
    const long w = words(), n1 = n < w ? n : w, n2 = n - w;
    commit_lazy_save();
    asm volatile(HCOPS_SME_REGION_TO_C("ld1w", "s", "fmopa")
                 : [n] "+r"(kc), [a] "+r"(a), [b] "+r"(b)
                 : HCOPS_SME_TO_C_OPERANDS
                 : HCOPS_SME_CLOBBERS, "x15");
  }
  static void bfmopa_to_c(long pairs, const bf16 *a, const bf16 *b, float * /*acc*/, float alpha, float beta,
                          float *c, long ldc, int m, int n) {
    const long w = words(), n1 = n < w ? n : w, n2 = n - w;
    commit_lazy_save();
    asm volatile(HCOPS_SME_REGION_TO_C("ld1h", "h", "bfmopa")
                 : [n] "+r"(pairs), [a] "+r"(a), [b] "+r"(b)
                 : HCOPS_SME_TO_C_OPERANDS
                 : HCOPS_SME_CLOBBERS, "x15");
  }
#undef HCOPS_SME_TO_C_OPERANDS
#undef HCOPS_SME_REGION_TO_C
#undef HCOPS_SME_SCALE_C
#undef HCOPS_SME_STORE_C
#undef HCOPS_SME_LOAD_C
#undef HCOPS_SME_ALL_COLUMNS
#undef HCOPS_SME_COLUMNS
#undef HCOPS_SME_K_LOOP
#undef HCOPS_SME_K_LOOP_INTO
#undef HCOPS_SME_STORE_ZA
#undef HCOPS_SME_STORE_TILES
#undef HCOPS_SME_CLOBBERS
};

}  // namespace hcops::kernels::sme
