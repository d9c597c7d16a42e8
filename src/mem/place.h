// Turning a rule into memory: the page kind (mmap flags, madvise) and the
// NUMA policy (mbind) of a range inside the arena, and moving ranges later.
#pragma once

#include <cstddef>

#include "mem/policy.h"

namespace hcops {
namespace mem {

// Where a rule sends an allocation made now by the calling thread.
struct Target {
  int mode = 0;            // MPOL_* for mbind; MPOL_DEFAULT: leave the policy alone
  NodeSet nodes;           // for mbind
  int node = -1;           // the node aimed at, -1: several or the faulting CPU's
  bool fast = false;       // on the fast tier (counts against HCOPS_MEM_FAST_LIMIT)
  bool fell_back = false;  // wanted fast, got DDR
};

// Resolves `r` for `bytes` more on behalf of the calling thread. `fast_in_use`
// is what the process already holds on fast nodes; `fast_limit` the
// HCOPS_MEM_FAST_LIMIT knob (0: none).
Target resolve(const Rule &r, std::size_t bytes, std::size_t fast_in_use, std::size_t fast_limit);
// The same for a given machine and compute domain (tests: synthetic ones).
struct Tiers;
Target resolve(const Tiers &tt, int domain, const Rule &r, std::size_t bytes, std::size_t fast_in_use,
               std::size_t fast_limit);

// Maps [addr, addr + len) read-write over the arena's reservation with the
// page kind `want`, falling back hugetlb -> thp -> base; `got` is the kind
// obtained. `failed`: not even base pages, and the range is reserved
// (PROT_NONE) again. `lost`: a failing kernel call had unmapped the range and
// another mapping took its place before it could be reserved again, so the
// range must never be handed out. len is a multiple of the slot size for
// hugetlb.
enum class MapResult { ok, failed, lost };
MapResult map_range(void *addr, std::size_t len, Pages want, Pages &got);

// Returns [addr, addr + len) to a PROT_NONE reservation, freeing its memory.
void unmap_range(void *addr, std::size_t len);

// Applies the target's NUMA policy to a fresh range. False when the kernel
// refused (e.g. a node of a synthetic topology that does not exist here).
bool apply_policy(void *addr, std::size_t len, const Target &t);

// Migrates the pages of [addr, addr + len) (widened to whole pages) to the
// target and sets it as the range's policy. 0, or -1 with errno.
int move_range(void *addr, std::size_t len, const Target &t);

}  // namespace mem
}  // namespace hcops
