// Freed blocks kept mapped for reuse (HCOPS_MEM_CACHE): a training loop frees
// and re-allocates the same tensors every step, and a block that keeps its
// pages spares the page faults and huge-page zeroing of a fresh mapping. A
// block is only reused for a request of the same page kind (the one asked
// for, whatever fallback gave) and NUMA policy.
//
// What the cache may hold is bounded three ways, so that it cannot make the
// process need more memory than the program itself did:
//  - cached + live bytes stay within the recent high-water mark of live bytes
//    plus a margin of 1/8 of it (32 MiB at least): see cache.cpp;
//  - a block idle in the cache for HCOPS_MEM_CACHE_DECAY seconds (default 10)
//    is unmapped;
//  - never more than HCOPS_MEM_CACHE bytes in all.
// The oldest blocks go first. The clock is read on the large-allocation and
// free paths only (no thread of its own): an idle process keeps its cache
// until its next large allocation or free, or its exit.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mem/arena.h"
#include "mem/place.h"
#include "mem/policy.h"

namespace hcops {
namespace mem {

// The margin above the recent high-water mark of live bytes that cached plus
// live bytes may reach: 1/8 of it, 32 MiB at least.
std::size_t cache_margin(std::size_t high_water);

// What Block::where records for a target: a hash of mode and node mask,
// never 0 (0 is "unknown").
uint64_t where_of(const Target &t);

// A cached block asked with rule `r`'s page kind, of its placement, whose policy is
// `where`, holding `len` bytes without wasting more than an eighth (or one
// slot); its record is back in the arena. nullptr when none. Releases the
// blocks idle for too long first.
void *reuse(const Rule &r, uint64_t where, std::size_t len);

// Called before `len` more bytes are mapped for live blocks (a fresh block,
// or one grown in place): releases idle blocks, and the oldest ones until
// cached + live bytes, with `len` more live, keep within the bound.
void make_room(std::size_t len);

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
