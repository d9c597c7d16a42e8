// The avx2 family's choice for thin products that one block holds
// (kernel.h's GemmKernel::thin_choice): the skinny kernel, the shallow one
// or one packed block, whichever a model of each path's time, fitted to
// this family's measured times, puts first.
//
// Each path's time is a sum of what its loops do, each term with a cost in
// ns fitted (least squares on the relative error, no negative costs) to
// single-thread times of every path on a grid of products (m 4-128, n
// 1-16 with k 1-256 and n 17-120 with k 1-16, the four transposes; min of 5
// rounds of back-to-back calls, operands in cache) on a 2-core AMD Zen 3
// guest (2026-12-05):
// - one block: a call, the tile's FMAs over the padded block (m rounded
//   up to mr, n to nr: a 2-column product computes 6), and op(A)^T's
//   transposing pack;
// - skinny with op(A) = A: a call, its blocks' FMAs (rows in blocks of 3
//   vectors, masked, not padded in n), and each block's sums kept in L1
//   per k chunk and written to C;
// - skinny with op(A) = A^T: a call, the dot products' FMAs (3 rows by 4
//   columns, k in vectors) and every element's sum across lanes;
// - skinny with op(B) = B^T: the driver's copy of op(B), one element at a
//   time.
// On the grid, the paths the model picks take 102.4 % (f32) and 102.5 %
// (f64) of the best path's total time, where the skinny kernel on every
// product it takes took 146 % and 127 % (perf/thin_paths.py checks it on
// shapes the fit did not see: the user guide, "Thin products one block
// holds").
//
// The shallow kernel (k <= 16, f32 only) is slower than one block here
// from k = 2 up (one block 1.2-3x faster at k = 8-16: its C is at most one
// thread's worth, in cache, where the kernel was built to stream a large
// C); at k = 1 it was 0.7-0.9x one block's time from 8 rows up.
#pragma once

#include "kernels/kernel.h"

namespace hcops::kernels::avx2 {

struct ThinCosts {
  long lanes, mr, nr;  // a vector of the type, and the microkernel's tile
  // One block: per call; per tile FMA (a vector); per element of op(A)
  // packed through transposes (ta = T).
  double block_call, block_fma, block_pack_t;
  // Skinny: per call; per FMA (a vector) with op(A) = A and with A^T; per
  // element of op(B) copied (tb = T); per element of C summed across lanes
  // (A^T); per vector of a block's sums (A).
  double skinny_call, skinny_fma_n, skinny_fma_t, skinny_copy_b, skinny_sum_t, skinny_sums_n;
  long shallow_max_k;  // the deepest product the shallow kernel takes
};

// f32: 8 lanes, 16 x 6 tiles; f64: 4 lanes, 8 x 6 (no shallow kernel).
inline constexpr ThinCosts kThinCostsF32{8, 16, 6, 177.2, 0.179, 0.102, 113.7, 0.195, 0.151, 0.642, 1.235, 2.44, 1};
inline constexpr ThinCosts kThinCostsF64{4, 8, 6, 105.4, 0.200, 0.166, 70.4, 0.248, 0.161, 0.546, 0.742, 1.664, 0};

constexpr long round_up(long x, long to) { return (x + to - 1) / to * to; }

// The costs in integer units of 1/16384 ns per element (a vector's cost over
// its lanes): the choice is asked on every thin product, some of 0.15 us,
// and integer products cost it a few cycles where the same sums in double
// (int-to-double conversions, dependent multiplies) cost 5 % of such a call.
struct ThinUnits {
  long block_call, block_fma, block_pack_t, skinny_call, skinny_fma_n, skinny_fma_t, skinny_copy_b, skinny_sum_t,
      skinny_sums_n;
  constexpr explicit ThinUnits(const ThinCosts &c)
      : block_call(units(c.block_call)),
        block_fma(units(c.block_fma / double(c.lanes))),
        block_pack_t(units(c.block_pack_t)),
        skinny_call(units(c.skinny_call)),
        skinny_fma_n(units(c.skinny_fma_n / double(c.lanes))),
        skinny_fma_t(units(c.skinny_fma_t / double(c.lanes))),
        skinny_copy_b(units(c.skinny_copy_b)),
        skinny_sum_t(units(c.skinny_sum_t)),
        skinny_sums_n(units(c.skinny_sums_n / double(c.lanes))) {}
  static constexpr long units(double ns) { return long(ns * 16384 + 0.5); }
};

template <const ThinCosts &C>
constexpr long one_block_cost(Trans ta, long m, long n, long k) {
  constexpr ThinUnits u(C);
  return u.block_call + u.block_fma * round_up(m, C.mr) * round_up(n, C.nr) * k +
         (ta == Trans::T ? u.block_pack_t * m * k : 0);
}

template <const ThinCosts &C>
constexpr long skinny_cost(Trans ta, Trans tb, long m, long n, long k) {
  constexpr ThinUnits u(C);
  long t = u.skinny_call + (tb == Trans::T ? u.skinny_copy_b * n * k : 0);
  if (ta == Trans::N) {
    const long sums = round_up(m, 3 * C.lanes) * n;  // elements of a block's sums
    t += u.skinny_fma_n * sums * k + u.skinny_sums_n * sums;
  } else {
    t += u.skinny_fma_t * round_up(m, 3) * round_up(n, 4) * round_up(k, C.lanes) + u.skinny_sum_t * m * n;
  }
  return t;
}

// Asked with m, n and k under 2^20, the skinny kernel's cost only where n
// <= 16 and one block's where n <= 16 or k <= 16, each cost stays under
// 2^55 units (f64's one block at n = 16: 819 x 18 x 2^40 + 2714 x 2^40);
// larger products are never one block.
template <const ThinCosts &C>
ThinPath thin_choice(Trans ta, Trans tb, long m, long n, long k, bool skinny, bool shallow) {
  constexpr long kLarge = 1L << 20;
  if (m >= kLarge || n >= kLarge || k >= kLarge) return skinny ? ThinPath::skinny : ThinPath::shallow;
  if (skinny && skinny_cost<C>(ta, tb, m, n, k) < one_block_cost<C>(ta, m, n, k)) return ThinPath::skinny;
  if (shallow && k <= C.shallow_max_k) return ThinPath::shallow;
  return ThinPath::one_block;
}

}  // namespace hcops::kernels::avx2
