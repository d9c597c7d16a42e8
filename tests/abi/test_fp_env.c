/* libhcops.so must leave its caller's floating-point environment as it found
 * it (see abi/fp_env_check.h): every entry point is called from a distinctive
 * environment, on small-integer data whose arithmetic is exact, and the
 * environment compared after the call. The first GEMM loads the topology
 * (hwloc, HWLOC_XMLFILE's XML) and starts the threads; the first forwarded
 * call opens the reference BLAS. Run by test_fp_env.sh with HWLOC_XMLFILE
 * unset, set to this machine's XML and to tests/topologies files.
 * Prints one line per call and "test_fp_env: N checks, F failed". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#if defined(__aarch64__)
#include <sys/auxv.h>
#endif

#include "abi/fp_env_check.h"
#include "cblas.h"
#include "hcops.h"

#include "config.h"

#ifdef HCOPS_HAVE_DNNL
/* The oneDNN layer (shim/dnnl/): its two GEMMs, and a forwarded call that
 * opens the real libdnnl (whose constructors run in the caller's thread).
 * Declared here: the test links no libdnnl. */
int dnnl_sgemm(char, char, long, long, long, float, const float *, long, const float *, long, float, float *, long);
int dnnl_gemm_bf16bf16f32(char, char, long, long, long, float, const bfloat16 *, long, const bfloat16 *, long, float,
                          float *, long);
const void *dnnl_version(void);
#endif

void sgemm_(const char *, const char *, const int *, const int *, const int *, const float *, const float *,
            const int *, const float *, const int *, const float *, float *, const int *);
void dgemm_(const char *, const char *, const int *, const int *, const int *, const double *, const double *,
            const int *, const double *, const int *, const double *, double *, const int *);
void sbgemm_(const char *, const char *, const int *, const int *, const int *, const float *, const bfloat16 *,
             const int *, const bfloat16 *, const int *, const float *, float *, const int *);
void daxpy_(const int *, const double *, const double *, const int *, double *, const int *);
void sscal_(const int *, const float *, float *, const int *);

/* Argument errors come here instead of the reference's message and exit. */
static int xerbla_info;
void xerbla_(const char *name, const int *info, int len) {
  (void)name;
  (void)len;
  xerbla_info = *info;
}

enum { N = 96 };
static float sa[N * N], sb[N * N], sc[N * N];
static double da[N * N], db[N * N], dc[N * N];
static bfloat16 ba[N * N], bb[N * N]; /* sa, sb as bf16: small integers, exact */
static float bc[N * N];

int main(void) {
  for (int i = 0; i < N * N; ++i) {
    sa[i] = (float)(i % 7) - 3;
    sb[i] = (float)(i % 5) - 2;
    da[i] = sa[i];
    db[i] = sb[i];
    union {
      float f;
      unsigned u;
    } x = {sa[i]}, y = {sb[i]};
    ba[i] = (bfloat16)(x.u >> 16);
    bb[i] = (bfloat16)(y.u >> 16);
  }
  const int n = N, bad = -1, inc = 1;
  const float sone = 1, szero = 0, stwo = 2;
  const double done = 1, dzero = 0;
  FILE *devnull = fopen("/dev/null", "w");
  if (!devnull) return 2;

  FP_CHECK(sgemm_("N", "N", &n, &n, &n, &sone, sa, &n, sb, &n, &szero, sc, &n));
  FP_CHECK(sgemm_("T", "N", &n, &n, &n, &sone, sa, &n, sb, &n, &sone, sc, &n));
  FP_CHECK(dgemm_("N", "T", &n, &n, &n, &done, da, &n, db, &n, &dzero, dc, &n));
  FP_CHECK(cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1, sa, N, sb, N, 0, sc, N));
  FP_CHECK(cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, N, N, N, 1, da, N, db, N, 1, dc, N));
  FP_CHECK(sbgemm_("N", "T", &n, &n, &n, &sone, ba, &n, bb, &n, &szero, bc, &n));
  FP_CHECK(cblas_sbgemm(CblasRowMajor, CblasTrans, CblasNoTrans, N, N, N, 1, ba, N, bb, N, 1, bc, N));
  FP_CHECK(cblas_gemm_bf16bf16f32(CblasColMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1, ba, N, bb, N, 0, bc, N));
#ifdef HCOPS_HAVE_DNNL
  static float dnnl_c[N * N];
  FP_CHECK(dnnl_sgemm('N', 'T', N, N, N, 1, sa, N, sb, N, 0, dnnl_c, N));
  FP_CHECK(dnnl_gemm_bf16bf16f32('T', 'N', N, N, N, 1, ba, N, bb, N, 1, dnnl_c, N));
  FP_CHECK(dnnl_version());
#endif
  FP_CHECK(sgemm_("N", "N", &bad, &n, &n, &sone, sa, &n, sb, &n, &szero, sc, &n));
  FP_CHECK(daxpy_(&n, &done, da, &inc, dc, &inc));
  FP_CHECK(sscal_(&n, &stwo, sc, &inc));
  FP_CHECK(hcops_version());
  FP_CHECK(hcops_kernel_families());
  FP_CHECK(hcops_underlying_blas());
  FP_CHECK(hcops_print_info(devnull, N, N, N));
  fclose(devnull);

  /* The results, so that a guard that skipped a call cannot pass: C = A*B
   * (row-major) from the last cblas_sgemm, sscal'ed by 2. */
  int wrong = 0;
  for (int i = 0; i < N && !wrong; ++i)
    for (int j = 0; j < N; ++j) {
      float ref = 0;
      for (int p = 0; p < N; ++p) ref += sa[i * N + p] * sb[p * N + j];
      if (i == 0) ref *= 2; /* sscal_ scaled the first N elements: row 0 */
      if (sc[i * N + j] != ref) wrong = 1;
    }
  if (wrong || xerbla_info != 3) {
    printf("FAIL: wrong results (product %s, xerbla_ info %d, want 3)\n", wrong ? "wrong" : "right", xerbla_info);
    ++fp_failures;
  }
  /* The product's own flags are the caller's: a guard around the arithmetic
   * (rather than around HCOps's bookkeeping) would swallow them. Small
   * enough to run in the calling thread. */
  {
    enum { M = 8 };
    static double big[M * M], out[M * M];
    for (int i = 0; i < M * M; ++i) big[i] = 1e300;
    const int m = M;
    fesetenv(FE_DFL_ENV);
    dgemm_("N", "N", &m, &m, &m, &done, big, &m, big, &m, &dzero, out, &m);
    const int raised = fetestexcept(FE_OVERFLOW | FE_INEXACT);
    ++fp_checks;
    /* The sme family's f64 outer products (FEAT_SME_F64F64, hwcap2 bit 25)
     * raise none either, and its write-back of 1 * Inf none: on such a CPU
     * none is the right answer, as for sgemm below. */
    int dwant = FE_OVERFLOW | FE_INEXACT;
#if defined(__aarch64__)
    const char *disa = getenv("HCOPS_ISA");
    if ((getauxval(AT_HWCAP2) & (1UL << 23)) && (getauxval(AT_HWCAP2) & (1UL << 25)) &&
        (!disa || !*disa || !strcasecmp(disa, "sme")))
      dwant = 0;
#endif
    if (raised != dwant || out[0] <= 1e308) {
      printf("FAIL: an overflowing dgemm_ left flags %#x (want %#x), c[0] %g\n", raised, dwant, out[0]);
      ++fp_failures;
    } else {
      printf("ok: an overflowing dgemm_ leaves flags %#x to the caller\n", dwant);
    }
    fesetenv(FE_DFL_ENV);
    /* The same in f32, whose family may compute elsewhere than in the
     * caller's FP state (SME's streaming mode resets FPSR on entry and exit). */
    static float fbig[M * M], fout[M * M];
    const float fone = 1.0f, fzero = 0.0f;
    for (int i = 0; i < M * M; ++i) fbig[i] = 1e30f;
    sgemm_("N", "N", &m, &m, &m, &fone, fbig, &m, fbig, &m, &fzero, fout, &m);
    const int fraised = fetestexcept(FE_ALL_EXCEPT);
    ++fp_checks;
    /* SME's outer products into ZA raise no flags, by architecture: on a
     * CPU with SME (the sme family computes sgemm) none is the right answer. */
    int want = FE_OVERFLOW | FE_INEXACT;
#if defined(__aarch64__)
    const char *isa = getenv("HCOPS_ISA");
    if ((getauxval(AT_HWCAP2) & (1UL << 23)) && (!isa || !*isa || !strcasecmp(isa, "sme"))) want = 0;
#endif
    if (fraised != want || fout[0] <= 3e38f) {
      printf("FAIL: an overflowing sgemm_ left flags %#x (want %#x), c[0] %g\n", fraised, want, (double)fout[0]);
      ++fp_failures;
    } else {
      printf("ok: an overflowing sgemm_ leaves flags %#x to the caller, and no others\n", want);
    }
    fesetenv(FE_DFL_ENV);
  }
  return fp_summary("test_fp_env");
}
