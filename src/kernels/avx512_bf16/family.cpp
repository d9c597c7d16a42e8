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
// Blocking is gemm/blocking.h's: with 2-byte panels it gives kc = 512 (the
// clamp; a 12 KiB B micro-panel, a quarter of Zen 5's L1), mc = 512 (a 512
// KiB A block, half of L2), nc up to 8184; a bf16 C takes k up to 8192 in one
// block instead, because the macro-kernel fuses the epilogue
// (fused_macro_kernel), and its B micro-panel then streams from L2 beside
// A, both prefetched. op(B) = B (nn.Linear's activations in its forward and
// input gradient) is read in place rather than packed (InPlace). Measured
// on the DiT-S/2 trace (one thread, perf, before those): the microkernels
// took ~70% of the time, packing ~12%, the driver the rest; small products
// (256 x 256 x 64) reached up to ~390 GFLOPS on one thread, packing included
// (94% of the ~415 GFLOPS vdpbf16ps peak), in the quiet moments of a heavily
// shared machine. doc/perf/torch2-gemm.md has DiT's products through
// PyTorch against oneDNN.
#include <immintrin.h>
#include <xmmintrin.h>

// GCC 12 warns inside its own shift/convert/unpack intrinsics (their
// _mm512_undefined_* operand) once inlined here; nothing is uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <array>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "kernels/avx512/bf16_tile.h"
#include "kernels/avx512_bf16/convert.h"
#include "kernels/avx512_bf16/dot_rate.h"
#include "kernels/avx512_bf16/pair_pack.h"
#include "kernels/avx512_bf16/shallow_bf16.h"
#include "kernels/avx512_bf16/skinny_bf16.h"
#include "kernels/avx512_bf16/vec.h"
#include "kernels/family_flags.h"
#include "kernels/kernel.h"
#include "kernels/macro_kernel.h"

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

// Where a tile's B words come from: a packed panel (kNr words a pair step)
// or op(B) in place (InPlace), each column's k contiguous.
struct Packed {
  const word *pb;
  Packed(const bf16 *b, long) : pb(reinterpret_cast<const word *>(b)) {}
  __m512bh pair(int j) const { return (__m512bh)_mm512_set1_epi32(pb[j]); }
  void next() { pb += kNr; }
  // The panel is one stream, 48 bytes a step: 16 steps ahead.
  void prefetch() const { _mm_prefetch(reinterpret_cast<const char *>(pb) + 768, _MM_HINT_T0); }
};

// op(B) read where it is (B not transposed: column j at b + j * ldb, its
// pair q the 32-bit word q of it, broadcast as the skinny kernel's b_pair
// does). This is how nn.Linear's forward and input gradient get their
// activations (the large operand: 2048 x 1536 in DiT-S/2) with no packing
// pass of their own, which, with the operands cold, the units had to wait
// for. Up to 12 streams of 4 bytes a step: each step prefetches one of them
// 64 steps ahead, in turn, so each line is asked for once or twice before it
// is read.
template <int N>
struct InPlace {
  const bf16 *col0;
  long ldb;
  int turn = 0;
  InPlace(const bf16 *b, long ld) : col0(b), ldb(ld) {}
  __m512bh pair(int j) const { return skinny_bf16::b_pair(col0 + j * ldb, 0); }
  void next() { col0 += 2; }
  void prefetch() {
    _mm_prefetch(reinterpret_cast<const char *>(col0 + turn * ldb) + 256, _MM_HINT_T0);
    turn = turn + 1 == N ? 0 : turn + 1;
  }
};

// C[0:16*MV, 0:N] = alpha A~B~ + beta C; rows limited to masks m0, m1 (MV = 1:
// rows to m0 alone, half the dot products of a masked full tile). kcp is the
// packed depth (even); B~ panels are always kNr wide, so a tile of fewer
// columns still steps by kNr words (Src: Packed, or InPlace<N> with ldb).
// Forced inline so each entry point gets constant strides and its
// accumulators stay in registers.
template <int N, int MV, typename C, typename Src = Packed>
__attribute__((always_inline)) inline void tile(long kcp, float alpha, const bf16 *__restrict a,
                                                const bf16 *__restrict b, long ldb, float beta, C *__restrict c,
                                                long ldc, __mmask16 m0, __mmask16 m1, const float *bias) {
  __m512 c0[N], c1[N];
#pragma GCC unroll 12
  for (int j = 0; j < N; ++j) {
    c0[j] = c1[j] = _mm512_setzero_ps();
    _mm_prefetch(reinterpret_cast<const char *>(c + j * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char *>(c + j * ldc + 16 * MV - 1), _MM_HINT_T0);
  }
  const char *pa = reinterpret_cast<const char *>(a);
  Src src(b, ldb);
  // A streams from L2 (128 bytes a pair step) and B, from L2 too once k
  // outgrows a block of L1 (a bf16 C takes all of k in one block:
  // gemm/blocking.h): both prefetched. Without B's prefetch, 2048 x 384 x
  // 1536 (NN, k in one block of 1536) ran at 345 GFLOPS on one Zen 5 core,
  // with it 452; A's two lines a step rather than one: 464.
#pragma GCC unroll 4
  for (long p = 0; p < kcp / 2; ++p, pa += 4 * kMr, src.next()) {
    _mm_prefetch(pa + 1024, _MM_HINT_T0);
    _mm_prefetch(pa + 1088, _MM_HINT_T0);
    src.prefetch();
    const __m512bh a0 = (__m512bh)_mm512_load_si512(pa);
    __m512bh a1{};
    if constexpr (MV == 2) a1 = (__m512bh)_mm512_load_si512(pa + 64);
#pragma GCC unroll 12
    for (int j = 0; j < N; ++j) {
      const __m512bh bj = src.pair(j);
      c0[j] = _mm512_dpbf16_ps(c0[j], a0, bj);
      if constexpr (MV == 2) c1[j] = _mm512_dpbf16_ps(c1[j], a1, bj);
    }
  }

  // A row bias (Epilogue::row_bias, with a fused epilogue) is added after
  // alpha acc + beta C, the f32 addition its `apply` makes, before rounding.
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
    if (beta != 0.0f) r0 = _mm512_fmadd_ps(vb, Out<C>::load(cj, m0), r0);
    if (bias) r0 = _mm512_add_ps(r0, bias0);
    Out<C>::store(cj, r0, m0);
    if constexpr (MV == 2) {
      __m512 r1 = _mm512_mul_ps(va, c1[j]);
      if (beta != 0.0f) r1 = _mm512_fmadd_ps(vb, Out<C>::load(cj + 16, m1), r1);
      if (bias) r1 = _mm512_add_ps(r1, bias1);
      Out<C>::store(cj + 16, r1, m1);
    }
  }
}

inline __mmask16 rows_mask(int rows) { return static_cast<__mmask16>((1u << rows) - 1); }

// The GemmKernel entry points for C type `C`: the full tile and the edge
// tiles (fewer columns: compile-time variants; fewer rows: masks), from a
// packed B panel or (direct) op(B) in place.
template <typename C>
struct Kernel {
  template <int N, bool Direct>
  static void cols(long kcp, float alpha, const bf16 *a, const bf16 *b, long ldb, float beta, C *c, long ldc, int m,
                   const float *bias) {
    using Src = std::conditional_t<Direct, InPlace<N>, Packed>;
    if (m <= 16) tile<N, 1, C, Src>(kcp, alpha, a, b, ldb, beta, c, ldc, rows_mask(m), 0, bias);
    else tile<N, 2, C, Src>(kcp, alpha, a, b, ldb, beta, c, ldc, 0xffff, rows_mask(m - 16), bias);
  }

  template <bool Direct, int... N>
  static constexpr auto table(std::integer_sequence<int, N...>) {
    using Fn = void (*)(long, float, const bf16 *, const bf16 *, long, float, C *, long, int, const float *);
    return std::array<Fn, sizeof...(N)>{&cols<N + 1, Direct>...};
  }

  // Any tile, with the rows' bias (null: none).
  template <bool Direct>
  static void any(long kcp, float alpha, const bf16 *a, const bf16 *b, long ldb, float beta, C *c, long ldc, int m,
                  int n, const float *bias) {
    using Src = std::conditional_t<Direct, InPlace<kNr>, Packed>;
    static constexpr auto by_cols = table<Direct>(std::make_integer_sequence<int, kNr>{});
    if (m == kMr && n == kNr) tile<kNr, 2, C, Src>(kcp, alpha, a, b, ldb, beta, c, ldc, 0xffff, 0xffff, bias);
    else by_cols[n - 1](kcp, alpha, a, b, ldb, beta, c, ldc, m, bias);
  }

  static void full(long kcp, float alpha, const bf16 *a, const bf16 *b, float beta, C *c, long ldc) {
    tile<kNr, 2, C>(kcp, alpha, a, b, 0, beta, c, ldc, 0xffff, 0xffff, nullptr);
  }
  static void edge(long kcp, float alpha, const bf16 *a, const bf16 *b, float beta, C *c, long ldc, int m, int n) {
    any<false>(kcp, alpha, a, b, 0, beta, c, ldc, m, n, nullptr);
  }
  // op(B) in place: rsb = 1 (b_in_place allows nothing else), csb = ldb.
  static void full_direct(long kcp, float alpha, const bf16 *a, const bf16 *b, long, long csb, float beta, C *c,
                          long ldc) {
    tile<kNr, 2, C, InPlace<kNr>>(kcp, alpha, a, b, csb, beta, c, ldc, 0xffff, 0xffff, nullptr);
  }
  static void edge_direct(long kcp, float alpha, const bf16 *a, const bf16 *b, long, long csb, float beta, C *c,
                          long ldc, int m, int n) {
    any<true>(kcp, alpha, a, b, csb, beta, c, ldc, m, n, nullptr);
  }
};

// The macro-kernel of a family that fuses the epilogue (kernel.h): on the
// last k block each tile gets the GEMM's epilogue on its f32 values before
// it is rounded and stored, so that a bf16 C needs no f32 copy
// (gemm.cpp's gemm_through_wide_c) and, with it, k up to kNarrowCMaxKc in
// one block (gemm/blocking.h): on Zen 5, nn.Linear's forward 2048 x 1152 x
// 384 with its bias went from 0.72x to 1.0x oneDNN on one thread, and the
// input gradients with k = 1152-1536 from 0.77-0.95x. nn.Linear's bias
// (Epilogue::row_bias) is added in the tile's registers; any other
// epilogue gets the tile in an f32 scratch, alpha acc + beta C as the
// kernel computes it, then rounded into C. Other blocks take the default
// loops.
template <typename Ty>
void fused_macro_kernel(const GemmKernel<Ty> &k, const MacroBlock<Ty> &blk) {
  using C = typename Ty::c_type;
  if (!blk.epilogue) return macro_kernel(k, blk);
  const long kc = blk.kc;
  // In place only for bf16 B (pair_kernel: f32 inputs are always packed).
  constexpr bool can_be_direct = std::is_same_v<typename Ty::b_type, bf16>;
  const bool direct = can_be_direct && blk.b_packed == nullptr;
  const float *row_bias = blk.epilogue.row_bias;
  alignas(64) float scratch[kMr * kNr];
  const __m512 vb = _mm512_set1_ps(blk.beta);
  for (long jr = blk.j0; jr < blk.j1; jr += kNr) {
    const int n = static_cast<int>(std::min<long>(kNr, blk.j1 - jr));
    const bf16 *b = direct ? nullptr : blk.b_packed + jr * kc;  // (no offset on a null panel)
    if constexpr (can_be_direct)
      if (direct) b = blk.b + jr * blk.csb;
    for (long ir = 0; ir < blk.mc; ir += kMr) {
      const int m = static_cast<int>(std::min<long>(kMr, blk.mc - ir));
      C *c = blk.c + ir + jr * blk.ldc;
      const bf16 *a = blk.a + ir * kc;
      const long i0 = blk.i_origin + ir, j0 = blk.j_origin + jr;
      // The tile into `out` (C or the scratch).
      const auto tile_into = [&](auto *out, long ldo, float beta, const float *bias) {
        using Out = std::remove_pointer_t<decltype(out)>;
        if (direct) Kernel<Out>::template any<true>(kc, blk.alpha, a, b, blk.csb, beta, out, ldo, m, n, bias);
        else Kernel<Out>::template any<false>(kc, blk.alpha, a, b, 0, beta, out, ldo, m, n, bias);
      };
      if (row_bias) {
        tile_into(c, blk.ldc, blk.beta, row_bias + i0);
        continue;
      }
      tile_into(scratch, long(kMr), 0.0f, nullptr);
      const __mmask16 lo = rows_mask(std::min(m, 16)), hi = m > 16 ? rows_mask(m - 16) : 0;
      // Rows past m of the scratch were never written: masked off, so that
      // nothing computes on them (no floating-point flags from stale values).
      for (int j = 0; j < n && blk.beta != 0.0f; ++j) {  // + beta C, the fma the kernel makes
        float *s = scratch + j * kMr;
        const C *cj = c + j * blk.ldc;
        _mm512_mask_store_ps(s, lo, _mm512_fmadd_ps(vb, Out<C>::load(cj, lo), _mm512_maskz_load_ps(lo, s)));
        if (hi)
          _mm512_mask_store_ps(s + 16, hi,
                               _mm512_fmadd_ps(vb, Out<C>::load(cj + 16, hi), _mm512_maskz_load_ps(hi, s + 16)));
      }
      blk.epilogue.apply(blk.epilogue.ctx, scratch, kMr, i0, m, j0, n);
      for (int j = 0; j < n; ++j) {
        Out<C>::store(c + j * blk.ldc, _mm512_maskz_load_ps(lo, scratch + j * kMr), lo);
        if (hi) Out<C>::store(c + j * blk.ldc + 16, _mm512_maskz_load_ps(hi, scratch + j * kMr + 16), hi);
      }
    }
  }
}

// Whether op(B) is read in place (InPlace): B not transposed, bf16 as given
// (no conversion, no splits) and k even (the packed depth is k itself: the
// driver's k blocks are multiples of 8 but for the last, which is then
// even too). Both nn.Linear's forward and its input gradient are such
// products; the weight gradient's op(B) is transposed and is packed.
template <typename Ty>
bool reads_b_in_place(Trans tb, long, long k) {
  return tb == Trans::N && k % 2 == 0;
}

template <typename Ty>
constexpr GemmKernel<Ty> pair_kernel() {
  using C = typename Ty::c_type;
  GemmKernel<Ty> k{
      .mr = kMr,
      .nr = kNr,
      .k_align = 2,
      .full = &Kernel<C>::full,
      .edge = &Kernel<C>::edge,
      .full_direct = nullptr,  // f32 inputs are converted (and split) as they are packed
      .edge_direct = nullptr,
      .pack_a = &pack_a<typename Ty::a_type, Ty::splits>,
      .pack_b = &pack_b<typename Ty::b_type, Ty::splits>,
      .macro = &fused_macro_kernel<Ty>,
      .fuses_epilogue = true,
      .bf16_instructions = true,  // vdpbf16ps
  };
  if constexpr (std::is_same_v<typename Ty::b_type, bf16> && Ty::splits == 1) {
    k.full_direct = &Kernel<C>::full_direct;
    k.edge_direct = &Kernel<C>::edge_direct;
    k.b_in_place = &reads_b_in_place<Ty>;
  }
  return k;
}

// bf16 inputs as given also have the skinny kernel (n <= 16, A streamed)
// and the shallow one (k <= 16, C written from registers, two steps of k
// per vdpbf16ps).
template <typename Ty>
constexpr GemmKernel<Ty> thin_paths(GemmKernel<Ty> k) {
  return shallow_bf16::with_shallow(skinny_bf16::with_skinny(k));
}
constexpr GemmKernel<Bf16Gemm> bf16_f32 = thin_paths(pair_kernel<Bf16Gemm>());
constexpr GemmKernel<Bf16Bf16Gemm> bf16_bf16 = thin_paths(pair_kernel<Bf16Bf16Gemm>());
constexpr GemmKernel<SgemmBf16> sgemm_bf16 = pair_kernel<SgemmBf16>();
constexpr GemmKernel<SgemmBf16x3> sgemm_bf16x3 = pair_kernel<SgemmBf16x3>();

// Where vdpbf16ps is the slower way (dot_rate.h), bf16 inputs take the
// avx512 family's tile widened onto the FMAs (avx512/bf16_tile.h, this
// family's copy) with this family's skinny and shallow kernels, which stay
// faster on adaLN's products (memory-bound: 0.23-0.34 ms against 0.33-0.48
// for the widened skinny kernel on the Intel guest dot_rate.h names).
// HCOPS_ISA=avx512_bf16 keeps vdpbf16ps throughout; HCOPS_ISA=avx512 takes
// the widened tile with its own thin kernels. The f32-as-bf16 modes stay on
// vdpbf16ps: they are asked for.
constexpr GemmKernel<Bf16Gemm> bf16_f32_wide = thin_paths(avx512::wide_gemm_kernel<Bf16Gemm>());
constexpr GemmKernel<Bf16Bf16Gemm> bf16_bf16_wide = thin_paths(avx512::wide_gemm_kernel<Bf16Bf16Gemm>());
constexpr KernelRef kRefs[] = {
    KernelRef::unless(bf16_f32, &vdpbf16ps_slower_than_fma),
    KernelRef::unless(bf16_bf16, &vdpbf16ps_slower_than_fma),
    KernelRef::of(bf16_f32_wide),
    KernelRef::of(bf16_bf16_wide),
    KernelRef::of(sgemm_bf16),
    KernelRef::of(sgemm_bf16x3),
};

}  // namespace

extern constexpr KernelList kernels = kernel_list(kRefs);

}  // namespace hcops::kernels::avx512_bf16
