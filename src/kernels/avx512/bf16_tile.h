// The avx512 family's bf16 GEMMs (Bf16Gemm, Bf16Bf16Gemm: bf16 A and B, f32
// accumulation, f32 or bf16 C), widened onto the FMA pipes. Two kinds of CPU
// take them:
// - AVX-512 without AVX512_BF16 (Skylake-SP to Ice Lake servers), which
//   otherwise fell to the avx2 family's 16 x 6 tile;
// - CPUs whose vdpbf16ps does fewer flops than their FMAs: on a 2-core Intel
//   Xeon guest (family 6 model 207, AVX512_BF16 without AMX) hcops-peak
//   measured 83 GFLOPS a core with vdpbf16ps and 170 with vfmadd231ps, and
//   the wheel's oneDNN ran bf16 products at half its MKL's f32 speed. There
//   the avx512_bf16 family's vdpbf16ps kernels step aside (their
//   `declines`, avx512_bf16/dot_rate.h) for this tile, compiled into that
//   family too, beside its own skinny and shallow kernels.
//
// A bf16 is the high half of its f32, so widening is exact. A and B are
// widened as they are packed (pack_a_wide, pack_b_wide below): the panels
// are the f32 tile's, 32 (A) or 12 (B) f32 values a step
// (GemmKernel::panel_scale 2: twice the bytes of bf16 panels), and the tile
// is the f32 one (simd_tile.h's 32 x 12): 24 accumulators, per step two A
// loads and 24 FMAs, each B value broadcast, no integer work. Each product
// is exact in f32 and added with one rounding, step by step in k order.
//
// Before, A stayed in pair words widened in the tile (a vpslld, a vpandd:
// 4 integer ops per 48 FMAs) and each thread widened B again for each A
// block, op(B) = B gathered in place. DiT-S/2's twelve block products, warm,
// alternated with the same f32 products in one process (geometric means of
// the bf16 / f32 time ratios, Intel guest without AMX): 2 threads 1.10-1.11
// -> 1.035-1.04, B packed once per team; 1 thread 1.06-1.07 either way (A
// widened in the packer with B still widened per A block was 1.06-1.08:
// the integer ops were not what held the tile back).
//
// Included by the avx512 family's family.cpp (AVX-512 F/DQ/BW/VL, nothing
// here needs more) and by the avx512_bf16 family's, each its own copy.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <utility>

#include "common/dtype.h"
#include "kernels/avx512/vec.h"
#include "kernels/avx512_bf16/pair_pack.h"
#include "kernels/kernel.h"

namespace hcops::kernels::avx512 {
namespace {

constexpr int kPairMr = 32, kPairNr = 12;  // avx512_bf16/pair_pack.h's panels
static_assert(kPairMr == avx512_bf16::kMr && kPairNr == avx512_bf16::kNr);

// C as stored: f32, or bf16 widened on load and rounded to nearest even on
// store (F32's integer rounding: this family has no vcvtneps2bf16).
template <typename C>
struct WideOut;
template <>
struct WideOut<float> {
  static __m512 load(const float *p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
  static void store(float *p, __m512 v, __mmask16 m) { _mm512_mask_storeu_ps(p, m, v); }
};
template <>
struct WideOut<bf16> {
  static __m512 load(const bf16 *p, __mmask16 m) { return F32::load_bf16(reinterpret_cast<const uint16_t *>(p), m); }
  static void store(bf16 *p, __m512 v, __mmask16 m) { F32::store_bf16(reinterpret_cast<uint16_t *>(p), v, m); }
};

inline __mmask16 wide_rows(int rows) { return static_cast<__mmask16>((1u << rows) - 1); }

// The even and odd k steps of 16 pair words, as f32.
inline __m512 even_steps(__m512i w) { return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)); }
inline __m512 odd_steps(__m512i w) {
  return _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32(int32_t(0xffff0000u))));
}

// A panel of op(A) = A (rows contiguous, one column per k step) as f32:
// 32 values a step, rows past `rows` zero, kcp = kc rounded up to even
// steps (the last one zero for an odd kc).
inline void wide_a_rows(float *__restrict dst, const bf16 *__restrict a, long lda, long kc, int rows) {
  const __mmask32 present = rows >= 32 ? ~__mmask32(0) : __mmask32((1u << rows) - 1);
  for (long p = 0; p < kc; ++p, dst += kPairMr) {
    _mm_prefetch(reinterpret_cast<const char *>(a + (p + 8) * lda), _MM_HINT_T0);
    const __m512i v = _mm512_maskz_loadu_epi16(present, a + p * lda);
    const __m512i lo = _mm512_cvtepu16_epi32(_mm512_castsi512_si256(v));
    const __m512i hi = _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(v, 1));
    _mm512_store_ps(dst, _mm512_castsi512_ps(_mm512_slli_epi32(lo, 16)));
    _mm512_store_ps(dst + 16, _mm512_castsi512_ps(_mm512_slli_epi32(hi, 16)));
  }
  if (kc % 2) {
    _mm512_store_ps(dst, _mm512_setzero_ps());
    _mm512_store_ps(dst + 16, _mm512_setzero_ps());
  }
}

// A panel of op(A) = A^T (each row's k contiguous) as f32: 16 rows x 16
// pair words transposed at a time (the avx512_bf16 family's
// transposed_pairs), each word then split into its two steps.
inline void wide_a_cols(float *__restrict dst, const bf16 *__restrict a, long lda, long kc, int rows) {
  for (long k0 = 0; k0 < kc; k0 += 32) {
    const long nk = std::min<long>(32, kc - k0), npairs = (nk + 1) / 2;
    for (int h = 0; h < 2; ++h) {
      const int lines = std::clamp(rows - 16 * h, 0, 16);
      __m512i v[1][16];
      avx512_bf16::transposed_pairs<bf16, 1>(a + (16 * h) * lda + k0, lda, lines, avx512_bf16::first_bits(nk), v);
      for (long q = 0; q < npairs; ++q) {
        float *d = dst + (k0 + 2 * q) * kPairMr + 16 * h;
        _mm512_store_ps(d, even_steps(v[0][q]));
        _mm512_store_ps(d + kPairMr, odd_steps(v[0][q]));
      }
    }
  }
}

// op(A)[i0 : i0+mc, p0 : p0+kc] -> ceil(mc / 32) f32 panels of kcp steps,
// written over the driver's bf16 buffer at twice its packed depth
// (panel_scale).
inline void pack_a_wide(bf16 *__restrict panels, const bf16 *__restrict a, long lda, Trans ta, long i0, long mc,
                        long p0, long kc) {
  float *dst = reinterpret_cast<float *>(panels);
  const long kcp = (kc + 1) / 2 * 2;
  for (long ir = 0; ir < mc; ir += kPairMr, dst += kPairMr * kcp) {
    const int rows = int(std::min<long>(kPairMr, mc - ir));
    if (ta == Trans::N) wide_a_rows(dst, a + (i0 + ir) + p0 * lda, lda, kc, rows);
    else wide_a_cols(dst, a + p0 + (i0 + ir) * lda, lda, kc, rows);
  }
}

// One B micro-panel of kcp packed steps as f32: wide[(2q + s) * 12 + j] =
// B(2q + s, j). From a packed panel (12 pair words a step, zero-padded
// past the product's columns).
inline void widen_packed(const bf16 *__restrict b, long kcp, float *__restrict wide) {
  const auto *words = reinterpret_cast<const int32_t *>(b);
  for (long q = 0; q < kcp / 2; ++q, words += kPairNr, wide += 2 * kPairNr) {
    if (q % 16 == 0) {  // 16 steps are 768 bytes: the next 12 lines, one at a time ahead
      for (int l = 0; l < 12; ++l) _mm_prefetch(reinterpret_cast<const char *>(words) + 768 + 64 * l, _MM_HINT_T0);
    }
    const __m512i w = _mm512_maskz_loadu_epi32(0x0fff, words);
    _mm512_mask_storeu_ps(wide, 0x0fff, even_steps(w));
    _mm512_mask_storeu_ps(wide + kPairNr, 0x0fff, odd_steps(w));
  }
}

// op(B)[p0 : p0+kc, j0 : j0+nc] -> ceil(nc / 12) f32 panels of kcp steps,
// 12 values a step, columns past nc zero, over the driver's bf16 buffer at
// twice its packed depth (panel_scale). The avx512_bf16 family's packer
// (its transposes of 16 x 16 pair words for op(B) = B, eight panels a pass
// over the rows for B^T) writes up to eight panels of up to 128 steps
// into a buffer on the stack (24 KiB), widened from there while in L1.
inline void pack_b_wide(bf16 *__restrict panels, const bf16 *__restrict b, long ldb, Trans tb, long p0, long kc,
                        long j0, long nc) {
  constexpr long kCols = 8 * kPairNr, kSteps = 128;
  alignas(64) bf16 pairs[kCols * kSteps];
  float *dst = reinterpret_cast<float *>(panels);
  const long kcp = (kc + 1) / 2 * 2;
  for (long jr = 0; jr < nc; jr += kCols) {
    const long cols = std::min(kCols, nc - jr);
    for (long k0 = 0; k0 < kc; k0 += kSteps) {
      const long steps = std::min(kSteps, kc - k0), depth = (steps + 1) / 2 * 2;
      avx512_bf16::pack_b<bf16, 1>(pairs, b, ldb, tb, p0 + k0, steps, j0 + jr, cols);
      for (long g = 0; g * kPairNr < cols; ++g)
        widen_packed(pairs + g * kPairNr * depth, depth, dst + (jr + g * kPairNr) * kcp + k0 * kPairNr);
    }
  }
}

// C[0:16*MV, 0:N] = alpha A~B + beta C (+ bias[i] on row i when bias is not
// null: Epilogue::row_bias, after beta C, as its `apply` adds it, before C
// is rounded), A an f32 panel (pack_a_wide), B an f32 panel (pack_b_wide); rows
// limited to masks m0, m1 (MV = 1: rows to m0 alone). The A panel is always
// 32 rows wide (zero-padded): 128 bytes a step. Forced inline, so each
// entry point keeps its accumulators in registers: 24 + 2 A vectors + a
// broadcast, of 32 zmm.
template <int N, int MV, typename C>
__attribute__((always_inline)) inline void wide_tile(long kcp, float alpha, const float *__restrict a,
                                                     const float *__restrict wide, float beta, C *__restrict c,
                                                     long ldc, __mmask16 m0, __mmask16 m1, const float *bias) {
  __m512 c0[N], c1[N];
#pragma GCC unroll 12
  for (int j = 0; j < N; ++j) {
    c0[j] = c1[j] = _mm512_setzero_ps();
    _mm_prefetch(reinterpret_cast<const char *>(c + j * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char *>(c + j * ldc + 16 * MV - 1), _MM_HINT_T0);
  }
  const char *pa = reinterpret_cast<const char *>(a);
  // A streams from L2 (256 bytes a pair of steps), B (96 bytes) from L1
  // or, for a deep bf16 C block, L2: both prefetched.
#pragma GCC unroll 2
  for (long q = 0; q < kcp / 2; ++q, pa += 8 * kPairMr, wide += 2 * kPairNr) {
    _mm_prefetch(pa + 1024, _MM_HINT_T0);
    _mm_prefetch(pa + 1088, _MM_HINT_T0);
    _mm_prefetch(pa + 1152, _MM_HINT_T0);
    _mm_prefetch(pa + 1216, _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char *>(wide) + 768, _MM_HINT_T0);
#pragma GCC unroll 2
    for (int s = 0; s < 2; ++s) {
      const float *as = reinterpret_cast<const float *>(pa) + s * kPairMr;
      const __m512 a0 = _mm512_load_ps(as);
      __m512 a1{};
      if constexpr (MV == 2) a1 = _mm512_load_ps(as + 16);
#pragma GCC unroll 12
      for (int j = 0; j < N; ++j) {
        const __m512 bj = _mm512_set1_ps(wide[s * kPairNr + j]);
        c0[j] = _mm512_fmadd_ps(a0, bj, c0[j]);
        if constexpr (MV == 2) c1[j] = _mm512_fmadd_ps(a1, bj, c1[j]);
      }
    }
  }

  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  __m512 bias0 = _mm512_setzero_ps(), bias1 = _mm512_setzero_ps();
  if (bias) {
    bias0 = _mm512_maskz_loadu_ps(m0, bias);
    if constexpr (MV == 2) bias1 = _mm512_maskz_loadu_ps(m1, bias + 16);
  }
#pragma GCC unroll 12
  for (int j = 0; j < N; ++j) {
    C *cj = c + j * ldc;
    __m512 r0 = _mm512_mul_ps(va, c0[j]);
    if (beta != 0.0f) r0 = _mm512_fmadd_ps(vb, WideOut<C>::load(cj, m0), r0);
    if (bias) r0 = _mm512_add_ps(r0, bias0);
    WideOut<C>::store(cj, r0, m0);
    if constexpr (MV == 2) {
      __m512 r1 = _mm512_mul_ps(va, c1[j]);
      if (beta != 0.0f) r1 = _mm512_fmadd_ps(vb, WideOut<C>::load(cj + 16, m1), r1);
      if (bias) r1 = _mm512_add_ps(r1, bias1);
      WideOut<C>::store(cj + 16, r1, m1);
    }
  }
}

// The deepest k block a bf16 C takes in one block (GemmKernel::
// narrow_c_max_kc): its B micro-panel, 96 KiB at that depth, then streams
// from L2 beside A, both prefetched. Deeper, C goes through the driver's
// f32 copy. At 1024 the input gradients with k = 1152-1536 took 1.3-1.5x
// longer than the forward products of the same flops, through that copy;
// at 2048 they do not.
constexpr long kWideDeepest = 2048;

// The entry points for C type `C`, each tile from f32 panels.
template <typename C>
struct WideKernel {
  template <int N>
  static void cols(long kcp, float alpha, const float *a, const float *b, float beta, C *c, long ldc, int m,
                   const float *bias) {
    if (m <= 16) wide_tile<N, 1, C>(kcp, alpha, a, b, beta, c, ldc, wide_rows(m), 0, bias);
    else wide_tile<N, 2, C>(kcp, alpha, a, b, beta, c, ldc, 0xffff, wide_rows(m - 16), bias);
  }

  template <int... N>
  static constexpr auto table(std::integer_sequence<int, N...>) {
    using Fn = void (*)(long, float, const float *, const float *, float, C *, long, int, const float *);
    return std::array<Fn, sizeof...(N)>{&cols<N + 1>...};
  }

  // Any tile, with its rows' bias (null: none).
  static void any(long kcp, float alpha, const float *a, const float *b, float beta, C *c, long ldc, int m, int n,
                  const float *bias = nullptr) {
    static constexpr auto by_cols = table(std::make_integer_sequence<int, kPairNr>{});
    if (m == kPairMr && n == kPairNr) wide_tile<kPairNr, 2, C>(kcp, alpha, a, b, beta, c, ldc, 0xffff, 0xffff, bias);
    else by_cols[n - 1](kcp, alpha, a, b, beta, c, ldc, m, bias);
  }

  // GemmKernel's microkernels (the panels as the packers above write them,
  // f32 over the bf16 pointers), for a caller other than wide_macro.
  static void full(long kcp, float alpha, const bf16 *a, const bf16 *b, float beta, C *c, long ldc) {
    any(kcp, alpha, reinterpret_cast<const float *>(a), reinterpret_cast<const float *>(b), beta, c, ldc, kPairMr,
        kPairNr);
  }
  static void edge(long kcp, float alpha, const bf16 *a, const bf16 *b, float beta, C *c, long ldc, int m, int n) {
    any(kcp, alpha, reinterpret_cast<const float *>(a), reinterpret_cast<const float *>(b), beta, c, ldc, m, n);
  }
};

// The jr/ir loops over f32 panels, the epilogue fused (kernel.h's
// fuses_epilogue), as the avx512_bf16 family's: nn.Linear's bias
// (Epilogue::row_bias) in the tile's registers; any other epilogue gets the
// tile in an f32 scratch, alpha acc + beta C as the kernel computes it,
// then rounded into C. B is always packed (see the top of this file).
template <typename Ty>
void wide_macro(const GemmKernel<Ty> &, const MacroBlock<Ty> &blk) {
  using C = typename Ty::c_type;
  const long kcp = blk.kc;
  const float *row_bias = blk.epilogue ? blk.epilogue.row_bias : nullptr;
  const float *apanels = reinterpret_cast<const float *>(blk.a),
              *bpanels = reinterpret_cast<const float *>(blk.b_packed);
  alignas(64) float scratch[kPairMr * kPairNr];
  for (long jr = blk.j0; jr < blk.j1; jr += kPairNr) {
    const int ncols = int(std::min<long>(kPairNr, blk.j1 - jr));
    const float *b = bpanels + jr * kcp;
    for (long ir = 0; ir < blk.mc; ir += kPairMr) {
      const int nrows = int(std::min<long>(kPairMr, blk.mc - ir));
      const float *a = apanels + ir * kcp;
      C *c = blk.c + ir + jr * blk.ldc;
      if (!blk.epilogue || row_bias) {
        WideKernel<C>::any(kcp, blk.alpha, a, b, blk.beta, c, blk.ldc, nrows, ncols,
                           row_bias ? row_bias + blk.i_origin + ir : nullptr);
        continue;
      }
      WideKernel<float>::any(kcp, blk.alpha, a, b, 0.0f, scratch, kPairMr, nrows, ncols);
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
constexpr GemmKernel<Ty> wide_gemm_kernel() {
  using C = typename Ty::c_type;
  GemmKernel<Ty> k{
      .mr = kPairMr,
      .nr = kPairNr,
      .k_align = 2,
      .full = &WideKernel<C>::full,
      .edge = &WideKernel<C>::edge,
      .full_direct = nullptr,  // B always packed (wide_macro says why)
      .edge_direct = nullptr,
      .pack_a = &pack_a_wide,
      .pack_b = &pack_b_wide,
      .macro = &wide_macro<Ty>,
      .fuses_epilogue = true,
      .narrow_c_max_kc = kWideDeepest,
  };
  k.panel_scale = 2;  // pack_a_wide's and pack_b_wide's f32 panels
  k.tile_note = "bf16 widened onto the f32 FMAs";
  return k;
}

}  // namespace
}  // namespace hcops::kernels::avx512
