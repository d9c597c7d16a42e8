// op(A) packed once by its caller for a run of products that share it, each
// with its own op(B) and C: attention's K and V, against each query block of
// a slice, which gemm() would otherwise pack again for every block.
//
// hold_packed_a(args, held) packs op(A) of args whole, in the layout the
// packed-A cache uses (packed_a_cache.h: each k block's panels of all rows),
// for the kernel and k blocks a product of those arguments runs on. A later
// gemm() whose args.a_held points at it reads those panels instead of packing
// op(A), when it runs on the same kernel and k blocks with the same op(A)
// (address, lda, transposition, m, k) and its units start on whole panels;
// anything else packs as usual, so holding A can make a product faster,
// never different. The verbose line's a_cache says "held" when it was read.
//
// The caller keeps op(A) unchanged while it passes the panels, and passes
// them only to products it held them for: the panels say nothing of op(A)'s
// contents (a later op(A) at the same address may differ).
#pragma once

#include <vector>

#include "common/api.h"
#include "gemm/gemm.h"
#include "gemm/numa_buffer.h"
#include "gemm/packed_a_cache.h"

namespace hcops {

struct HeldPackedA {
  PackedAKey key;             // what the panels hold (owner: unused)
  NumaBuffer panels;          // grown as needed and kept, for the next run
  std::vector<long> offsets;  // k block b's panels start at element offsets[b]
  bool valid = false;
};

// Packs op(A) of args into held, in the calling thread. False (held not
// valid) where a product of these arguments would not read packed panels:
// op(A) empty, the skinny or shallow kernels, f32 products in a reduced
// HCOPS_FP32_MATH mode, no family for Ty, no memory for the panels.
template <typename Ty>
HCOPS_API bool hold_packed_a(const GemmArgs<Ty> &args, HeldPackedA &held);

#define HCOPS_EXTERN_HOLD(Ty, name) extern template bool hold_packed_a<Ty>(const GemmArgs<Ty> &, HeldPackedA &);
HCOPS_GEMM_DATATYPES(HCOPS_EXTERN_HOLD)
#undef HCOPS_EXTERN_HOLD

}  // namespace hcops
