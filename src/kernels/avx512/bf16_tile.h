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
// A bf16 is the high half of its f32, so widening is exact: the packed pair
// word (kernels/pack_pairs.h: the even k step in the low half, the odd one
// in the high half) shifted left by 16 is the even step, masked to its high
// half the odd one. The panels are the avx512_bf16 family's (its pair_pack.h,
// bf16 in, bf16 out: no bf16 instruction in those packers), so mr = 32 and
// nr = 12 as there. The tile is the f32 one (simd_tile.h's 32 x 12): 24
// accumulators, per pair step two A loads widened into four vectors (two
// vpslld, two vpandd), and 48 FMAs, each B value broadcast from an f32
// panel. B is widened once per micro-panel (wide_macro below), before the mc
// / 32 tiles that read it, so the loop does no integer work on it: 4 integer
// ops per 48 FMAs. Each product is exact in f32 and added with one rounding;
// step 2q before 2q + 1, as the avx2 family's widened tile.
//
// Included by the avx512 family's family.cpp (AVX-512 F/DQ/BW/VL, nothing
// here needs more) and by the avx512_bf16 family's, each its own copy.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <utility>

#include "common/dtype.h"
#include "common/fault.h"
#include "common/log.h"
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

// The same from op(B) = B in place (column j at b + j * ldb, k contiguous,
// pair q its 32-bit word q; kcp even), `cols` columns, the rest zero. A
// gather of the columns' words a step: each column is read once per
// micro-panel, here, so a line of it is prefetched 64 steps ahead every 16.
// Gather indices are int32 in units of 2 bytes; a B whose columns lie
// further apart than that reaches is read a word at a time.
inline void widen_in_place(const bf16 *__restrict b, long ldb, int cols, long kcp, float *__restrict wide) {
  const __mmask16 present = wide_rows(cols);
  const long pairs = kcp / 2;
  if ((cols - 1) * ldb + kcp < (1L << 31)) {
    const __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 0, 0, 0),
                                           _mm512_set1_epi32(int32_t(ldb)));
    for (long q = 0; q < pairs; ++q, wide += 2 * kPairNr) {
      if (q % 16 == 0)
        for (int j = 0; j < cols; ++j) _mm_prefetch(reinterpret_cast<const char *>(b + j * ldb + 2 * q) + 256, _MM_HINT_T0);
      const __m512i w = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), present, idx, b + 2 * q, 2);
      _mm512_mask_storeu_ps(wide, 0x0fff, even_steps(w));
      _mm512_mask_storeu_ps(wide + kPairNr, 0x0fff, odd_steps(w));
    }
    return;
  }
  for (long q = 0; q < pairs; ++q, wide += 2 * kPairNr) {
    alignas(64) int32_t w[16] = {};
    for (int j = 0; j < cols; ++j) std::memcpy(&w[j], b + j * ldb + 2 * q, 4);
    const __m512i v = _mm512_load_si512(w);
    _mm512_mask_storeu_ps(wide, 0x0fff, even_steps(v));
    _mm512_mask_storeu_ps(wide + kPairNr, 0x0fff, odd_steps(v));
  }
}

// C[0:16*MV, 0:N] = alpha A~B + beta C (+ bias[i] on row i when bias is not
// null: Epilogue::row_bias, after beta C, as its `apply` adds it, before C
// is rounded), B the widened panel; rows limited to masks m0, m1 (MV = 1:
// rows to m0 alone). The A panel is always 32 rows wide (zero-padded): 128
// bytes a pair step. Forced inline, so each entry point keeps its
// accumulators in registers: 24 + 4 A vectors + a broadcast, of 32 zmm.
template <int N, int MV, typename C>
__attribute__((always_inline)) inline void wide_tile(long kcp, float alpha, const bf16 *__restrict a,
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
  // A streams from L2 (128 bytes a pair step), the widened B (96 bytes a
  // step) from L1 or, for a deep bf16 C block, L2: both prefetched.
#pragma GCC unroll 2
  for (long q = 0; q < kcp / 2; ++q, pa += 4 * kPairMr, wide += 2 * kPairNr) {
    _mm_prefetch(pa + 1024, _MM_HINT_T0);
    _mm_prefetch(pa + 1088, _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char *>(wide) + 768, _MM_HINT_T0);
    const __m512i z0 = _mm512_load_si512(pa);
    __m512i z1{};
    if constexpr (MV == 2) z1 = _mm512_load_si512(pa + 64);
    __m512 a0 = even_steps(z0), a1{};
    if constexpr (MV == 2) a1 = even_steps(z1);
#pragma GCC unroll 12
    for (int j = 0; j < N; ++j) {
      const __m512 bj = _mm512_set1_ps(wide[j]);
      c0[j] = _mm512_fmadd_ps(a0, bj, c0[j]);
      if constexpr (MV == 2) c1[j] = _mm512_fmadd_ps(a1, bj, c1[j]);
    }
    a0 = odd_steps(z0);
    if constexpr (MV == 2) a1 = odd_steps(z1);
#pragma GCC unroll 12
    for (int j = 0; j < N; ++j) {
      const __m512 bj = _mm512_set1_ps(wide[kPairNr + j]);
      c0[j] = _mm512_fmadd_ps(a0, bj, c0[j]);
      if constexpr (MV == 2) c1[j] = _mm512_fmadd_ps(a1, bj, c1[j]);
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
// narrow_c_max_kc): its widened B panel, 96 KiB, then streams from L2
// beside A, both prefetched (wide_macro's deep_panel). Deeper, C goes
// through the driver's f32 copy. At 1024 (the stack panel's depth) the
// input gradients with k = 1152-1536 took 1.3-1.5x longer than the forward
// products of the same flops, through that copy; at 2048 they do not.
constexpr long kWideDeepest = 2048;

// A scratch panel for the widened B: on the stack up to 1024 packed steps
// (48 KiB: an f32 C's blocks are at most 512 deep); deeper panels are
// wide_macro's deep_panel, or the heap in full() and edge(), whose caller
// may pass any depth (the driver calls wide_macro).
struct WideScratch {
  static constexpr long kOnStack = 1024;
  alignas(64) float stack[kOnStack * kPairNr];
  std::unique_ptr<float[]> heap;
  float *get(long kcp) {
    if (kcp <= kOnStack) return stack;
    heap.reset(new float[kcp * kPairNr]);
    return heap.get();
  }
};

// The entry points for C type `C`, each tile from a widened B panel.
template <typename C>
struct WideKernel {
  template <int N>
  static void cols(long kcp, float alpha, const bf16 *a, const float *wide, float beta, C *c, long ldc, int m,
                   const float *bias) {
    if (m <= 16) wide_tile<N, 1, C>(kcp, alpha, a, wide, beta, c, ldc, wide_rows(m), 0, bias);
    else wide_tile<N, 2, C>(kcp, alpha, a, wide, beta, c, ldc, 0xffff, wide_rows(m - 16), bias);
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
    if (m == kPairMr && n == kPairNr) wide_tile<kPairNr, 2, C>(kcp, alpha, a, wide, beta, c, ldc, 0xffff, 0xffff, bias);
    else by_cols[n - 1](kcp, alpha, a, wide, beta, c, ldc, m, bias);
  }

  // GemmKernel's microkernels, for a caller other than wide_macro: each
  // widens its B panel itself.
  static void full(long kcp, float alpha, const bf16 *a, const bf16 *b, float beta, C *c, long ldc) {
    WideScratch w;
    float *wide = w.get(kcp);
    widen_packed(b, kcp, wide);
    any(kcp, alpha, a, wide, beta, c, ldc, kPairMr, kPairNr);
  }
  static void edge(long kcp, float alpha, const bf16 *a, const bf16 *b, float beta, C *c, long ldc, int m, int n) {
    WideScratch w;
    float *wide = w.get(kcp);
    widen_packed(b, kcp, wide);
    any(kcp, alpha, a, wide, beta, c, ldc, m, n);
  }
};

// A widened panel deeper than WideScratch's stack part (a bf16 C block of
// up to narrow_c_max_kc steps): kept per thread and grown as needed, never
// with a throwing allocation (this runs in the driver's team); null when
// the memory is refused.
inline float *deep_panel(long kcp) {
  thread_local std::unique_ptr<float[]> buf;
  thread_local long depth = 0;
  if (kcp > depth) {
    buf.reset();
    depth = 0;
    float *p = fault::allocation_fails() ? nullptr : new (std::nothrow) float[kcp * kPairNr];
    if (!p) return nullptr;
    buf.reset(p);
    depth = kcp;
  }
  return buf.get();
}

// The jr/ir loops with each B micro-panel widened once, from the packed
// panel or from op(B) in place, before the mc / 32 tiles that use it. The
// epilogue is fused (kernel.h's fuses_epilogue), as the avx512_bf16
// family's: nn.Linear's bias (Epilogue::row_bias) in the tile's registers;
// any other epilogue gets the tile in an f32 scratch, alpha acc + beta C as
// the kernel computes it, then rounded into C. Without memory for a deep
// panel, each tile is summed into the f32 scratch in chunks of k that the
// stack panel holds, each chunk of B widened again per tile: slower, the
// same result up to f32 rounding between chunks (said under HCOPS_VERBOSE).
template <typename Ty>
void wide_macro(const GemmKernel<Ty> &, const MacroBlock<Ty> &blk) {
  using C = typename Ty::c_type;
  constexpr long kChunk = WideScratch::kOnStack;
  const long kcp = blk.kc;
  WideScratch w;
  float *wide = kcp <= kChunk ? w.stack : deep_panel(kcp);
  const bool chunked = wide == nullptr;
  if (chunked) {
    wide = w.stack;
    note_once("wide_macro chunked", "gemm: no memory for a %ld-step widened bf16 panel: k in chunks of %ld, "
              "B widened per tile (slower)", kcp, kChunk);
  }
  const bool direct = blk.b_packed == nullptr;
  const float *row_bias = blk.epilogue ? blk.epilogue.row_bias : nullptr;
  alignas(64) float scratch[kPairMr * kPairNr];
  // Steps [k0, k0 + depth) of micro-panel jr into `wide`.
  const auto widen = [&](long jr, int ncols, long k0, long depth) {
    if (direct) widen_in_place(blk.b + jr * blk.csb + k0, blk.csb, ncols, depth, wide);
    else widen_packed(blk.b_packed + jr * kcp + k0 * kPairNr, depth, wide);
  };
  for (long jr = blk.j0; jr < blk.j1; jr += kPairNr) {
    const int ncols = int(std::min<long>(kPairNr, blk.j1 - jr));
    if (!chunked) widen(jr, ncols, 0, kcp);
    for (long ir = 0; ir < blk.mc; ir += kPairMr) {
      const int nrows = int(std::min<long>(kPairMr, blk.mc - ir));
      const bf16 *a = blk.a + ir * kcp;
      C *c = blk.c + ir + jr * blk.ldc;
      if (!chunked && (!blk.epilogue || row_bias)) {
        WideKernel<C>::any(kcp, blk.alpha, a, wide, blk.beta, c, blk.ldc, nrows, ncols,
                           row_bias ? row_bias + blk.i_origin + ir : nullptr);
        continue;
      }
      if (!chunked) {
        WideKernel<float>::any(kcp, blk.alpha, a, wide, 0.0f, scratch, kPairMr, nrows, ncols);
      } else {
        for (long k0 = 0; k0 < kcp; k0 += kChunk) {  // alpha A1 B1 + alpha A2 B2 + ...
          const long depth = std::min(kChunk, kcp - k0);
          widen(jr, ncols, k0, depth);
          WideKernel<float>::any(depth, blk.alpha, a + k0 * kPairMr, wide, k0 ? 1.0f : 0.0f, scratch, kPairMr,
                                 nrows, ncols);
        }
      }
      if (blk.beta != 0.0f)  // + beta C, the fma the kernel makes (beta = 0 never reads C)
        for (int j = 0; j < ncols; ++j)
          for (int i = 0; i < nrows; ++i)
            scratch[i + j * kPairMr] = std::fma(blk.beta, float(c[i + j * blk.ldc]), scratch[i + j * kPairMr]);
      if (blk.epilogue)
        blk.epilogue.apply(blk.epilogue.ctx, scratch, kPairMr, blk.i_origin + ir, nrows, blk.j_origin + jr, ncols);
      for (int j = 0; j < ncols; ++j)
        for (int i = 0; i < nrows; ++i) c[i + j * blk.ldc] = C(scratch[i + j * kPairMr]);
    }
  }
}

// Whether op(B) is read in place (widen_in_place): B not transposed and k
// even (the driver's k blocks are multiples of 8 but for the last, which is
// then even too), as the avx512_bf16 family's rule.
inline bool wide_b_in_place(Trans tb, long, long k) { return tb == Trans::N && k % 2 == 0; }

template <typename Ty>
constexpr GemmKernel<Ty> wide_gemm_kernel() {
  using C = typename Ty::c_type;
  GemmKernel<Ty> k{
      .mr = kPairMr,
      .nr = kPairNr,
      .k_align = 2,
      .full = &WideKernel<C>::full,
      .edge = &WideKernel<C>::edge,
      .full_direct = nullptr,  // wide_macro reads op(B) in place itself
      .edge_direct = nullptr,
      .pack_a = &avx512_bf16::pack_a<bf16, 1>,
      .pack_b = &avx512_bf16::pack_b<bf16, 1>,
      .macro = &wide_macro<Ty>,
      .fuses_epilogue = true,
      .narrow_c_max_kc = kWideDeepest,
  };
  k.b_in_place = &wide_b_in_place;
  k.tile_note = "bf16 widened onto the f32 FMAs";
  return k;
}

}  // namespace
}  // namespace hcops::kernels::avx512
