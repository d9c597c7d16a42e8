// The generic family's bf16 microkernel: the portable reference of what
// vdpbf16ps computes, for every bf16 combination (Bf16Gemm, Bf16Bf16Gemm,
// SgemmBf16, SgemmBf16x3: kernels/gemm_types.h). Panels are in the K-pair layout of
// kernels/pack_pairs.h (k_align = 2); each packed pair of k steps is two
// bf16 products, exact in f32, added to the f32 accumulator one after the
// other in the order of vdpbf16ps's pseudocode in Intel's SDM (the odd step,
// then the even one). So a faster family must agree with this one within
// f32 rounding, and every bf16 entry point is testable on any CPU.
//
// Only family.cpp includes this file (the generic family's flags: SSE2).
#pragma once

#include <cstdint>
#include <cstring>

#include "common/dtype.h"
#include "kernels/generic/vec.h"
#include "kernels/kernel.h"
#include "kernels/macro_kernel.h"
#include "kernels/pack_pairs.h"

namespace hcops::kernels::generic {
namespace {

// 8 x 4 f32 tile, as the f32 kernel: 8 accumulators, the even and odd halves
// of two vectors of A, and the broadcasts of B fit the 16 xmm registers.
constexpr int kPairMr = 2 * F32::lanes, kPairNr = 4;

// A packed pair of one row (or column) read as one 32-bit word: the bf16 of
// the even k step in the low half, the odd one in the high half (x86 is
// little-endian). A bf16 is the high half of its f32, so widening is a shift
// or a mask, exactly.
typedef uint32_t PairWords __attribute__((vector_size(kVectorBytes), may_alias));
inline F32::V even_steps(PairWords w) { return (F32::V)(w << 16); }
inline F32::V odd_steps(PairWords w) { return (F32::V)(w & 0xffff0000u); }
inline float even_step(uint32_t w) {
  const uint32_t u = w << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline float odd_step(uint32_t w) {
  const uint32_t u = w & 0xffff0000u;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// acc{0,1}[j] = the f32 dot products of the tile: kc packed steps (even).
inline void pair_products(long kc, const bf16 *__restrict a, const bf16 *__restrict b, F32::V *acc0, F32::V *acc1) {
  using V = F32::V;
  constexpr int VL = F32::lanes;
#pragma GCC unroll 16
  for (int j = 0; j < kPairNr; ++j) acc0[j] = acc1[j] = V{};
  // A panel starts 8 x kc bf16 (kc even) past an aligned block: 32-byte aligned.
  const auto *aw = static_cast<const PairWords *>(__builtin_assume_aligned(a, 32));
  const auto *bw = reinterpret_cast<const unsigned char *>(b);
  for (long q = 0; q < kc / 2; ++q, aw += kPairMr / VL, bw += kPairNr * sizeof(uint32_t)) {
    const V a0e = even_steps(aw[0]), a0o = odd_steps(aw[0]);
    const V a1e = even_steps(aw[1]), a1o = odd_steps(aw[1]);
#pragma GCC unroll 16
    for (int j = 0; j < kPairNr; ++j) {
      uint32_t w;
      std::memcpy(&w, bw + j * sizeof w, sizeof w);
      const float be = even_step(w), bo = odd_step(w);
      // Each product is exact in f32 (8-bit significands): only the two
      // additions round, as in vdpbf16ps.
      acc0[j] += a0o * bo;
      acc0[j] += a0e * be;
      acc1[j] += a1o * bo;
      acc1[j] += a1e * be;
    }
  }
}

// alpha * acc + beta * C, into C of type T (bf16: rounded to nearest even).
// beta == 0 never reads C.
template <typename T>
inline void store_column(T *c, const F32::V &acc0, const F32::V &acc1, float alpha, float beta) {
  constexpr int VL = F32::lanes;
  if constexpr (sizeof(T) == sizeof(float)) {
    F32::U *c0 = reinterpret_cast<F32::U *>(c), *c1 = reinterpret_cast<F32::U *>(c + VL);
    if (beta == 0.0f) {
      *c0 = alpha * acc0;
      *c1 = alpha * acc1;
    } else {
      *c0 = alpha * acc0 + beta * *c0;
      *c1 = alpha * acc1 + beta * *c1;
    }
  } else {
    for (int i = 0; i < VL; ++i) {  // not + 0 when beta = 0: -0 stays -0, as in f32
      const float s0 = alpha * acc0[i], s1 = alpha * acc1[i];
      c[i] = bf16(beta == 0.0f ? s0 : s0 + beta * float(c[i]));
      c[i + VL] = bf16(beta == 0.0f ? s1 : s1 + beta * float(c[i + VL]));
    }
  }
}

template <typename T>
void pair_ukernel(long kc, float alpha, const bf16 *__restrict a, const bf16 *__restrict b, float beta, T *__restrict c,
                  long ldc) {
  F32::V acc0[kPairNr], acc1[kPairNr];
  pair_products(kc, a, b, acc0, acc1);
#pragma GCC unroll 16
  for (int j = 0; j < kPairNr; ++j) store_column(c + j * ldc, acc0[j], acc1[j], alpha, beta);
}

// A full tile into f32 scratch, then only the m x n corner to C, combined
// as the full tile does (alpha * acc rounded, plus beta * C, rounded once
// more to C's type).
template <typename T>
void pair_edge(long kc, float alpha, const bf16 *a, const bf16 *b, float beta, T *c, long ldc, int m, int n) {
  alignas(64) float tile[kPairMr * kPairNr];
  pair_ukernel<float>(kc, alpha, a, b, 0.0f, tile, kPairMr);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      T &cij = c[i + j * ldc];
      cij = T(beta == 0.0f ? tile[i + j * kPairMr] : tile[i + j * kPairMr] + beta * float(cij));  // -0 stays -0
    }
}

// Ty's a_type/b_type are bf16 or f32 (rounded, or split, while packing).
template <typename Ty>
constexpr GemmKernel<Ty> pair_kernel_for() {
  using C = typename Ty::c_type;
  return {
      .mr = kPairMr,
      .nr = kPairNr,
      .k_align = 2,
      .full = &pair_ukernel<C>,
      .edge = &pair_edge<C>,
      .full_direct = nullptr,  // k in pairs: B is always packed
      .edge_direct = nullptr,
      .pack_a = &pack_a_pairs<typename Ty::a_type, kPairMr, Ty::splits>,
      .pack_b = &pack_b_pairs<typename Ty::b_type, kPairNr, Ty::splits>,
      .macro = &macro_kernel<Ty>,
  };
}

}  // namespace
}  // namespace hcops::kernels::generic
