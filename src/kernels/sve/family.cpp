// SVE microkernels, vector-length agnostic: one binary for every SVE
// implementation, from 128-bit vectors (Neoverse V2, Grace) through 256
// (Neoverse V1, Graviton3) and 512 (A64FX) to 2048. The tile is two vectors
// of C's rows by 12 columns, so mr follows the vector length: 2 VL/32 rows
// of f32 (8 at 128 bits, 32 at 512, 128 at 2048), 2 VL/64 of f64. Its
// GemmKernels are made on first use (KernelRef::build), when svcntw() may
// be executed.
//
// One k step: two A vectors, three (f32) or six (f64) 128-bit quadwords of
// B replicated across the vector (LD1RQW/LD1RQD), and 24 FMLA (indexed),
// each multiplying an A vector by one lane of a B quadword: 24 accumulators
// + 2 A + the quadwords fit SVE's 32 registers, and 5 (f32) loads feed 24
// FMAs, where a broadcast per column (LD1RW) would take 14.
//
// SVE registers are sizeless: no arrays of them, so the 12 columns are
// spelled by a macro. Partial tiles run the same code: fewer rows are
// predicates on C's loads and stores (WHILELT), fewer columns are stores
// left out; the packed panels are zero-padded, so the FMAs on padding are
// harmless (edges only). Tiles of at most one vector of rows skip the
// second A vector. B is always packed (no in-place kernel): an in-place
// edge would read past op(B)'s last column.
#include <arm_sve.h>

#include "kernels/family_flags.h"
#include "kernels/kernel.h"
#include "kernels/macro_kernel.h"
#include "kernels/pack.h"

HCOPS_FAMILY_FLAGS_MATCH(sve);

namespace hcops::kernels::sve {
namespace {

constexpr int kNr = 12;

template <typename T>
struct Sv;
template <>
struct Sv<float> {
  using V = svfloat32_t;
  static long lanes() { return long(svcntw()); }
  static svbool_t all() { return svptrue_b32(); }
  static svbool_t first(long n) { return svwhilelt_b32_s64(0, n); }  // lanes [0, n); none when n <= 0
  static V zero() { return svdup_n_f32(0.0f); }
  static V load(svbool_t p, const float *x) { return svld1_f32(p, x); }
  static V load_quad(svbool_t p, const float *x) { return svld1rq_f32(p, x); }
  static void store(svbool_t p, float *x, V v) { svst1_f32(p, x, v); }
  template <int L>
  static V fma_lane(V acc, V a, V q) {  // acc + a * q[L] (L within each quadword)
    return svmla_lane_f32(acc, a, q, L);
  }
  static V scale(svbool_t p, V v, float s) { return svmul_n_f32_x(p, v, s); }
  static V fma(svbool_t p, V acc, V v, float s) { return svmla_n_f32_x(p, acc, v, s); }  // acc + v * s
};
template <>
struct Sv<double> {
  using V = svfloat64_t;
  static long lanes() { return long(svcntd()); }
  static svbool_t all() { return svptrue_b64(); }
  static svbool_t first(long n) { return svwhilelt_b64_s64(0, n); }
  static V zero() { return svdup_n_f64(0.0); }
  static V load(svbool_t p, const double *x) { return svld1_f64(p, x); }
  static V load_quad(svbool_t p, const double *x) { return svld1rq_f64(p, x); }
  static void store(svbool_t p, double *x, V v) { svst1_f64(p, x, v); }
  template <int L>
  static V fma_lane(V acc, V a, V q) {
    return svmla_lane_f64(acc, a, q, L);
  }
  static V scale(svbool_t p, V v, double s) { return svmul_n_f64_x(p, v, s); }
  static V fma(svbool_t p, V acc, V v, double s) { return svmla_n_f64_x(p, acc, v, s); }
};

#define HCOPS_SVE_COLUMNS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
static_assert(kNr == 12, "HCOPS_SVE_COLUMNS spells kNr columns");

// C[0:m, 0:n] = alpha A~B~ + beta C. kEdge: m and n may be short of the
// tile (else m = 2 VL, n = kNr); MV: A vectors per k step (1 when m <= VL).
// Forced inline into each entry point, so the full tile's predicates and
// column count are constants.
template <typename T, bool kEdge, int MV>
__attribute__((always_inline)) inline void tile(long kc, T alpha, const T *__restrict a, const T *__restrict b,
                                                T beta, T *__restrict c, long ldc, long m, int n) {
  using S = Sv<T>;
  using V = typename S::V;
  constexpr int kPerQuad = 16 / sizeof(T);
  const long vl = S::lanes(), mr = 2 * vl;
  const svbool_t all = S::all();
#define HCOPS_SVE_DECLARE(j) V c0_##j = S::zero(), c1_##j = S::zero();
  HCOPS_SVE_COLUMNS(HCOPS_SVE_DECLARE)
#undef HCOPS_SVE_DECLARE
  for (long p = 0; p < kc; ++p, a += mr, b += kNr) {
    __builtin_prefetch(a + 8 * mr, 0, 3);  // prfm pldl1keep: A streams from L2
    const V a0 = S::load(all, a);
    V a1 = a0;
    if constexpr (MV == 2) a1 = S::load(all, a + vl);
#define HCOPS_SVE_STEP(j)                                                        \
  {                                                                              \
    const V q = S::load_quad(all, b + (j) / kPerQuad * kPerQuad);                \
    c0_##j = S::template fma_lane<(j) % kPerQuad>(c0_##j, a0, q);                \
    if constexpr (MV == 2) c1_##j = S::template fma_lane<(j) % kPerQuad>(c1_##j, a1, q); \
  }
    HCOPS_SVE_COLUMNS(HCOPS_SVE_STEP)
#undef HCOPS_SVE_STEP
  }

  const svbool_t p0 = kEdge ? S::first(m) : all, p1 = kEdge ? S::first(m - vl) : all;
#define HCOPS_SVE_STORE(j)                                              \
  if (!kEdge || (j) < n) {                                              \
    T *cj = c + (j) * ldc;                                              \
    V r0 = S::scale(all, c0_##j, alpha);                                \
    if (beta != T(0)) r0 = S::fma(all, r0, S::load(p0, cj), beta);     \
    S::store(p0, cj, r0);                                               \
    if constexpr (MV == 2) {                                            \
      V r1 = S::scale(all, c1_##j, alpha);                              \
      if (beta != T(0)) r1 = S::fma(all, r1, S::load(p1, cj + vl), beta); \
      S::store(p1, cj + vl, r1);                                        \
    }                                                                   \
  }
  HCOPS_SVE_COLUMNS(HCOPS_SVE_STORE)
#undef HCOPS_SVE_STORE
}

template <typename T>
void full(long kc, T alpha, const T *a, const T *b, T beta, T *c, long ldc) {
  tile<T, false, 2>(kc, alpha, a, b, beta, c, ldc, 0, kNr);
}

template <typename T>
void edge(long kc, T alpha, const T *a, const T *b, T beta, T *c, long ldc, int m, int n) {
  if (m <= Sv<T>::lanes()) tile<T, true, 1>(kc, alpha, a, b, beta, c, ldc, m, n);
  else tile<T, true, 2>(kc, alpha, a, b, beta, c, ldc, m, n);
}

template <typename T>
void pack_a_vl(T *dst, const T *a, long lda, Trans ta, long i0, long mc, long p0, long kc) {
  pack_a_width(dst, a, lda, ta, i0, mc, p0, kc, int(2 * Sv<T>::lanes()));
}

template <typename Ty>
GemmKernel<Ty> vl_kernel() {
  using T = typename Ty::c_type;
  return {
      .mr = int(2 * Sv<T>::lanes()),
      .nr = kNr,
      .k_align = 1,
      .full = &full<T>,
      .edge = &edge<T>,
      .full_direct = nullptr,
      .edge_direct = nullptr,
      .pack_a = &pack_a_vl<T>,
      .pack_b = &pack_b<T, kNr>,
      .macro = &macro_kernel<Ty>,
  };
}

const void *make_sgemm() {
  static const GemmKernel<Sgemm> k = vl_kernel<Sgemm>();
  return &k;
}
const void *make_dgemm() {
  static const GemmKernel<Dgemm> k = vl_kernel<Dgemm>();
  return &k;
}

constexpr KernelRef kRefs[] = {KernelRef::built<Sgemm>(&make_sgemm), KernelRef::built<Dgemm>(&make_dgemm)};

}  // namespace

extern constexpr KernelList kernels = kernel_list(kRefs);

}  // namespace hcops::kernels::sve
