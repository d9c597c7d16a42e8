// Freed blocks kept mapped for reuse (HCOPS_MEM_CACHE): a training loop frees
// and re-allocates the same tensors every step, and a block that keeps its
// pages spares the page faults and huge-page zeroing of a fresh mapping. A
// block is only reused for a request of the same page kind (the one asked
// for, whatever fallback gave) and NUMA policy.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mem/arena.h"
#include "mem/place.h"
#include "mem/policy.h"

namespace hcops {
namespace mem {

// What Block::where records for a target: a hash of mode and node mask,
// never 0 (0 is "unknown").
uint64_t where_of(const Target &t);

// A cached block asked with rule `r`'s page kind, of its placement, whose policy is
// `where`, holding `len` bytes without wasting more than an eighth (or one
// slot); its record is back in the arena. nullptr when none.
void *reuse(const Rule &r, uint64_t where, std::size_t len);

// Takes a freed block (`freed` is its record, already cleared in the arena):
// kept for reuse while the cache has room, evicting the oldest, otherwise
// unmapped and its slots returned.
void retire(void *p, const Block &freed);

// Called once, by init().
void init_cache();

// pthread_atfork, in the order allocator.cpp's hooks give.
void cache_before_fork();
void cache_after_fork_parent();
void cache_after_fork_child();

}  // namespace mem
}  // namespace hcops
