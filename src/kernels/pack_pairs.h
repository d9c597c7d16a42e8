// Packing for the families that take k in pairs (vdpbf16ps, AMX's VNNI
// operand): panels of bf16 in which each pair of k steps of one row (or
// column) sits side by side, the layout those instructions read:
//
//   dst[(kp * W + r) * 2 + e],  kp = q * S + s,  k = 2q + e (e = 0, 1)
//
// W is the panel width (MR or NR), S the datatypes' splits and s a split:
// with S = 1 the slot holds bf16(x); with S = 3 (bf16x3) a pair of k steps
// becomes three packed pairs, A's slots holding (hi, hi, lo) and B's (hi,
// lo, hi) (the cross slots' hi zero where hi is not finite), so the pairs' dot products sum a_hi b_hi + a_hi b_lo +
// a_lo b_hi (hi = bf16(x), lo = bf16(x - hi), kernel.h's GemmTypes). A panel is packed_steps(kc, S, KAlign) steps deep;
// the steps past the data are zero, as are the rows of a partial panel.
//
// Included by each family's source and compiled with its ISA flags (the
// anonymous namespace keeps every family's copy its own, as pack.h). These
// are the portable loops; a family may supply faster ones with the same
// output.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/dtype.h"
#include "kernels/gemm_types.h"
#include "kernels/kernel.h"

namespace hcops {
namespace {

enum class PairRole { a, b };

// The S bf16 slots of one input value x for role R.
template <int S, PairRole R>
inline void split_value(float x, bf16 *slots) {
  const bf16 hi(x);
  if constexpr (S == 1) {
    slots[0] = hi;
  } else {
    static_assert(S == 3, "splits are 1 or 3");
    // x - hi is exact in f32. A non-finite hi (Inf, NaN, or a finite x that
    // rounded to Inf) enters the sum through hi * hi alone: both its cross
    // slots are zero, for in a_hi b_lo + a_lo b_hi an Inf against an exact
    // bf16 (whose lo is 0) would make Inf * 0 = NaN where f32 gives Inf.
    const float hf = float(hi);
    const bool finite = std::isfinite(hf);
    const bf16 lo = finite ? bf16(x - hf) : bf16(0.0f), cross = finite ? hi : bf16(0.0f);
    slots[0] = hi;
    slots[1] = R == PairRole::a ? cross : lo;
    slots[2] = R == PairRole::a ? lo : cross;
  }
}
template <int S, PairRole R>
inline void split_value(bf16 x, bf16 *slots) {
  static_assert(S == 1, "bf16 inputs are never split");
  slots[0] = x;
}

// One panel: rows [0, rows) of a W-wide panel of kc logical steps, where
// at(r, k) is the input value; zero elsewhere. W is a constant, or a
// vector length known at run time (the *_width packers below).
template <typename Src, int S, int KAlign, PairRole R, typename At>
inline void pack_pair_panel(bf16 *__restrict dst, long W, long kc, long rows, At at) {
  const long depth = packed_steps(kc, S, KAlign);
  std::memset(static_cast<void *>(dst), 0, sizeof(bf16) * W * depth);
  for (long k = 0; k < kc; ++k) {
    const long q = k / 2, e = k % 2;
    for (long r = 0; r < rows; ++r) {
      bf16 slots[S];
      split_value<S, R>(at(r, k), slots);
      for (int s = 0; s < S; ++s) dst[((q * S + s) * W + r) * 2 + e] = slots[s];
    }
  }
}

// op(A)[i0 : i0+mc, p0 : p0+kc] -> ceil(mc/mr) panels mr wide.
template <typename Src, int S, int KAlign = 2>
inline void pack_a_pairs_width(bf16 *__restrict dst, const Src *__restrict a, long lda, Trans ta, long i0, long mc,
                               long p0, long kc, long mr) {
  const long depth = packed_steps(kc, S, KAlign);
  for (long ir = 0; ir < mc; ir += mr, dst += mr * depth) {
    const long rows = std::min<long>(mr, mc - ir);
    const Src *base = ta == Trans::N ? a + (i0 + ir) + p0 * lda : a + p0 + (i0 + ir) * lda;
    const long rs = ta == Trans::N ? 1 : lda, ks = ta == Trans::N ? lda : 1;
    pack_pair_panel<Src, S, KAlign, PairRole::a>(dst, mr, kc, rows,
                                                 [&](long r, long k) { return base[r * rs + k * ks]; });
  }
}
template <typename Src, int MR, int S, int KAlign = 2>
void pack_a_pairs(bf16 *__restrict dst, const Src *__restrict a, long lda, Trans ta, long i0, long mc, long p0,
                  long kc) {
  pack_a_pairs_width<Src, S, KAlign>(dst, a, lda, ta, i0, mc, p0, kc, MR);
}

// op(B)[p0 : p0+kc, j0 : j0+nc] -> ceil(nc/nr) panels nr wide.
template <typename Src, int S, int KAlign = 2>
inline void pack_b_pairs_width(bf16 *__restrict dst, const Src *__restrict b, long ldb, Trans tb, long p0, long kc,
                               long j0, long nc, long nr) {
  const long depth = packed_steps(kc, S, KAlign);
  for (long jr = 0; jr < nc; jr += nr, dst += nr * depth) {
    const long cols = std::min<long>(nr, nc - jr);
    const Src *base = tb == Trans::N ? b + p0 + (j0 + jr) * ldb : b + (j0 + jr) + p0 * ldb;
    const long cs = tb == Trans::N ? ldb : 1, ks = tb == Trans::N ? 1 : ldb;
    pack_pair_panel<Src, S, KAlign, PairRole::b>(dst, nr, kc, cols,
                                                 [&](long c, long k) { return base[c * cs + k * ks]; });
  }
}
template <typename Src, int NR, int S, int KAlign = 2>
void pack_b_pairs(bf16 *__restrict dst, const Src *__restrict b, long ldb, Trans tb, long p0, long kc, long j0,
                  long nc) {
  pack_b_pairs_width<Src, S, KAlign>(dst, b, ldb, tb, p0, kc, j0, nc, NR);
}

}  // namespace
}  // namespace hcops
