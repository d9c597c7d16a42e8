// The address range every large allocation of libhcops_mem lives in: one
// PROT_NONE reservation made at start-up, carved into 2 MiB slots. Owning a
// pointer is then one subtraction and compare, with no lock, which keeps free()
// of glibc's pointers as cheap as without the interposer; and every
// allocation starts on a huge-page boundary.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <map>

#include <pthread.h>

#include "mem/policy.h"

namespace hcops {
namespace mem {

constexpr std::size_t kSlot = std::size_t(2) << 20;

// What the arena knows of one live allocation, kept at its first slot.
struct Block {
  // Bytes mapped read-write from the start for the caller (the usable size).
  // Past them, slack_bytes() more are always mapped too (allocator.h).
  std::size_t mapped = 0;
  uint32_t slots = 0;         // address space held, in slots, slack included
  Pages pages = Pages::base;  // the kind obtained (after any fallback)
  // The kind the rule asked for: the reuse cache matches requests on it, so
  // a block that fell back (empty hugetlb pool, THP disabled) is reused by
  // the next request of the same rule, which would fall back the same way.
  Pages asked = Pages::base;
  Place place = Place::local;
  int16_t node = -1;          // the node aimed at, -1: none in particular
  bool counted_fast = false;  // counted against HCOPS_MEM_FAST_LIMIT
  // The NUMA policy its pages have (a hash of mode and nodes, as set by
  // mbind or a move); 0 when unknown, and a freed block whose policy is
  // unknown is unmapped rather than reused under a wrong one.
  uint64_t where = 0;
};

class Arena {
 public:
  // Reserves up to `want` bytes (less when the address space is limited).
  // Returns false when nothing could be reserved; the interposer then leaves
  // everything to glibc.
  bool reserve(std::size_t want);
  // Lock-free and valid before reserve() (nothing is owned then).
  static bool owns(const void *p) {
    return reinterpret_cast<uintptr_t>(p) - base_.load(std::memory_order_relaxed) <
           span_.load(std::memory_order_relaxed);
  }
  static std::size_t span() { return span_.load(std::memory_order_relaxed); }

  // `slots` free slots whose start is a multiple of `align_slots`; nullptr when
  // the arena is full. The memory stays PROT_NONE until mapped.
  void *take(std::size_t slots, std::size_t align_slots);
  // Extends the block at `p` from `have` to `want` slots if the slots after it
  // are free.
  bool extend(void *p, std::size_t have, std::size_t want);
  // Returns slots [p, p + slots) to the free ranges (the caller unmapped them).
  void give_back(void *p, std::size_t slots);

  Block &block(const void *p) { return meta_[index(p)]; }
  // Calls f(start, block) for every live block overlapping [p, p + len).
  template <class F>
  void for_each_block(const void *p, std::size_t len, F f);

  // For pthread_atfork: the slot lock is held across fork.
  void lock();
  void unlock();
  void reinit_after_fork();

 private:
  std::size_t index(const void *p) const {
    return (reinterpret_cast<uintptr_t>(p) - base_.load(std::memory_order_relaxed)) / kSlot;
  }
  static inline std::atomic<uintptr_t> base_{0};
  static inline std::atomic<std::size_t> span_{0};
  Block *meta_ = nullptr;                    // one per slot, in a lazily backed mapping
  std::map<std::size_t, std::size_t> free_;  // first slot -> length, coalesced
  pthread_mutex_t lock_ = PTHREAD_MUTEX_INITIALIZER;
};

Arena &arena();

template <class F>
void Arena::for_each_block(const void *p, std::size_t len, F f) {
  const uintptr_t base = base_.load(std::memory_order_relaxed), a = reinterpret_cast<uintptr_t>(p);
  const std::size_t span = span_.load(std::memory_order_relaxed);
  if (!span || len == 0 || a + len <= base || a >= base + span) return;
  std::size_t first = a > base ? (a - base) / kSlot : 0;
  const std::size_t end = std::min<std::size_t>((a + len - base + kSlot - 1) / kSlot, span / kSlot);
  // A block's record sits at its first slot: step back to the one holding p.
  for (std::size_t s = first + 1; s-- > 0;)
    if (meta_[s].slots) {
      if (s + meta_[s].slots > first) first = s;
      break;
    }
  for (std::size_t s = first; s < end;) {
    Block &b = meta_[s];
    if (!b.slots) {
      ++s;
      continue;
    }
    f(reinterpret_cast<char *>(base + s * kSlot), b);
    s += b.slots;
  }
}

}  // namespace mem
}  // namespace hcops
