#include "gemm/packed_a_cache.h"

#include <pthread.h>

#include <cstring>
#include <vector>

#include "common/env.h"

namespace hcops {

bool PackedAKey::operator==(const PackedAKey &o) const {
  return a == o.a && lda == o.lda && ta == o.ta && m == o.m && k == o.k && pack == o.pack && mr == o.mr &&
         kc == o.kc && elem == o.elem && owner == o.owner;
}

const char *a_cache_use_name(ACacheUse u) {
  switch (u) {
    case ACacheUse::hit: return "cached";
    case ACacheUse::packed: return "packed,kept";
    case ACacheUse::repacked: return "repacked,new-version";
    case ACacheUse::changed: return "repacked,contents-changed";
    case ACacheUse::busy: return "packed,cache-busy";
    case ACacheUse::full: return "packed,cache-full";
    case ACacheUse::off: return "packed,cache-off";
    case ACacheUse::unaligned: return "packed,rows-split-in-a-panel";
  }
  return "?";
}

namespace {

constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull, kP2 = 0xC2B2AE3D27D4EB4Full, kP3 = 0x165667B19E3779F9ull;

inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t round64(uint64_t acc, uint64_t v) { return rotl(acc + v * kP2, 31) * kP1; }
inline uint64_t load64(const unsigned char *p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

}  // namespace

// Four independent lanes keep the multiplies in flight: several bytes a
// cycle, faster than memory delivers a weight that is not in cache. Each
// column's length and index enter the state, so moving values between
// columns changes it.
uint64_t matrix_hash(const void *a, size_t elem, long rows, long cols, long ld) {
  uint64_t acc[4] = {kP1 + kP2, kP2, 0, 0 - kP1};
  const size_t col_bytes = elem * size_t(rows);
  const auto *base = static_cast<const unsigned char *>(a);
  for (long j = 0; j < cols; ++j) {
    const unsigned char *p = base + size_t(j) * elem * size_t(ld);
    size_t n = col_bytes;
    for (; n >= 32; n -= 32, p += 32) {
      acc[0] = round64(acc[0], load64(p));
      acc[1] = round64(acc[1], load64(p + 8));
      acc[2] = round64(acc[2], load64(p + 16));
      acc[3] = round64(acc[3], load64(p + 24));
    }
    for (int lane = 0; n >= 8; n -= 8, p += 8, ++lane) acc[lane] = round64(acc[lane], load64(p));
    uint64_t tail = 0;
    std::memcpy(&tail, p, n);
    acc[0] = round64(acc[0], tail ^ (uint64_t(j) << 32) ^ col_bytes);
  }
  uint64_t h = rotl(acc[0], 1) + rotl(acc[1], 7) + rotl(acc[2], 12) + rotl(acc[3], 18);
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

namespace {

// A plain mutex re-initialised in a forked child, as the workspaces' is.
pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
struct State {
  std::vector<std::shared_ptr<PackedAEntry>> entries;  // a few hundred at most: a model's weights
  size_t bytes = 0;
  uint64_t tick = 0;
};
State &state() {
  static auto *s = new State;  // never destroyed: GEMM may run at exit
  return *s;
}
void lock_cache() { pthread_mutex_lock(&cache_lock); }
void unlock_cache() { pthread_mutex_unlock(&cache_lock); }
void reinit_cache() { pthread_mutex_init(&cache_lock, nullptr); }
__attribute__((constructor)) void register_cache_fork_handlers() {
  pthread_atfork(lock_cache, unlock_cache, reinit_cache);
}

struct Locked {
  Locked() { lock_cache(); }
  ~Locked() { unlock_cache(); }
};

void drop(State &s, size_t i) {
  s.bytes -= s.entries[i]->bytes;
  s.entries[i] = s.entries.back();
  s.entries.pop_back();
}

}  // namespace

size_t packed_a_cache_limit() {
  static const size_t limit = size_t(env_long("HCOPS_WEIGHT_CACHE", 1024, 0, 1L << 24)) << 20;
  return limit;
}

std::shared_ptr<PackedAEntry> acquire_packed_a(const PackedAKey &key, unsigned long long version, size_t bytes,
                                               int node, ACacheUse *use) {
  const size_t limit = packed_a_cache_limit();
  if (limit == 0) {
    *use = ACacheUse::off;
    return nullptr;
  }
  if (bytes > limit) {
    *use = ACacheUse::full;
    return nullptr;
  }
  std::shared_ptr<PackedAEntry> found;
  uint64_t now;
  {
    Locked l;
    State &s = state();
    now = ++s.tick;
    for (auto &e : s.entries)
      if (e->key == key) {
        found = e;
        break;
      }
    if (found && !found->ready) {
      *use = ACacheUse::busy;
      return nullptr;
    }
    if (found) found->last_use = now;
  }
  // Outside the lock: reading op(A) takes as long as reading a weight does.
  const uint64_t hash = matrix_hash(key.a, key.elem, key.ta == Trans::N ? key.m : key.k,
                                    key.ta == Trans::N ? key.k : key.m, key.lda);
  if (found && found->version == version && found->hash == hash) {
    *use = ACacheUse::hit;
    return found;
  }
  *use = !found ? ACacheUse::packed : found->version != version ? ACacheUse::repacked : ACacheUse::changed;
  // New panels: a call still reading the old ones keeps them until it ends.
  auto fresh = std::make_shared<PackedAEntry>();
  fresh->key = key;
  fresh->version = version;
  fresh->hash = hash;
  fresh->bytes = bytes;
  fresh->last_use = now;
  {
    Locked l;
    State &s = state();
    for (size_t i = 0; i < s.entries.size(); ++i)
      if (s.entries[i]->key == key) {
        if (!s.entries[i]->ready) {  // another call got here first
          *use = ACacheUse::busy;
          return nullptr;
        }
        drop(s, i);
        break;
      }
    // Room: entries unused for two rounds of the cached set go first.
    const uint64_t idle = 2 * s.entries.size() + 16;
    for (size_t i = 0; i < s.entries.size() && s.bytes + bytes > limit;)
      if (s.entries[i]->ready && now - s.entries[i]->last_use > idle) drop(s, i);
      else ++i;
    if (s.bytes + bytes > limit) {
      *use = ACacheUse::full;
      return nullptr;
    }
    s.entries.push_back(fresh);
    s.bytes += bytes;
  }
  if (!fresh->panels.ensure(bytes, node)) {  // no memory: forget it, pack as usual
    Locked l;
    State &s = state();
    for (size_t i = 0; i < s.entries.size(); ++i)
      if (s.entries[i] == fresh) drop(s, i);
    *use = ACacheUse::full;
    return nullptr;
  }
  return fresh;
}

void publish_packed_a(const std::shared_ptr<PackedAEntry> &e) {
  Locked l;
  e->ready = true;
}

size_t packed_a_cache_bytes() {
  Locked l;
  return state().bytes;
}

long packed_a_cache_entries() {
  Locked l;
  return long(state().entries.size());
}

void packed_a_cache_clear() {
  Locked l;
  State &s = state();
  s.entries.clear();
  s.bytes = 0;
}

}  // namespace hcops
