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

template <typename Ty>
Blocking blocking_for(const Topology &topo, const GemmKernel<Ty> &k) {
  constexpr long sa = sizeof(typename Ty::packed_a_type), sb = sizeof(typename Ty::packed_b_type);
  Blocking b;
  // kc counts logical k steps; a panel holds `splits` packed steps for each.
  b.kc = std::clamp<long>(topo.l1d * 3 / 4 / (k.nr * sb * Ty::splits) / 16 * 16, 64, 512);
  b.mc = std::clamp<long>(topo.l2 / 2 / (b.kc * sa * Ty::splits) / k.mr * k.mr, k.mr, 4096);
  b.nc = std::clamp<long>(topo.l3 / 2 / (b.kc * sb * Ty::splits) / k.nr * k.nr, 16L * k.nr, 8192 / k.nr * k.nr);
  return b;
}

// Equal blocks no larger than `block`, rounded up to `align`: k = 400 with
// kc = 336 becomes 2 x 200 rather than 336 + 64.
inline long balanced_block(long len, long block, long align) {
  const long nblocks = (len + block - 1) / block;
  const long even = (len + nblocks - 1) / nblocks;
  return std::min(block, (even + align - 1) / align * align);
}

}  // namespace hcops
