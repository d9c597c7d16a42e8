// oneDNN's two GEMM functions, dnnl_sgemm and dnnl_gemm_bf16bf16f32: row-major
// C = alpha op(A) op(B) + beta C (A and B f32 or bf16, alpha, beta and C f32),
// on the engine's Sgemm and Bf16Gemm as the column-major C^T = op(B)^T op(A)^T.
//
// They answer as libdnnl 2.6.3 does, checked against it (tests/dnnl/
// test_dnnl_gemm): dnnl_invalid_arguments for a null A, B or C (even when
// nothing would be read), a transpose other than N, n, T, t (or P, p), a
// negative size, lda < max(1, ta == N ? K : M), ldb < max(1, tb == N ? N : K),
// ldc < max(1, N); otherwise dnnl_success. M or N zero leaves C untouched;
// K zero too on x86-64, where the real library does not scale C by beta
// then, while elsewhere (AArch64: its reference GEMM) it does, as BLAS
// does, and so does this (zeros for beta = 0, C not read); beta = 0
// overwrites C without reading it, alpha = 0 reads neither A nor B (the
// real bf16 GEMM multiplies when beta is 0 too, so NaNs in A or B give NaNs
// where this gives zeros, as the real f32 GEMM does).
// dnnl_gemm_bf16bf16f32 is exported by libdnnl but declared in no public
// header; its bf16 is the high half of a binary32, as HCOps's.
//
// Handed on to the real libdnnl: everything under HCOPS_DNNL=0 (pure
// forwarding; computed here only when there is no libdnnl, so that
// dnnl_sgemm works without one), and a P (packed) transpose: a buffer packed
// by libdnnl's own C++ sgemm_pack, which only that library reads.
#include <oneapi/dnnl/dnnl.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>

#include "shim/common/gemm_call.h"
#include "shim/dnnl/real.h"
#include "shim/dnnl/takeover.h"

extern "C" dnnl_status_t DNNL_API dnnl_gemm_bf16bf16f32(char transa, char transb, dnnl_dim_t M, dnnl_dim_t N,
                                                        dnnl_dim_t K, float alpha, const uint16_t *A, dnnl_dim_t lda,
                                                        const uint16_t *B, dnnl_dim_t ldb, float beta, float *C,
                                                        dnnl_dim_t ldc);

namespace {

bool is_plain(char t) { return t == 'N' || t == 'n' || t == 'T' || t == 't'; }
bool is_packed(char t) { return t == 'P' || t == 'p'; }
bool is_n(char t) { return t == 'N' || t == 'n'; }

// K = 0: what libdnnl 2.6.3 does to C on this architecture (see the top).
#if defined(__x86_64__)
constexpr bool kEmptySumScalesC = false;
#else
constexpr bool kEmptySumScalesC = true;
#endif

// Row-major C (M x N, ldc) = beta C; beta = 0 writes zeros without reading C.
void scale_c(dnnl_dim_t M, dnnl_dim_t N, float beta, float *C, dnnl_dim_t ldc) {
  for (dnnl_dim_t i = 0; i < M; ++i) {
    float *row = C + i * ldc;
    for (dnnl_dim_t j = 0; j < N; ++j) row[j] = beta == 0.0f ? 0.0f : beta * row[j];
  }
}
dnnl_dim_t max1(dnnl_dim_t x) { return x > 1 ? x : 1; }

// libdnnl's check_gemm_input, in the row-major terms of the call. Packed
// operands never get here.
dnnl_status_t check(char ta, char tb, dnnl_dim_t M, dnnl_dim_t N, dnnl_dim_t K, const void *A, dnnl_dim_t lda,
                    const void *B, dnnl_dim_t ldb, const void *C, dnnl_dim_t ldc) {
  if (!A || !B || !C) return dnnl_invalid_arguments;
  if (!is_plain(ta) || !is_plain(tb) || M < 0 || N < 0 || K < 0) return dnnl_invalid_arguments;
  if (lda < max1(is_n(ta) ? K : M) || ldb < max1(is_n(tb) ? N : K) || ldc < max1(N)) return dnnl_invalid_arguments;
  return dnnl_success;
}

// The verbose line, in the call's own row-major terms (not the column-major
// call run), so that it can be read against the caller's code.
template <typename Ty>
void report(const char *routine, char ta, char tb, dnnl_dim_t M, dnnl_dim_t N, dnnl_dim_t K, float alpha,
            dnnl_dim_t lda, dnnl_dim_t ldb, float beta, dnnl_dim_t ldc, const hcops::GemmReport &rep, double seconds) {
  char key[160], call[256];
  std::snprintf(key, sizeof key, "%s,%c,%c,%ld,%ld,%ld", routine, ta, tb, long(M), long(N), long(K));
  std::snprintf(call, sizeof call, "%s,%g,%ld,%ld,%g,%ld", key, double(alpha), long(lda), long(ldb), double(beta),
                long(ldc));
  hcops::report_exec("routine,transa,transb,M,N,K,alpha,lda,ldb,beta,ldc", "routine,transa,transb,M,N,K", call, key,
                     std::string("hcops:") + rep.family, hcops::gemm_details(rep, alpha == 0), rep.threads,
                     2.0 * double(M) * double(N) * double(K), seconds);
}

// The checked call on the engine.
template <typename Ty, typename In>
dnnl_status_t compute(const char *routine, char ta, char tb, dnnl_dim_t M, dnnl_dim_t N, dnnl_dim_t K, float alpha,
                      const In *A, dnnl_dim_t lda, const In *B, dnnl_dim_t ldb, float beta, float *C, dnnl_dim_t ldc) {
  if (dnnl_status_t st = check(ta, tb, M, N, K, A, lda, B, ldb, C, ldc)) return st;
  if (M == 0 || N == 0) return dnnl_success;
  if (K == 0) {
    if (kEmptySumScalesC) scale_c(M, N, beta, C, ldc);
    return dnnl_success;
  }
  using A_t = typename Ty::a_type;
  auto trans = [](char t) { return is_n(t) ? hcops::Trans::N : hcops::Trans::T; };
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
  hcops::GemmArgs<Ty> g{};
  g.ta = trans(tb), g.tb = trans(ta);
  g.m = N, g.n = M, g.k = K;
  g.alpha = alpha, g.beta = beta;
  g.a = reinterpret_cast<const A_t *>(B), g.lda = ldb;
  g.b = reinterpret_cast<const A_t *>(A), g.ldb = lda;
  g.c = C, g.ldc = ldc;
  if (hcops::verbose_level() == 0) {
    hcops::gemm(g);
    return dnnl_success;
  }
  double t0;
  {
    hcops::KeepFpEnv keep;
    t0 = hcops::now_seconds();
  }
  const hcops::GemmReport rep = hcops::gemm(g);
  hcops::KeepFpEnv keep;
  report<Ty>(routine, ta, tb, M, N, K, alpha, lda, ldb, beta, ldc, rep, hcops::now_seconds() - t0);
  return dnnl_success;
}

// The real library's definition of `fn` (cached), when this call goes there:
// under HCOPS_DNNL=0 or for a packed operand. Null: compute it here.
template <typename Fn>
Fn handed_on(Fn *cache, const char *name, char ta, char tb) {
  if (hcops_dnnl_takeover() && !is_packed(ta) && !is_packed(tb)) return nullptr;
  Fn fn = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
  if (!fn) {
    fn = reinterpret_cast<Fn>(hcops_dnnl_real(name));
    __atomic_store_n(cache, fn, __ATOMIC_RELEASE);
  }
  return fn;
}

}  // namespace

extern "C" {

dnnl_status_t dnnl_sgemm(char transa, char transb, dnnl_dim_t M, dnnl_dim_t N, dnnl_dim_t K, float alpha,
                         const float *A, dnnl_dim_t lda, const float *B, dnnl_dim_t ldb, float beta, float *C,
                         dnnl_dim_t ldc) {
  static decltype(&dnnl_sgemm) real;
  if (auto fn = handed_on(&real, "dnnl_sgemm", transa, transb))
    return fn(transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  // A packed operand without libdnnl (reported by the forwarder): not ours to read.
  if (is_packed(transa) || is_packed(transb)) return dnnl_unimplemented;
  return compute<hcops::Sgemm>("dnnl_sgemm", transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

dnnl_status_t dnnl_gemm_bf16bf16f32(char transa, char transb, dnnl_dim_t M, dnnl_dim_t N, dnnl_dim_t K, float alpha,
                                    const uint16_t *A, dnnl_dim_t lda, const uint16_t *B, dnnl_dim_t ldb, float beta,
                                    float *C, dnnl_dim_t ldc) {
  static_assert(sizeof(hcops::bf16) == sizeof(uint16_t), "bf16 layout");
  static decltype(&dnnl_gemm_bf16bf16f32) real;
  if (auto fn = handed_on(&real, "dnnl_gemm_bf16bf16f32", transa, transb))
    return fn(transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  if (is_packed(transa) || is_packed(transb)) return dnnl_unimplemented;
  return compute<hcops::Bf16Gemm>("dnnl_gemm_bf16bf16f32", transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C,
                                  ldc);
}

}  // extern "C"
