// The avx2 family's bf16 GEMMs (Bf16Gemm, Bf16Bf16Gemm: bf16 A and B, f32
// accumulation, f32 or bf16 C) for CPUs with AVX2 + FMA and no bf16
// instructions (AMD Zen 2/3, Intel Haswell to Ice Lake client parts).
// Without this they fell to the generic family (8 x 4 tiles in GCC vector
// extensions).
//
// A bf16 is the high half of its f32, so widening is exact: a shift or a
// mask of the 32-bit word that holds a packed pair (kernels/pack_pairs.h:
// the even k step in the low half, the odd one in the high half). The 16 x
// 6 tile is the f32 one (simd_tile.h): 12 accumulators, two A vectors and
// one broadcast. Per pair of k steps it loads A's two pair vectors, widens
// each into its even-step and odd-step halves (one vpslld and one vpand
// each), and does the 24 FMAs of the two steps. B is widened before the
// tiles, once per micro-panel (pair_macro below), into an f32 panel of the
// f32 kernel's layout, so the inner loop broadcasts B from memory as the f32
// kernel does and does no integer work on it: 4 integer ops per 24 FMAs,
// which go to ports other than the FMAs' on Zen 3 (4 FP pipes, FMA on 2).
// Summation order: step 2q, then 2q + 1, each product exact in f32 and added
// with one rounding (FMA), so this agrees with the generic family's bf16
// kernel (odd step first, as vdpbf16ps) within f32 rounding.
//
// Only the avx2 family's family.cpp includes this file (its -mavx2 -mfma).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <array>
#include <cstdint>
#include <memory>
#include <utility>

#include "common/dtype.h"
#include "kernels/avx2/pair_pack.h"
#include "kernels/avx2/vec.h"
#include "kernels/kernel.h"
#include "kernels/pack_pairs.h"

namespace hcops::kernels::avx2 {
namespace {

constexpr int kPairMr = 2 * F32::lanes, kPairNr = 6;  // pair_pack.h's 16 and 6

// C as stored: f32, or bf16 widened on load and rounded to nearest even on
// store (F32's bf16 helpers). `full`: all 8 lanes, no mask.
template <typename C>
struct PairOut;
template <>
struct PairOut<float> {
  static __m256 load(const float *p, __m256i m, bool full) { return full ? F32::loadu(p) : F32::loadu(p, m); }
  static void store(float *p, __m256 v, __m256i m, bool full) {
    if (full) F32::storeu(p, v);
    else F32::storeu(p, v, m);
  }
};
template <>
struct PairOut<bf16> {
  static const uint16_t *bits(const bf16 *p) { return reinterpret_cast<const uint16_t *>(p); }
  static __m256 load(const bf16 *p, __m256i m, bool full) {
    return full ? F32::load_bf16(bits(p)) : F32::load_bf16(bits(p), m);
  }
  static void store(bf16 *p, __m256 v, __m256i m, bool full) {
    auto *u = reinterpret_cast<uint16_t *>(p);
    if (full) F32::store_bf16(u, v);
    else F32::store_bf16(u, v, m);
  }
};

// One packed B micro-panel (kcp packed steps, kPairNr columns, pairs) as f32:
// wide[p * kPairNr + j] = B(p, j). A pair step's 6 words are read with a
// 32-byte load (its last two words are the next step's, overwritten as
// below; the panel's last step is read with a mask, never past the panel)
// and stored as 8 + 8 floats, the second store over the first one's two
// spare lanes, the next pair's first store over the second one's: `wide`
// holds kcp * kPairNr + 2 floats. The panel is read once per mc rows of A
// from L2 or L3 (a jc block of packed B outgrows L2 beside packed A), so
// the loop waited on its loads: the lines 512 bytes ahead are prefetched.
inline void widen_b_panel(const bf16 *__restrict b, long kcp, float *__restrict wide) {
  const __m256i six = lane_mask32(kPairNr), hi = _mm256_set1_epi32(int32_t(0xffff0000u));
  const auto *words = reinterpret_cast<const int *>(b);
  const long pairs = kcp / 2;
  const auto put = [&](__m256i w) {
    _mm256_storeu_ps(wide, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
    _mm256_storeu_ps(wide + kPairNr, _mm256_castsi256_ps(_mm256_and_si256(w, hi)));
    words += kPairNr;
    wide += 2 * kPairNr;
  };
  long q = 0;
  for (; q + 1 < pairs; ++q) {
    if (q % 8 == 0) {  // 8 steps are 192 bytes: 3 lines, 512 bytes ahead (an address, never dereferenced)
      const uintptr_t ahead = reinterpret_cast<uintptr_t>(words) + 512;
      for (int l = 0; l < 3; ++l) _mm_prefetch(reinterpret_cast<const char *>(ahead + 64 * l), _MM_HINT_T0);
    }
    put(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(words)));
  }
  if (q < pairs) put(_mm256_maskload_epi32(words, six));
}

// The odd k steps of 8 packed pairs (the high halves) as f32. The mask is
// an operand in memory, not a register: GCC hoists a constant out of the
// loop into a register, and with it the 12 accumulators, two A vectors and
// the broadcast no longer fit the 16 ymm (it spilled 5 accumulators a pair
// step: 0.65x the f32 kernel on Zen 3). An L1 load per use costs less.
alignas(32) constexpr uint32_t kHighHalves[8] = {0xffff0000u, 0xffff0000u, 0xffff0000u, 0xffff0000u,
                                                 0xffff0000u, 0xffff0000u, 0xffff0000u, 0xffff0000u};
__attribute__((always_inline)) inline __m256 odd_steps(const __m256i *p) {
  __m256i w = _mm256_load_si256(p);
  asm("vpand %1, %0, %0" : "+x"(w) : "m"(kHighHalves));
  return _mm256_castsi256_ps(w);
}

// acc[j] (rows 0-7) and acc[N + j] (rows 8-15, MV = 2) = the f32 dot
// products of the tile: kcp packed steps of A~ against the widened B. The
// A panel is always kPairMr rows wide (zero-padded), so it steps by 64
// bytes a pair. A function of its own, never inlined into the store of C:
// 12 accumulators + 2 A vectors + 1 broadcast are 15 of the 16 ymm, and
// when GCC allocated registers for this loop and a bf16 C's rounding store
// together, it spilled accumulators in the loop (the bf16 C tile ran at 62
// GFLOPS on one Zen 3 core, the f32 C one at 93). Writing the 12 sums to
// memory once per tile costs nothing beside kcp / 2 x 24 FMAs.
template <int N, int MV>
__attribute__((noinline)) void pair_products(long kcp, const bf16 *__restrict a, const float *__restrict wide,
                                             __m256 *__restrict acc) {
  __m256 c0[N], c1[N];
#pragma GCC unroll 6
  for (int j = 0; j < N; ++j) c0[j] = c1[j] = _mm256_setzero_ps();
  const auto *pa = reinterpret_cast<const __m256i *>(a);
#pragma GCC unroll 1
  for (long q = 0; q < kcp / 2; ++q, pa += 2, wide += 2 * kPairNr) {
    // 64 bytes of A a pair: the line 8 pairs ahead.
    __builtin_prefetch(pa + 16, 0, 3);
    __m256 a0 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_load_si256(pa), 16)), a1{};
    if constexpr (MV == 2) a1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_load_si256(pa + 1), 16));
#pragma GCC unroll 6
    for (int j = 0; j < N; ++j) {
      const __m256 bj = _mm256_broadcast_ss(wide + j);
      c0[j] = _mm256_fmadd_ps(a0, bj, c0[j]);
      if constexpr (MV == 2) c1[j] = _mm256_fmadd_ps(a1, bj, c1[j]);
    }
    a0 = odd_steps(pa);
    if constexpr (MV == 2) a1 = odd_steps(pa + 1);
#pragma GCC unroll 6
    for (int j = 0; j < N; ++j) {
      const __m256 bj = _mm256_broadcast_ss(wide + kPairNr + j);
      c0[j] = _mm256_fmadd_ps(a0, bj, c0[j]);
      if constexpr (MV == 2) c1[j] = _mm256_fmadd_ps(a1, bj, c1[j]);
    }
  }
#pragma GCC unroll 6
  for (int j = 0; j < N; ++j) {
    acc[j] = c0[j];
    if constexpr (MV == 2) acc[N + j] = c1[j];
  }
}

// C[0:8*MV, 0:N] = alpha A~B + beta C (+ bias[i] on row i, when bias is
// not null: Epilogue::row_bias, added after beta C as its `apply` adds it,
// before C is rounded), B the widened panel; rows limited to masks m0, m1
// when `masked` (MV = 1: rows to m0 alone).
template <int N, int MV, typename C>
void pair_tile(long kcp, float alpha, const bf16 *__restrict a, const float *__restrict wide, float beta,
               C *__restrict c, long ldc, bool masked, __m256i m0, __m256i m1, const float *bias) {
#pragma GCC unroll 6
  for (int j = 0; j < N; ++j) {
    __builtin_prefetch(c + j * ldc, 0, 3);
    __builtin_prefetch(c + j * ldc + MV * F32::lanes - 1, 0, 3);
  }
  __m256 acc[MV * N];
  pair_products<N, MV>(kcp, a, wide, acc);

  const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
  __m256 bias0 = _mm256_setzero_ps(), bias1 = _mm256_setzero_ps();
  if (bias) {
    bias0 = masked ? F32::loadu(bias, m0) : F32::loadu(bias);
    if constexpr (MV == 2) bias1 = masked ? F32::loadu(bias + F32::lanes, m1) : F32::loadu(bias + F32::lanes);
  }
#pragma GCC unroll 6
  for (int j = 0; j < N; ++j) {
    C *cj = c + j * ldc;
    __m256 r0 = _mm256_mul_ps(va, acc[j]);
    if (beta != 0.0f) r0 = _mm256_fmadd_ps(vb, PairOut<C>::load(cj, m0, !masked), r0);
    if (bias) r0 = _mm256_add_ps(r0, bias0);
    PairOut<C>::store(cj, r0, m0, !masked);
    if constexpr (MV == 2) {
      __m256 r1 = _mm256_mul_ps(va, acc[N + j]);
      if (beta != 0.0f) r1 = _mm256_fmadd_ps(vb, PairOut<C>::load(cj + F32::lanes, m1, !masked), r1);
      if (bias) r1 = _mm256_add_ps(r1, bias1);
      PairOut<C>::store(cj + F32::lanes, r1, m1, !masked);
    }
  }
}

// The deepest k block a bf16 C takes (GemmKernel::narrow_c_max_kc): a 24
// KiB widened B panel beside A's lines in Zen 3's 32 KiB L1. An f32 C's k
// blocks are at most 512 (gemm/blocking.h's clamp).
constexpr long kWidestBlock = 1024;

// A scratch panel for widen_b_panel: on the stack up to kWidestBlock packed
// steps, which every block the driver makes fits; on the heap beyond, for a
// caller of the microkernels with a deeper panel.
struct WidePanel {
  alignas(32) float stack[kWidestBlock * kPairNr + 8];
  std::unique_ptr<float[]> heap;
  float *get(long kcp) {
    if (kcp <= kWidestBlock) return stack;
    heap.reset(new float[kcp * kPairNr + 8]);
    return heap.get();
  }
};

// The entry points for C type `C`, each tile from a widened B panel.
template <typename C>
struct PairKernel {
  template <int N>
  static void cols(long kcp, float alpha, const bf16 *a, const float *wide, float beta, C *c, long ldc, int m,
                   const float *bias) {
    if (m <= F32::lanes)
      pair_tile<N, 1, C>(kcp, alpha, a, wide, beta, c, ldc, true, lane_mask32(m), lane_mask32(0), bias);
    else
      pair_tile<N, 2, C>(kcp, alpha, a, wide, beta, c, ldc, true, lane_mask32(8), lane_mask32(m - F32::lanes), bias);
  }

  template <int... N>
  static constexpr auto table(std::integer_sequence<int, N...>) {
    using Fn = void (*)(long, float, const bf16 *, const float *, float, C *, long, int, const float *);
    return std::array<Fn, sizeof...(N)>{&cols<N + 1>...};
  }

  // Any tile, with its rows' bias (null: none).
  static void any(long kcp, float alpha, const bf16 *a, const float *wide, float beta, C *c, long ldc, int m, int n,
                  const float *bias = nullptr) {
    static constexpr auto by_cols = table(std::make_integer_sequence<int, kPairNr>{});
    if (m == kPairMr && n == kPairNr) {
      const __m256i all = lane_mask32(8);
      pair_tile<kPairNr, 2, C>(kcp, alpha, a, wide, beta, c, ldc, false, all, all, bias);
    } else {
      by_cols[n - 1](kcp, alpha, a, wide, beta, c, ldc, m, bias);
    }
  }

  // GemmKernel's microkernels, for a caller other than pair_macro: each
  // widens its B panel itself.
  static void full(long kcp, float alpha, const bf16 *a, const bf16 *b, float beta, C *c, long ldc) {
    WidePanel w;
    float *wide = w.get(kcp);
    widen_b_panel(b, kcp, wide);
    any(kcp, alpha, a, wide, beta, c, ldc, kPairMr, kPairNr);
  }
  static void edge(long kcp, float alpha, const bf16 *a, const bf16 *b, float beta, C *c, long ldc, int m, int n) {
    WidePanel w;
    float *wide = w.get(kcp);
    widen_b_panel(b, kcp, wide);
    any(kcp, alpha, a, wide, beta, c, ldc, m, n);
  }
};

// The jr/ir loops (macro_kernel.h's) with each B micro-panel widened once,
// before the mc / 16 tiles that use it: 6 words a pair step against 24
// FMAs per tile. The epilogue is fused (kernel.h's fuses_epilogue): on the
// last k block each tile gets it on its f32 values before C is rounded, so
// a bf16 C needs no f32 copy (gemm.cpp's gemm_through_wide_c: nn.Linear's
// bf16 addmm ran at 56 % of the peak in a DiT-S/2 step on Zen 3 through
// it). nn.Linear's bias (Epilogue::row_bias) is added in the tile's
// registers; any other epilogue gets the tile in an f32 scratch, alpha acc
// + beta C as the kernel computes it, then rounded into C.
template <typename Ty>
void pair_macro(const GemmKernel<Ty> &, const MacroBlock<Ty> &blk) {
  using C = typename Ty::c_type;
  const long kcp = blk.kc;
  WidePanel w;
  float *wide = w.get(kcp);
  const float *row_bias = blk.epilogue ? blk.epilogue.row_bias : nullptr;
  alignas(32) float scratch[kPairMr * kPairNr];
  for (long jr = blk.j0; jr < blk.j1; jr += kPairNr) {
    const int ncols = int(std::min<long>(kPairNr, blk.j1 - jr));
    widen_b_panel(blk.b_packed + jr * kcp, kcp, wide);
    for (long ir = 0; ir < blk.mc; ir += kPairMr) {
      const int nrows = int(std::min<long>(kPairMr, blk.mc - ir));
      const bf16 *a = blk.a + ir * kcp;
      C *c = blk.c + ir + jr * blk.ldc;
      if (!blk.epilogue || row_bias) {
        PairKernel<C>::any(kcp, blk.alpha, a, wide, blk.beta, c, blk.ldc, nrows, ncols,
                           row_bias ? row_bias + blk.i_origin + ir : nullptr);
        continue;
      }
      PairKernel<float>::any(kcp, blk.alpha, a, wide, 0.0f, scratch, kPairMr, nrows, ncols);
      if (blk.beta != 0.0f)  // + beta C, the fma the kernel makes (beta = 0 never reads C)
        for (int j = 0; j < ncols; ++j)
          for (int i = 0; i < nrows; ++i)
            scratch[i + j * kPairMr] = std::fma(blk.beta, float(c[i + j * blk.ldc]), scratch[i + j * kPairMr]);
      blk.epilogue.apply(blk.epilogue.ctx, scratch, kPairMr, blk.i_origin + ir, nrows, blk.j_origin + jr, ncols);
      for (int j = 0; j < ncols; ++j)
        for (int i = 0; i < nrows; ++i) c[i + j * blk.ldc] = C(scratch[i + j * kPairMr]);
    }
  }
}

template <typename Ty>
constexpr GemmKernel<Ty> pair_gemm_kernel() {
  using C = typename Ty::c_type;
  return {
      .mr = kPairMr,
      .nr = kPairNr,
      .k_align = 2,
      .full = &PairKernel<C>::full,
      .edge = &PairKernel<C>::edge,
      .full_direct = nullptr,  // k in pairs: B is always packed
      .edge_direct = nullptr,
      .pack_a = &pack_a_pairs16,  // pair_pack.h: pack_pairs.h's layout, vectorised
      .pack_b = &pack_b_pairs6,
      .macro = &pair_macro<Ty>,
      .fuses_epilogue = true,
      .narrow_c_max_kc = kWidestBlock,  // deeper, the f32 copy of C
  };
}

}  // namespace
}  // namespace hcops::kernels::avx2
