#include "mem/cache.h"

#include <pthread.h>

#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include "mem/config.h"
#include "mem/stats.h"

namespace hcops {
namespace mem {

namespace {

// Most recently freed last.
pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
std::vector<std::pair<void *, Block>> *cache = nullptr;  // under cache_lock
std::size_t cache_bytes = 0;                             // under cache_lock

void unmap_block(void *p, std::size_t slots) {
  unmap_range(p, slots * kSlot);
  arena().give_back(p, slots);
}

}  // namespace

uint64_t where_of(const Target &t) {
  const uint64_t h = std::hash<NodeSet>{}(t.nodes) ^ (static_cast<uint64_t>(t.mode) + 1) * 0x9E3779B97F4A7C15ull;
  return h ? h : 1;
}

void *reuse(const Rule &r, uint64_t where, std::size_t len) {
  pthread_mutex_lock(&cache_lock);
  std::size_t best = SIZE_MAX;
  for (std::size_t i = 0; i < cache->size(); ++i) {
    const Block &c = (*cache)[i].second;
    if (c.asked != r.pages || c.place != r.place || c.where != where) continue;
    if (c.mapped < len || c.mapped - len > std::max(len / 8, kSlot)) continue;
    if (best == SIZE_MAX || c.mapped < (*cache)[best].second.mapped) best = i;
  }
  void *p = nullptr;
  if (best != SIZE_MAX) {
    p = (*cache)[best].first;
    arena().block(p) = (*cache)[best].second;
    cache_bytes -= (*cache)[best].second.mapped;
    cache->erase(cache->begin() + static_cast<long>(best));
  }
  pthread_mutex_unlock(&cache_lock);
  return p;
}

void retire(void *p, const Block &freed) {
  const std::size_t limit = config()->cache_limit;
  if (!limit || freed.mapped > limit || !freed.where) return unmap_block(p, freed.slots);
  std::vector<std::pair<void *, Block>> evicted;
  pthread_mutex_lock(&cache_lock);
  cache->emplace_back(p, freed);
  cache_bytes += freed.mapped;
  std::size_t drop = 0;
  while (cache_bytes > limit && drop < cache->size()) cache_bytes -= (*cache)[drop++].second.mapped;
  evicted.assign(cache->begin(), cache->begin() + static_cast<long>(drop));
  cache->erase(cache->begin(), cache->begin() + static_cast<long>(drop));
  pthread_mutex_unlock(&cache_lock);
  counters.cached.fetch_add(freed.mapped, std::memory_order_relaxed);
  for (const auto &e : evicted) {
    counters.cached.fetch_sub(e.second.mapped, std::memory_order_relaxed);
    unmap_block(e.first, e.second.slots);
  }
}

void init_cache() { cache = new std::vector<std::pair<void *, Block>>; }

void cache_before_fork() { pthread_mutex_lock(&cache_lock); }
void cache_after_fork_parent() { pthread_mutex_unlock(&cache_lock); }
void cache_after_fork_child() { pthread_mutex_init(&cache_lock, nullptr); }

}  // namespace mem
}  // namespace hcops
