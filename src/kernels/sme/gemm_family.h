// The sme GEMM family, written once over a tiles class (the AMX family's
// pattern): HwTiles (tiles_hw.h, SME's FMOPA/BFMOPA into the ZA array; what
// kernels/sme/family.cpp lists) or EmulatedTiles (tiles_emulated.h, their
// semantics in software at a chosen vector length; what the tests run on
// any CPU). Everything else, the panel layouts, packing, edges, alpha and
// beta, the bf16 rounding of C, is this one code.
//
// A tiles class has:
//   words()                      f32 lanes of a streaming vector, w = SVL/32
//   fmopa(kc, a, b, acc)         acc = sum over kc steps of a_p (x) b_p: a_p
//                                the 2w f32 of A~'s step p, b_p the 2w of B~'s
//   bfmopa(pairs, a, b, acc)     the same over pairs of k steps, each a_p a
//                                2w x 2 bf16 pair row (kernels/pack_pairs.h)
//   fmopa_to_c(kc, a, b, acc, alpha, beta, c, ldc, m, n), bfmopa_to_c(...)
//                                the same sums into m x n of an f32 C:
//                                fma(beta, C, alpha sum) (C not read when
//                                beta = 0), written from the tiles (acc:
//                                the caller's block, for an emulation)
//   dwords(), dfmopa(kc, a, b, acc)
//                                the same in f64 (FEAT_SME_F64F64): d =
//                                SVL/64 lanes, a_p and b_p 2d f64, acc 2d x 2d
// acc is the 2w x 2w f32 block of C, column-major (leading dimension 2w):
// the four f32 tiles ZA0-ZA3 (w x w each) as 2 x 2; in f64 the four f64
// tiles ZA0.D-ZA3.D (d x d each), 2d x 2d, written back in f64 (DGEMM's
// sums never leave f64).
//
// The tile is 2w x 2w: mr = nr = 2 SVL/32 (32 x 32 at 512 bits, 8 x 8 at
// 128, 128 x 128 at 2048), so both follow the streaming vector length and
// the GemmKernels are made on first use. One k step is two A and two B
// vector loads for four outer products (4 w^2 multiply-adds): the ZA
// array holds the accumulators, so no register limits the tile.
//
// An f32 C without an epilogue is written from ZA inside the streaming
// region (HwTiles::fmopa_to_c). Otherwise (a bf16 C, rounded once; an
// epilogue) the tiles write their sums to acc, and the C++ around them
// scales, adds beta C, applies the epilogue and stores the m x n part, at
// the cost of one pass over the 2w x 2w block per kc steps. The family's
// logic is testable on emulated tiles.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "common/dtype.h"
#include "kernels/kernel.h"
#include "kernels/pack.h"
#include "kernels/pack_pairs.h"

namespace hcops::kernels::sme {
namespace {

// C[0:m, 0:n] = alpha acc + beta C (beta == 0 never reads C), and with the
// GEMM's epilogue `ep` (the last k block; i0, j0: the tile's place in C)
// applied to those values (f32 or, for f64 tiles, f64) in acc before they
// are rounded to C's type: a bf16 C is rounded once. acc and C never
// overlap: the loops vectorise.
template <typename Acc, typename C>
void write_back(Acc *__restrict acc, long ld, Acc alpha, Acc beta, C *__restrict c, long ldc, int m, int n,
                const Epilogue<Acc> &ep, long i0, long j0) {
  if (!ep) {
    for (int j = 0; j < n; ++j) {
      const Acc *__restrict s = acc + j * ld;
      C *__restrict cj = c + j * ldc;
      if (beta == Acc(0))
        for (int i = 0; i < m; ++i) cj[i] = C(alpha * s[i]);
      else
        for (int i = 0; i < m; ++i) cj[i] = C(alpha * s[i] + beta * Acc(cj[i]));
    }
    return;
  }
  for (int j = 0; j < n; ++j) {
    Acc *__restrict s = acc + j * ld;
    const C *__restrict cj = c + j * ldc;
    if (beta == Acc(0))
      for (int i = 0; i < m; ++i) s[i] = alpha * s[i];
    else
      for (int i = 0; i < m; ++i) s[i] = alpha * s[i] + beta * Acc(cj[i]);
  }
  ep.apply(ep.ctx, acc, ld, i0, m, j0, n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) c[i + j * ldc] = C(acc[i + j * ld]);
}

// The tiles' sums for one call: 2w x 2w f32 (or 2d x 2d f64), at most
// 128 x 128 f32 (SVL 2048), on the stack of the thread that computes them
// (64 KiB at most; 4 KiB at SVL 512).
#define HCOPS_SME_ACC_BLOCK(T, name, w2)                                          \
  T *name = static_cast<T *>(__builtin_alloca(sizeof(T) * (w2) * (w2) + 64)); \
  name = reinterpret_cast<T *>((reinterpret_cast<uintptr_t>(name) + 63) & ~uintptr_t(63))

template <typename Tiles, typename Ty>
struct TileKernel {
  using PA = typename Ty::packed_a_type;
  using PB = typename Ty::packed_b_type;
  using C = typename Ty::c_type;
  using Acc = typename Ty::acc_type;
  static constexpr bool kPairs = std::is_same_v<PA, bf16>;  // BFMOPA on k pairs, else FMOPA
  static constexpr bool kF64 = std::is_same_v<Acc, double>;  // FMOPA .d on the f64 tiles
  static_assert(std::is_same_v<Acc, float> || (kF64 && std::is_same_v<PA, double>), "ZA's f32 or f64 tiles");

  // 2 SVL/32 f32 (2 SVL/64 f64): two tiles of the element each way.
  static int width() { return int(2 * (kF64 ? Tiles::dwords() : Tiles::words())); }

  // One tile into acc (2w x 2w), then C: kcp is the packed depth (pairs of
  // steps for bf16 panels).
  // An f32 C without an epilogue is written from the tiles themselves
  // (Tiles::*_to_c): no pass over acc.
  static void tile(Acc *acc, long kcp, Acc alpha, const PA *a, const PB *b, Acc beta, C *c, long ldc, int m, int n,
                   const Epilogue<Acc> &ep, long i0, long j0) {
    if constexpr (std::is_same_v<C, float>) {
      if (!ep) {
        if constexpr (kPairs) Tiles::bfmopa_to_c(kcp / 2, a, b, acc, alpha, beta, c, ldc, m, n);
        else Tiles::fmopa_to_c(kcp, a, b, acc, alpha, beta, c, ldc, m, n);
        return;
      }
    }
    if constexpr (kF64) Tiles::dfmopa(kcp, a, b, acc);
    else if constexpr (kPairs) Tiles::bfmopa(kcp / 2, a, b, acc);
    else Tiles::fmopa(kcp, a, b, acc);
    write_back(acc, width(), alpha, beta, c, ldc, m, n, ep, i0, j0);
  }
  static void edge(long kcp, Acc alpha, const PA *a, const PB *b, Acc beta, C *c, long ldc, int m, int n) {
    HCOPS_SME_ACC_BLOCK(Acc, acc, width());
    tile(acc, kcp, alpha, a, b, beta, c, ldc, m, n, {}, 0, 0);
  }
  static void full(long kcp, Acc alpha, const PA *a, const PB *b, Acc beta, C *c, long ldc) {
    edge(kcp, alpha, a, b, beta, c, ldc, width(), width());
  }

  // The jr/ir loops (macro_kernel.h's), one acc block for all the tiles,
  // with the GEMM's epilogue fused into each tile's write-back on the last
  // k block.
  static void macro(const GemmKernel<Ty> &k, const MacroBlock<Ty> &blk) {
    HCOPS_SME_ACC_BLOCK(Acc, acc, k.mr);
    for (long jr = blk.j0; jr < blk.j1; jr += k.nr) {
      const int ncols = int(std::min<long>(k.nr, blk.j1 - jr));
      for (long ir = 0; ir < blk.mc; ir += k.mr) {
        const int nrows = int(std::min<long>(k.mr, blk.mc - ir));
        tile(acc, blk.kc, blk.alpha, blk.a + ir * blk.kc, blk.b_packed + jr * blk.kc, blk.beta,
             blk.c + ir + jr * blk.ldc, blk.ldc, nrows, ncols, blk.epilogue, blk.i_origin + ir, blk.j_origin + jr);
      }
    }
  }

  static void pack_a(PA *dst, const typename Ty::a_type *a, long lda, Trans ta, long i0, long mc, long p0, long kc) {
    if constexpr (kPairs) pack_a_pairs_width<typename Ty::a_type, Ty::splits>(dst, a, lda, ta, i0, mc, p0, kc, width());
    else pack_a_width(dst, a, lda, ta, i0, mc, p0, kc, width());
  }
  static void pack_b(PB *dst, const typename Ty::b_type *b, long ldb, Trans tb, long p0, long kc, long j0, long nc) {
    if constexpr (kPairs) pack_b_pairs_width<typename Ty::b_type, Ty::splits>(dst, b, ldb, tb, p0, kc, j0, nc, width());
    else pack_b_width(dst, b, ldb, tb, p0, kc, j0, nc, width());
  }
};
#undef HCOPS_SME_ACC_BLOCK

// The family's GemmKernel for Ty on these tiles. B is always packed: the
// tiles read whole vectors of it.
template <typename Tiles, typename Ty>
GemmKernel<Ty> tile_kernel() {
  using K = TileKernel<Tiles, Ty>;
  return {
      .mr = K::width(),
      .nr = K::width(),
      .k_align = K::kPairs ? 2 : 1,
      .full = &K::full,
      .edge = &K::edge,
      .full_direct = nullptr,
      .edge_direct = nullptr,
      .pack_a = &K::pack_a,
      .pack_b = &K::pack_b,
      .macro = &K::macro,
      .fuses_epilogue = true,
  };
}

}  // namespace
}  // namespace hcops::kernels::sme
