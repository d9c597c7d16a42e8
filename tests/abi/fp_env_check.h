/* What the floating-point environment tests compare: on x86-64 the x87
 * control word (rounding, precision, exception masks), the x87 exception
 * flags and all of MXCSR (flags, masks, rounding, FTZ, DAZ); on AArch64 all
 * of FPCR and FPSR. Read straight from the CPU so
 * that no libm function between the call and the reading can blur them.
 * The rest of the x87 status word (condition codes, stack top) and the last
 * instruction pointers are not state a caller sets.
 *
 * FP_CHECK(call) puts the thread in a distinctive environment (rounding
 * upward in both units, FTZ and DAZ on, overflow and underflow raised,
 * invalid, divide-by-zero and inexact clear), makes the call and prints
 * "ok: <call>" or "FAIL: <call>: <what changed>". The calls must be given
 * data on which the arithmetic is exact (small integers), so that any change
 * is the library's bookkeeping, not the caller's product. */
#pragma once

#include <fenv.h>
#include <stdio.h>

#if defined(__x86_64__)
#include <xmmintrin.h>

typedef struct {
  unsigned short cw, flags;
  unsigned mxcsr;
} fp_state;

static fp_state fp_now(void) {
  fp_state s;
  unsigned short sw;
  __asm__ volatile("fnstcw %0" : "=m"(s.cw));
  __asm__ volatile("fnstsw %0" : "=m"(sw));
  s.flags = sw & 0x3f;
  s.mxcsr = _mm_getcsr();
  return s;
}

enum { kMxcsrFtz = 0x8000, kMxcsrDaz = 0x0040, kMxcsrUp = 0x4000, kMxcsrOverflow = 0x08, kMxcsrUnderflow = 0x10 };

static void fp_set_distinctive(void) {
  feclearexcept(FE_ALL_EXCEPT);
  fesetround(FE_UPWARD);
  feraiseexcept(FE_OVERFLOW | FE_UNDERFLOW);
  _mm_setcsr(0x1f80 | kMxcsrUp | kMxcsrFtz | kMxcsrDaz | kMxcsrOverflow | kMxcsrUnderflow);
}

static int fp_same(fp_state a, fp_state b) { return a.cw == b.cw && a.flags == b.flags && a.mxcsr == b.mxcsr; }

static void fp_print(const char *what, fp_state before, fp_state after) {
  printf("FAIL: %s: x87 control %#x -> %#x, x87 flags %#x -> %#x, MXCSR %#x -> %#x\n", what, before.cw, after.cw,
         before.flags, after.flags, before.mxcsr, after.mxcsr);
}
#elif defined(__aarch64__)
/* AArch64: FPCR (rounding, flush-to-zero, default NaN) and FPSR (the
 * cumulative exception flags), all of both. */
typedef struct {
  unsigned long fpcr, fpsr;
} fp_state;

static fp_state fp_now(void) {
  fp_state s;
  __asm__ volatile("mrs %0, fpcr" : "=r"(s.fpcr));
  __asm__ volatile("mrs %0, fpsr" : "=r"(s.fpsr));
  return s;
}

enum { kFpcrFz = 1 << 24 };

static void fp_set_distinctive(void) {
  feclearexcept(FE_ALL_EXCEPT);
  fesetround(FE_UPWARD);
  feraiseexcept(FE_OVERFLOW | FE_UNDERFLOW);
  unsigned long fpcr;
  __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
  fpcr |= kFpcrFz;
  __asm__ volatile("msr fpcr, %0" : : "r"(fpcr));
}

static int fp_same(fp_state a, fp_state b) { return a.fpcr == b.fpcr && a.fpsr == b.fpsr; }

static void fp_print(const char *what, fp_state before, fp_state after) {
  printf("FAIL: %s: FPCR %#lx -> %#lx, FPSR %#lx -> %#lx\n", what, before.fpcr, after.fpcr, before.fpsr,
         after.fpsr);
}
#else
#error "fp_env_check.h: no floating-point state reader for this architecture"
#endif

static int fp_checks, fp_failures;

static void fp_report(const char *what, fp_state before, fp_state after) {
  ++fp_checks;
  if (fp_same(before, after)) {
    printf("ok: %s\n", what);
    return;
  }
  ++fp_failures;
  fp_print(what, before, after);
}

#define FP_CHECK(call)                         \
  do {                                         \
    fp_set_distinctive();                      \
    const fp_state fp_before_ = fp_now();      \
    call;                                      \
    const fp_state fp_after_ = fp_now();       \
    fesetenv(FE_DFL_ENV);                      \
    fp_report(#call, fp_before_, fp_after_);   \
  } while (0)

/* The last line of every FP-environment program; exit status 1 on a failure. */
static int fp_summary(const char *program) {
  printf("%s: %d checks, %d failed\n", program, fp_checks, fp_failures);
  return fp_failures != 0;
}
