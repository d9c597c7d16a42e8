#include "mem/cache.h"

#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "mem/config.h"
#include "mem/stats.h"

namespace hcops {
namespace mem {

namespace {

// Why a bound relative to the high-water mark of live bytes, rather than a
// fraction of live: a training step frees most of what it allocated (live
// falls near zero between steps) and allocates it again in the next, so a
// fraction of live would empty the cache exactly when it is about to be
// reused. Freeing and reusing a block moves bytes between live and cached and
// leaves their sum as it was; only a fresh mapping raises it, and then the
// oldest cached blocks go first. So cached + live never passes what the
// program itself had live (plus the margin): without the cache its large
// blocks would have needed as much at that moment, and the cache cannot
// raise the process's peak beyond the margin. The margin lets a loop whose
// blocks are live at different moments, and of sizes the cache cannot trade
// for one another, keep them all (per size, the most live at once; their sum
// can pass the overall high-water mark).
//
// "Recent": the high-water mark is the highest live over the last one to two
// decay times (HCOPS_MEM_CACHE_DECAY), so a program past a large phase does
// not keep a cache sized for it; without decay ("never") it is the
// process's.
constexpr std::size_t kMarginFloor = std::size_t(32) << 20;

struct Entry {
  void *p;
  Block b;
  uint64_t freed_at;  // ns, CLOCK_MONOTONIC_COARSE
};

pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
std::vector<Entry> *cache = nullptr;  // under cache_lock; most recently freed last
std::size_t cache_bytes = 0;          // under cache_lock

// The recent high-water mark of live bytes, in two windows of one decay time
// each: the one before and the current one (under cache_lock).
std::size_t high_prev = 0, high_now = 0;
uint64_t window_start = 0;

// The coarse clock is a vDSO read of a few ns, with jiffy resolution (a few
// ms): ample for a decay of seconds.
uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// Under cache_lock: the high-water mark with live having been `before` since
// the last call and being `after` now.
std::size_t high_water(std::size_t before, std::size_t after, uint64_t now) {
  const uint64_t decay = config()->cache_decay_ns;
  if (decay != kNeverDecay && now - window_start >= decay) {
    // A whole window without a call: live was `before` all along.
    high_prev = now - window_start >= 2 * decay ? before : std::max(high_now, before);
    high_now = before;
    window_start = now;
  }
  high_now = std::max({high_now, before, after});
  return std::max(high_prev, high_now);
}

// Under cache_lock: how many of the oldest blocks go, those idle for the
// decay time and then as many as keeping cache_bytes within `limit` needs,
// moved to `out`. Counted and unmapped by drop() once the lock is released.
struct Evicted {
  std::vector<Entry> blocks;
  std::size_t decayed = 0;  // the first ones of blocks
};
void evict(uint64_t now, std::size_t limit, Evicted &out) {
  const uint64_t decay = config()->cache_decay_ns;
  std::size_t n = 0, bytes = cache_bytes;
  while (n < cache->size() && now - (*cache)[n].freed_at >= decay) bytes -= (*cache)[n++].b.mapped;
  out.decayed = n;
  while (n < cache->size() && bytes > limit) bytes -= (*cache)[n++].b.mapped;
  if (!n) return;
  out.blocks.assign(cache->begin(), cache->begin() + static_cast<long>(n));
  cache->erase(cache->begin(), cache->begin() + static_cast<long>(n));
  cache_bytes = bytes;
}

// Under cache_lock: the most cache_bytes may be with `after` bytes live, and
// live having been `before` until now.
std::size_t cache_room(std::size_t before, std::size_t after, uint64_t now) {
  const std::size_t high = high_water(before, after, now);
  const std::size_t bound = high + cache_margin(high);
  return std::min(config()->cache_limit, bound > after ? bound - after : 0);
}

void unmap_block(void *p, std::size_t slots) {
  unmap_range(p, slots * kSlot);
  arena().give_back(p, slots);
}

void drop(const Evicted &e) {
  if (e.blocks.empty()) return;
  counters.evicted_decay.fetch_add(e.decayed, std::memory_order_relaxed);
  counters.evicted_cap.fetch_add(e.blocks.size() - e.decayed, std::memory_order_relaxed);
  for (const Entry &x : e.blocks) {
    counters.cached.fetch_sub(x.b.mapped, std::memory_order_relaxed);
    unmap_block(x.p, x.b.slots);
  }
}

}  // namespace

std::size_t cache_margin(std::size_t high_water) { return std::max(high_water / 8, kMarginFloor); }

uint64_t where_of(const Target &t) {
  const uint64_t h = std::hash<NodeSet>{}(t.nodes) ^ (static_cast<uint64_t>(t.mode) + 1) * 0x9E3779B97F4A7C15ull;
  return h ? h : 1;
}

void *reuse(const Rule &r, uint64_t where, std::size_t len) {
  Evicted gone;
  void *p = nullptr;
  pthread_mutex_lock(&cache_lock);
  const uint64_t now = now_ns();
  evict(now, SIZE_MAX, gone);  // a reuse leaves cached + live as it was: decay only
  std::size_t best = SIZE_MAX;
  for (std::size_t i = 0; i < cache->size(); ++i) {
    const Block &c = (*cache)[i].b;
    if (c.asked != r.pages || c.place != r.place || c.where != where) continue;
    if (c.mapped < len || c.mapped - len > std::max(len / 8, kSlot)) continue;
    if (best == SIZE_MAX || c.mapped < (*cache)[best].b.mapped) best = i;
  }
  if (best != SIZE_MAX) {
    const Entry e = (*cache)[best];
    p = e.p;
    arena().block(p) = e.b;
    cache_bytes -= e.b.mapped;
    cache->erase(cache->begin() + static_cast<long>(best));
    const std::size_t live = counters.live.load(std::memory_order_relaxed);
    high_water(live, live + e.b.mapped, now);
  }
  pthread_mutex_unlock(&cache_lock);
  drop(gone);
  return p;
}

void make_room(std::size_t len) {
  if (!config()->cache_limit) return;
  Evicted gone;
  pthread_mutex_lock(&cache_lock);
  const uint64_t now = now_ns();
  const std::size_t live = counters.live.load(std::memory_order_relaxed);
  evict(now, cache_room(live, live + len, now), gone);
  pthread_mutex_unlock(&cache_lock);
  drop(gone);
}

void retire(void *p, const Block &freed) {
  const std::size_t limit = config()->cache_limit;
  if (!limit || freed.mapped > limit || !freed.where) return unmap_block(p, freed.slots);
  Evicted gone;
  counters.cached.fetch_add(freed.mapped, std::memory_order_relaxed);
  pthread_mutex_lock(&cache_lock);
  const uint64_t now = now_ns();
  cache->push_back({p, freed, now});
  cache_bytes += freed.mapped;
  // Live counted this block until now (release() has taken it off).
  const std::size_t live = counters.live.load(std::memory_order_relaxed);
  evict(now, cache_room(live + freed.mapped, live, now), gone);
  pthread_mutex_unlock(&cache_lock);
  drop(gone);
}

void init_cache() {
  cache = new std::vector<Entry>;
  window_start = now_ns();
}

void cache_before_fork() { pthread_mutex_lock(&cache_lock); }
void cache_after_fork_parent() { pthread_mutex_unlock(&cache_lock); }
void cache_after_fork_child() { pthread_mutex_init(&cache_lock, nullptr); }

}  // namespace mem
}  // namespace hcops
