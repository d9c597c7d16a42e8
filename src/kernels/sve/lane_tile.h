// The SVE "by lane" microkernel, vector-length agnostic, shared by the sve
// family (FMLA by lane or of B's values broadcast, f32 and f64) and
// sve_bf16 (BFDOT by lane on k pairs): a tile of two vectors of C's rows
// by 12 columns, mr = 2 VL / (accumulator bits). One step is two A
// vectors, B's 12 columns as replicated quadwords (three LD1RQ; sve's f64:
// six) or as single values broadcast (twelve LD1RW / LD1RD), and 24
// multiply-adds, each an A vector times one column: 24 accumulators + 2 A
// + B's registers fit SVE's 32. sve takes the quadwords below 512-bit
// vectors and the broadcasts from 512 (sve/family.cpp says why).
//
// SVE registers are sizeless: no arrays of them, so the 12 columns are
// spelled by a macro. Partial tiles run the same code: fewer rows are
// predicates on C's loads and stores (WHILELT), fewer columns are stores
// left out; the packed panels are zero-padded, so the multiply-adds on
// padding are harmless (edges only). Tiles of at most one vector of rows
// skip the second A vector. B is always packed: an in-place edge would read
// past op(B)'s last column.
//
// A step traits class S gives:
//   T                    the accumulators' type (float, double)
//   In                   the packed panels' element type
//   kIn                  panel elements per row or column per step (pairs: 2)
//   kPerQuad             columns per load of B (a quadword's, or 1)
//   AV                   A's and B's vector type
//   load(p)              one vector of the panel at p
//   load_quad(p)         B's kPerQuad columns at p, replicated
//   fma_lane<L>(acc, a, q)   acc + a * (column L of each quadword of q)
// Included by each family's source, compiled with its flags (the anonymous
// namespace keeps every family's copy its own, as pack.h's).
#pragma once

#include <arm_sve.h>

#include "common/dtype.h"
#include "kernels/sve/bf16.h"

namespace hcops::kernels::sve {
namespace {

constexpr int kLaneTileNr = 12;

// The accumulators' arithmetic.
template <typename T>
struct Acc;
template <>
struct Acc<float> {
  using V = svfloat32_t;
  static long lanes() { return long(svcntw()); }
  static svbool_t all() { return svptrue_b32(); }
  static svbool_t first(long n) { return svwhilelt_b32_s64(0, n); }  // lanes [0, n); none when n <= 0
  static V zero() { return svdup_n_f32(0.0f); }
  static V scale(V v, float s) { return svmul_n_f32_x(all(), v, s); }
  static V fma(V acc, V v, float s) { return svmla_n_f32_x(all(), acc, v, s); }  // acc + v * s
};
template <>
struct Acc<double> {
  using V = svfloat64_t;
  static long lanes() { return long(svcntd()); }
  static svbool_t all() { return svptrue_b64(); }
  static svbool_t first(long n) { return svwhilelt_b64_s64(0, n); }
  static V zero() { return svdup_n_f64(0.0); }
  static V scale(V v, double s) { return svmul_n_f64_x(all(), v, s); }
  static V fma(V acc, V v, double s) { return svmla_n_f64_x(all(), acc, v, s); }
};

// C as stored, one accumulator lane per row: as is, or bf16 widened on load
// and rounded to nearest even on store.
template <typename C>
struct Out;
template <>
struct Out<float> {
  static svfloat32_t load(svbool_t p, const float *c) { return svld1_f32(p, c); }
  static void store(svbool_t p, float *c, svfloat32_t v) { svst1_f32(p, c, v); }
};
template <>
struct Out<double> {
  static svfloat64_t load(svbool_t p, const double *c) { return svld1_f64(p, c); }
  static void store(svbool_t p, double *c, svfloat64_t v) { svst1_f64(p, c, v); }
};
template <>
struct Out<bf16> {
  static svfloat32_t load(svbool_t p, const bf16 *c) { return load_bf16(p, &c->bits); }
  static void store(svbool_t p, bf16 *c, svfloat32_t v) { store_bf16(p, &c->bits, v); }
};

#define HCOPS_SVE_COLUMNS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
static_assert(kLaneTileNr == 12, "HCOPS_SVE_COLUMNS spells the tile's columns");

// C[0:m, 0:n] = alpha A~B~ + beta C over `steps` steps. kEdge: m and n may
// be short of the tile (else m = 2 VL, n = 12); MV: A vectors per step (1
// when m <= one vector). Forced inline into each entry point, so the full
// tile's predicates and column count are constants.
template <class S, typename C, bool kEdge, int MV>
__attribute__((always_inline)) inline void lane_tile(long steps, typename S::T alpha,
                                                     const typename S::In *__restrict a,
                                                     const typename S::In *__restrict b, typename S::T beta,
                                                     C *__restrict c, long ldc, long m, int n) {
  using A = Acc<typename S::T>;
  using V = typename A::V;
  using AV = typename S::AV;
  constexpr int kNr = kLaneTileNr, kQ = S::kPerQuad;
  const long vl = A::lanes(), mr = 2 * vl;
#define HCOPS_SVE_DECLARE(j) V c0_##j = A::zero(), c1_##j = A::zero();
  HCOPS_SVE_COLUMNS(HCOPS_SVE_DECLARE)
#undef HCOPS_SVE_DECLARE
  for (long p = 0; p < steps; ++p, a += S::kIn * mr, b += S::kIn * kNr) {
    __builtin_prefetch(a + 8 * S::kIn * mr, 0, 3);  // prfm pldl1keep: A streams from L2
    const AV a0 = S::load(a);
    AV a1 = a0;
    if constexpr (MV == 2) a1 = S::load(a + S::kIn * vl);
#define HCOPS_SVE_STEP(j)                                                                 \
  {                                                                                       \
    const AV q = S::load_quad(b + S::kIn * ((j) / kQ * kQ));                              \
    c0_##j = S::template fma_lane<(j) % kQ>(c0_##j, a0, q);                               \
    if constexpr (MV == 2) c1_##j = S::template fma_lane<(j) % kQ>(c1_##j, a1, q);        \
  }
    HCOPS_SVE_COLUMNS(HCOPS_SVE_STEP)
#undef HCOPS_SVE_STEP
  }

  const svbool_t all = A::all();
  const svbool_t p0 = kEdge ? A::first(m) : all, p1 = kEdge ? A::first(m - vl) : all;
#define HCOPS_SVE_STORE(j)                                                      \
  if (!kEdge || (j) < n) {                                                      \
    C *cj = c + (j) * ldc;                                                      \
    V r0 = A::scale(c0_##j, alpha);                                             \
    if (beta != 0) r0 = A::fma(r0, Out<C>::load(p0, cj), beta);                 \
    Out<C>::store(p0, cj, r0);                                                  \
    if constexpr (MV == 2) {                                                    \
      V r1 = A::scale(c1_##j, alpha);                                           \
      if (beta != 0) r1 = A::fma(r1, Out<C>::load(p1, cj + vl), beta);          \
      Out<C>::store(p1, cj + vl, r1);                                           \
    }                                                                           \
  }
  HCOPS_SVE_COLUMNS(HCOPS_SVE_STORE)
#undef HCOPS_SVE_STORE
}
#undef HCOPS_SVE_COLUMNS

// The GemmKernel entry points over a packed depth kp (S::kIn steps of it
// per step): the full tile, and edges by predicates.
template <class S, typename C>
struct LaneTile {
  using T = typename S::T;
  using In = typename S::In;
  static void full(long kp, T alpha, const In *a, const In *b, T beta, C *c, long ldc) {
    lane_tile<S, C, false, 2>(kp / S::kIn, alpha, a, b, beta, c, ldc, 0, kLaneTileNr);
  }
  static void edge(long kp, T alpha, const In *a, const In *b, T beta, C *c, long ldc, int m, int n) {
    if (m <= Acc<T>::lanes()) lane_tile<S, C, true, 1>(kp / S::kIn, alpha, a, b, beta, c, ldc, m, n);
    else lane_tile<S, C, true, 2>(kp / S::kIn, alpha, a, b, beta, c, ldc, m, n);
  }
  static int mr() { return int(2 * Acc<T>::lanes()); }
};

}  // namespace
}  // namespace hcops::kernels::sve
