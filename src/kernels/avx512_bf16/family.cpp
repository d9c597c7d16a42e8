// AVX512_BF16 microkernels: vdpbf16ps on K-pair panels (pair_pack.h), for
// the four bf16 datatype combinations of kernels/gemm_types.h. One pair step of the
// 32 x 12 tile is two zmm of A (16 rows x one k pair each) against 12 B pairs,
// each a 32-bit word broadcast from memory, into 24 f32 accumulators: 24 vdpbf16ps to 2 vector loads, 26 of
// the 32 zmm registers. The same shape as the avx512 family's f32 tile, for the
// same reason: 12 independent accumulator chains per A vector hide the
// instruction's latency (Zen 5 needs ~12 chains to reach its ~415 GFLOPS per
// core, ../shared/notes/matrix-units.md), and 2 A loads + 12 broadcasts per 24
// dot products stay well inside the load ports. GCC 12 does not fold the
// broadcast into the instruction as {1to16}; it emits vpbroadcastd from
// memory, a load rather than work for the FP pipes vdpbf16ps needs, and the
// figures below show the loop is not held back by it.
//
// Blocking is gemm/blocking.h's, unchanged: with 2-byte panels it gives kc =
// 512 (the clamp; a 12 KiB B micro-panel, a quarter of Zen 5's L1), mc = 512
// (a 512 KiB A block, half of L2), nc up to 8184. Measured on the DiT-S/2
// trace (one thread, perf): the microkernels take ~70% of the time, packing
// ~12%, the driver the rest; small products (256 x 256 x 64) reached up to
// ~390 GFLOPS on one thread, packing included (94% of the ~415 GFLOPS
// vdpbf16ps peak), in the quiet moments of a heavily shared machine.
#include <immintrin.h>
#include <xmmintrin.h>

// GCC 12 warns inside its own shift/convert/unpack intrinsics (their
// _mm512_undefined_* operand) once inlined here; nothing is uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <array>
#include <cstdint>
#include <utility>

#include "kernels/avx512_bf16/convert.h"
#include "kernels/avx512_bf16/pair_pack.h"
#include "kernels/avx512_bf16/skinny_bf16.h"
#include "kernels/avx512_bf16/vec.h"
#include "kernels/family_flags.h"
#include "kernels/kernel.h"
#include "kernels/macro_kernel.h"
#include "kernels/shallow.h"

HCOPS_FAMILY_FLAGS_MATCH(avx512_bf16);

namespace hcops::kernels::avx512_bf16 {
namespace {

using word = int32_t __attribute__((may_alias));

// C as stored: f32, or bf16 widened on load and rounded to nearest even on store.
template <typename C>
struct Out;
template <>
struct Out<float> {
  static __m512 load(const float *p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
  static void store(float *p, __m512 v, __mmask16 m) { _mm512_mask_storeu_ps(p, m, v); }
};
template <>
struct Out<bf16> {
  static __m512 load(const bf16 *p, __mmask16 m) { return to_f32(_mm256_maskz_loadu_epi16(m, p)); }
  static void store(bf16 *p, __m512 v, __mmask16 m) { _mm256_mask_storeu_epi16(p, m, to_bf16(v)); }
};

// C[0:16*MV, 0:N] = alpha A~B~ + beta C; rows limited to masks m0, m1 (MV = 1:
// rows to m0 alone, half the dot products of a masked full tile). kcp is the
// packed depth (even); B~ panels are always kNr wide, so a tile of fewer
// columns still steps by kNr words. Forced inline so each entry point gets
// constant strides and its accumulators stay in registers.
template <int N, int MV, typename C>
__attribute__((always_inline)) inline void tile(long kcp, float alpha, const bf16 *__restrict a,
                                                const bf16 *__restrict b, float beta, C *__restrict c, long ldc,
                                                __mmask16 m0, __mmask16 m1) {
  __m512 c0[N], c1[N];
#pragma GCC unroll 12
  for (int j = 0; j < N; ++j) {
    c0[j] = c1[j] = _mm512_setzero_ps();
    _mm_prefetch(reinterpret_cast<const char *>(c + j * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char *>(c + j * ldc + 16 * MV - 1), _MM_HINT_T0);
  }
  const char *pa = reinterpret_cast<const char *>(a);
  const word *pb = reinterpret_cast<const word *>(b);
  // A streams from L2 (128 bytes a pair step): prefetched 8 steps ahead, one
  // line a step, the other line of the step by the next unrolled copy.
#pragma GCC unroll 4
  for (long p = 0; p < kcp / 2; ++p, pa += 4 * kMr, pb += kNr) {
    _mm_prefetch(pa + 1024 + 64 * (p & 1), _MM_HINT_T0);
    const __m512bh a0 = (__m512bh)_mm512_load_si512(pa);
    __m512bh a1{};
    if constexpr (MV == 2) a1 = (__m512bh)_mm512_load_si512(pa + 64);
#pragma GCC unroll 12
    for (int j = 0; j < N; ++j) {
      const __m512bh bj = (__m512bh)_mm512_set1_epi32(pb[j]);
      c0[j] = _mm512_dpbf16_ps(c0[j], a0, bj);
      if constexpr (MV == 2) c1[j] = _mm512_dpbf16_ps(c1[j], a1, bj);
    }
  }

  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 12
  for (int j = 0; j < N; ++j) {
    C *cj = c + j * ldc;
    __m512 r0 = _mm512_mul_ps(va, c0[j]);
    if (beta != 0.0f) r0 = _mm512_fmadd_ps(vb, Out<C>::load(cj, m0), r0);
    Out<C>::store(cj, r0, m0);
    if constexpr (MV == 2) {
      __m512 r1 = _mm512_mul_ps(va, c1[j]);
      if (beta != 0.0f) r1 = _mm512_fmadd_ps(vb, Out<C>::load(cj + 16, m1), r1);
      Out<C>::store(cj + 16, r1, m1);
    }
  }
}

inline __mmask16 rows_mask(int rows) { return static_cast<__mmask16>((1u << rows) - 1); }

// The GemmKernel entry points for C type `C`: the full tile and the edge
// tiles (fewer columns: compile-time variants; fewer rows: masks).
template <typename C>
struct Kernel {
  static void full(long kcp, float alpha, const bf16 *a, const bf16 *b, float beta, C *c, long ldc) {
    tile<kNr, 2, C>(kcp, alpha, a, b, beta, c, ldc, 0xffff, 0xffff);
  }

  template <int N>
  static void cols(long kcp, float alpha, const bf16 *a, const bf16 *b, float beta, C *c, long ldc, int m) {
    if (m <= 16) tile<N, 1, C>(kcp, alpha, a, b, beta, c, ldc, rows_mask(m), 0);
    else tile<N, 2, C>(kcp, alpha, a, b, beta, c, ldc, 0xffff, rows_mask(m - 16));
  }

  template <int... N>
  static constexpr auto table(std::integer_sequence<int, N...>) {
    using Fn = void (*)(long, float, const bf16 *, const bf16 *, float, C *, long, int);
    return std::array<Fn, sizeof...(N)>{&cols<N + 1>...};
  }

  static void edge(long kcp, float alpha, const bf16 *a, const bf16 *b, float beta, C *c, long ldc, int m, int n) {
    static constexpr auto by_cols = table(std::make_integer_sequence<int, kNr>{});
    by_cols[n - 1](kcp, alpha, a, b, beta, c, ldc, m);
  }
};

template <typename Ty>
constexpr GemmKernel<Ty> pair_kernel() {
  using C = typename Ty::c_type;
  return {
      .mr = kMr,
      .nr = kNr,
      .k_align = 2,
      .full = &Kernel<C>::full,
      .edge = &Kernel<C>::edge,
      .full_direct = nullptr,  // k is padded to pairs: B is always packed
      .edge_direct = nullptr,
      .pack_a = &pack_a<typename Ty::a_type, Ty::splits>,
      .pack_b = &pack_b<typename Ty::b_type, Ty::splits>,
      .macro = &macro_kernel<Ty>,
  };
}

// bf16 inputs as given also have the skinny kernel (n <= 16, A streamed)
// and the shallow one (k <= 16, C written from registers).
template <typename Ty>
constexpr GemmKernel<Ty> thin_paths(GemmKernel<Ty> k) {
  return shallow::with_shallow<Ty, avx512_bf16::F32>(skinny_bf16::with_skinny(k));
}
constexpr GemmKernel<Bf16Gemm> bf16_f32 = thin_paths(pair_kernel<Bf16Gemm>());
constexpr GemmKernel<Bf16Bf16Gemm> bf16_bf16 = thin_paths(pair_kernel<Bf16Bf16Gemm>());
constexpr GemmKernel<SgemmBf16> sgemm_bf16 = pair_kernel<SgemmBf16>();
constexpr GemmKernel<SgemmBf16x3> sgemm_bf16x3 = pair_kernel<SgemmBf16x3>();

}  // namespace

extern constexpr KernelList kernels = kernel_list<bf16_f32, bf16_bf16, sgemm_bf16, sgemm_bf16x3>();

}  // namespace hcops::kernels::avx512_bf16
