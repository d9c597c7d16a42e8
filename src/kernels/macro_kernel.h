// The default macro-kernel: the jr/ir loops of one packed A block against a
// block of op(B), full tiles through the microkernel, partial ones through
// the edge kernels. Included by each family's source and compiled with its
// ISA flags; the anonymous namespace keeps every family's copy its own.
#pragma once

#include <algorithm>

#include "kernels/kernel.h"

namespace hcops {
namespace {

template <typename Ty>
void macro_kernel(const GemmKernel<Ty> &k, const MacroBlock<Ty> &blk) {
  const int mr = k.mr, nr = k.nr;
  const long kc = blk.kc;
  const bool direct = blk.b_packed == nullptr;
  for (long jr = blk.j0; jr < blk.j1; jr += nr) {
    const long ncols = std::min<long>(nr, blk.j1 - jr);
    const auto *bpanel = direct ? nullptr : blk.b_packed + jr * kc;
    const auto *bdirect = blk.b + jr * blk.csb;
    for (long ir = 0; ir < blk.mc; ir += mr) {
      const long nrows = std::min<long>(mr, blk.mc - ir);
      auto *c = blk.c + ir + jr * blk.ldc;
      const auto *a = blk.a + ir * kc;
      const bool full = nrows == mr && ncols == nr;
      if (direct && full) k.full_direct(kc, blk.alpha, a, bdirect, blk.rsb, blk.csb, blk.beta, c, blk.ldc);
      else if (direct)
        k.edge_direct(kc, blk.alpha, a, bdirect, blk.rsb, blk.csb, blk.beta, c, blk.ldc, int(nrows), int(ncols));
      else if (full) k.full(kc, blk.alpha, a, bpanel, blk.beta, c, blk.ldc);
      else k.edge(kc, blk.alpha, a, bpanel, blk.beta, c, blk.ldc, int(nrows), int(ncols));
    }
  }
}

}  // namespace
}  // namespace hcops
