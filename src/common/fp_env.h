// The caller's floating-point environment, kept across foreign code.
//
// A library living in someone else's thread must leave its exception flags,
// rounding mode and MXCSR FTZ/DAZ as it found them: numpy reports any flag
// raised during a product as an error of that product. Foreign code we call
// for our own bookkeeping is not ours to trust: hwloc's XML loader (libxml2
// computes its NaN and infinities at initialisation) raises FE_DIVBYZERO and
// FE_INVALID, and a dlopen runs the opened library's constructors. Every such
// call runs under a guard that saves the environment and restores it after.
// The GEMM arithmetic on the caller's data is not guarded: the flags it
// raises in the calling thread are the caller's (every BLAS raises them).
// Flags raised in OpenMP worker threads stay in those threads, and workers
// compute in the environment they were created with, as with every threaded
// BLAS: a caller who needs its rounding mode or FTZ/DAZ in the product runs
// it on one thread (HCOPS_NUM_THREADS=1).
//
// fegetenv/fesetenv keep the x87 control and status words and MXCSR; glibc
// 2.36 restores all of MXCSR (FTZ and DAZ included, checked) but C does not
// promise it, so MXCSR is also saved and restored explicitly (one ldmxcsr).
// C and C++: the C parts (the reference resolver) use the cleanup attribute.
#pragma once

#include <fenv.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

struct hcops_fp_env {
  fenv_t env;
  unsigned mxcsr;
};

static inline struct hcops_fp_env hcops_fp_env_save(void) {
  struct hcops_fp_env s;
  fegetenv(&s.env);
#if defined(__SSE__)
  s.mxcsr = _mm_getcsr();
#else
  s.mxcsr = 0;
#endif
  return s;
}

static inline void hcops_fp_env_restore(const struct hcops_fp_env *s) {
  fesetenv(&s->env);
#if defined(__SSE__)
  _mm_setcsr(s->mxcsr);
#endif
}

// C: `HCOPS_KEEP_FP_ENV;` at the top of a block restores the environment
// when the block is left, however it is left.
#define HCOPS_KEEP_FP_ENV \
  struct hcops_fp_env hcops_fp_env_saved_ __attribute__((cleanup(hcops_fp_env_restore))) = hcops_fp_env_save()

#ifdef __cplusplus
namespace hcops {

// C++: the environment of the constructing thread, restored by the destructor.
class KeepFpEnv {
 public:
  KeepFpEnv() : saved_(hcops_fp_env_save()) {}
  ~KeepFpEnv() { hcops_fp_env_restore(&saved_); }
  KeepFpEnv(const KeepFpEnv &) = delete;
  KeepFpEnv &operator=(const KeepFpEnv &) = delete;

 private:
  hcops_fp_env saved_;
};

}  // namespace hcops
#endif
