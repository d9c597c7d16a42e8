// Cache blocking (BLIS's MC/KC/NC) from the cache sizes hwloc reports: a kc x nr
// B micro-panel fills three quarters of L1 (A streams from L2 through the
// rest; a longer kc means fewer passes over C, which matters most for f64:
// 2048^3 DGEMM +3%, DiT fc shapes +10% against half of L1), an mc x kc A
// block half of L2, a kc x nc B panel half of L3.
#pragma once

#include <algorithm>

#include "common/topology.h"
#include "kernels/kernel.h"

namespace hcops {

struct Blocking {
  long mc, kc, nc;
};

// MC and NC for a given KC.
template <typename Ty>
Blocking blocking_with_kc(const Topology &topo, const GemmKernel<Ty> &k, long kc) {
  constexpr long sa = sizeof(typename Ty::packed_a_type), sb = sizeof(typename Ty::packed_b_type);
  Blocking b;
  b.kc = kc;
  b.mc = std::clamp<long>(topo.l2 / 2 / (b.kc * sa * k.panel_scale * Ty::splits) / k.mr * k.mr, k.mr, 4096);
  b.nc = std::clamp<long>(topo.l3 / 2 / (b.kc * sb * k.panel_scale * Ty::splits) / k.nr * k.nr, 16L * k.nr,
                          8192 / k.nr * k.nr);
  return b;
}

template <typename Ty>
Blocking blocking_for(const Topology &topo, const GemmKernel<Ty> &k) {
  constexpr long sb = sizeof(typename Ty::packed_b_type);
  // kc counts logical k steps; a panel holds `splits` packed steps for each.
  return blocking_with_kc(
      topo, k, std::clamp<long>(topo.l1d * 3 / 4 / (k.nr * sb * k.panel_scale * Ty::splits) / 16 * 16, 64, 512));
}

// The deepest k a C narrower than the accumulation (bf16) takes in one block.
constexpr long kNarrowCMaxKc = 8192;

// The blocking of one product of depth k. A bf16 C is rounded once, from the
// sum over all of k, so a product deeper than one k block needs an f32 copy
// of C (gemm.cpp's gemm_through_wide_c): a family that applies the epilogue
// and rounds C itself (fuses_epilogue) takes k up to kNarrowCMaxKc in one
// block instead. Its B micro-panel then outgrows L1 and streams from L2
// beside A, which costs less than writing and reading back C in f32 (AMX,
// DiT's k = 1152 to 2048 with 2048 tokens: 1.2-1.7x faster products;
// avx512_bf16 on Zen 5, DiT-XL's k = 4608 with 512 tokens: 68 -> 92-100 %
// of the peak). At kNarrowCMaxKc MC falls to mr and the A block is one
// micro-panel of 32 rows (AMX's and avx512_bf16's mr): 512 KiB of bf16,
// half of Zen 5's 1 MiB L2 beside avx512_bf16's 192 KiB B micro-panel, and
// with AMX's 512 KiB one (32 columns) half of Sapphire Rapids' 2 MiB. SME
// at streaming vectors longer than 512 bits (mr 64-128) outgrows L2 at
// that depth (no such core exists yet). Deeper, C goes through the f32
// copy. A family may take less in one block (GemmKernel::narrow_c_max_kc:
// avx2 widens its B micro-panel to f32, which must stay in L1).
template <typename Ty>
Blocking blocking_for_product(const Topology &topo, const GemmKernel<Ty> &k, long depth) {
  const Blocking b = blocking_for(topo, k);
  constexpr bool narrow_c = sizeof(typename Ty::c_type) < sizeof(typename Ty::acc_type);
  const long max_kc = k.narrow_c_max_kc > 0 ? std::min(k.narrow_c_max_kc, kNarrowCMaxKc) : kNarrowCMaxKc;
  if (!narrow_c || !k.fuses_epilogue || depth <= b.kc || depth > max_kc) return b;
  return blocking_with_kc(topo, k, (depth + 15) / 16 * 16);
}

// Packing memory of a product the engine runs as one block on the calling
// thread (gemm.cpp's single_block_gemm): op(A)'s panels (64-byte aligned,
// then op(B)'s), with op(B)'s only when it is packed, each with a tile of
// slack past its last panel; 0 when the product is not
// one such block: more flops than one thread's worth (PlanLimits), or m, n
// or k beyond one block of blk, or more than kSingleBlockMaxBytes.
constexpr size_t kSingleBlockMaxBytes = 512 << 10;
// The planner's one-thread rule (partition.cpp): 2 m n k flops worth at most
// one thread of the kernel's min_flops_per_thread (2 m n k / min <= 1 in
// integers, that is m n k < min: without the 128-bit division, a library
// call, on every small product's way).
template <typename Ty>
bool one_thread_product(const GemmKernel<Ty> &k, long m, long n, long depth) {
  return __int128(m) * n * std::max(depth, 1L) < std::max(k.min_flops_per_thread, 1L);
}
template <typename Ty>
size_t single_block_a_bytes(const GemmKernel<Ty> &k, long m, long depth) {
  return (sizeof(typename Ty::packed_a_type) * packed_depth(k, depth) * k.panel_scale * (m + k.mr) + 63) / 64 * 64;
}
template <typename Ty>
size_t single_block_bytes(const GemmKernel<Ty> &k, const Blocking &blk, long m, long n, long depth, bool pack_b) {
  if (!one_thread_product(k, m, n, depth) || m > blk.mc || n > blk.nc || depth > blk.kc) return 0;
  const size_t b =
      pack_b ? sizeof(typename Ty::packed_b_type) * packed_depth(k, depth) * k.panel_scale * (n + k.nr) : 0;
  const size_t bytes = single_block_a_bytes(k, m, depth) + b;
  return bytes <= kSingleBlockMaxBytes ? bytes : 0;
}

// Equal blocks no larger than `block`, rounded up to `align`: k = 400 with
// kc = 336 becomes 2 x 200 rather than 336 + 64.
inline long balanced_block(long len, long block, long align) {
  const long nblocks = (len + block - 1) / block;
  const long even = (len + nblocks - 1) / nblocks;
  return std::min(block, (even + align - 1) / align * align);
}

}  // namespace hcops
