#include "gemm/packed_a_cache.h"

#include <omp.h>
#include <pthread.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <unordered_set>
#include <vector>

#include "common/env.h"

namespace hcops {

bool PackedAKey::operator==(const PackedAKey &o) const {
  return a == o.a && lda == o.lda && ta == o.ta && m == o.m && k == o.k && pack == o.pack && mr == o.mr &&
         kc == o.kc && elem == o.elem && owner == o.owner;
}

// No commas: the verbose line's fields are comma-separated.
const char *a_cache_use_name(ACacheUse u) {
  switch (u) {
    case ACacheUse::hit: return "cached";
    case ACacheUse::packed: return "packed-kept";
    case ACacheUse::repacked: return "repacked-new-version";
    case ACacheUse::changed: return "repacked-contents-changed";
    case ACacheUse::volatile_: return "packed-changes-every-call";
    case ACacheUse::busy: return "packed-cache-busy";
    case ACacheUse::full: return "packed-cache-full";
    case ACacheUse::off: return "packed-cache-off";
    case ACacheUse::unaligned: return "packed-rows-inside-a-panel";
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
inline uint64_t avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

// Columns [j0, j1): four independent lanes keep the multiplies in flight
// (several bytes a cycle, faster than memory delivers a weight that is not
// in cache). Each column's length and index enter the state, so moving
// values between columns changes it.
uint64_t columns_hash(const unsigned char *base, size_t elem, long rows, long j0, long j1, long ld) {
  uint64_t acc[4] = {kP1 + kP2 + uint64_t(j0), kP2, 0, 0 - kP1};
  const size_t col_bytes = elem * size_t(rows);
  for (long j = j0; j < j1; ++j) {
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
  return avalanche(rotl(acc[0], 1) + rotl(acc[1], 7) + rotl(acc[2], 12) + rotl(acc[3], 18));
}

}  // namespace

uint64_t matrix_hash(const void *a, size_t elem, long rows, long cols, long ld, int threads) {
  const auto *base = static_cast<const unsigned char *>(a);
  // Groups of about 256 KiB: enough to share among threads, few enough to
  // combine in no time.
  const long group = std::max<long>(1, long((size_t(256) << 10) / std::max<size_t>(1, elem * size_t(rows))));
  const long groups = (cols + group - 1) / group;
  std::vector<uint64_t> part(size_t(std::max<long>(groups, 1)));
#pragma omp parallel for num_threads(threads) if (threads > 1 && groups > 1) schedule(static)
  for (long g = 0; g < groups; ++g)
    part[size_t(g)] = columns_hash(base, elem, rows, g * group, std::min(cols, (g + 1) * group), ld);
  uint64_t h = kP3 ^ uint64_t(rows) * kP1 ^ uint64_t(cols);
  for (long g = 0; g < groups; ++g) h = round64(h, part[size_t(g)]);
  return avalanche(h);
}

namespace {

// A plain mutex re-initialised in a forked child, as the workspaces' is.
pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

size_t key_hash(const PackedAKey &k) {
  const std::hash<const void *> hp;
  return hp(k.a) ^ (hp(k.owner) * 31) ^ (size_t(k.m) * 1000003u) ^ (size_t(k.k) * 10007u) ^ size_t(k.ta) ^
         (hp(k.pack) * 7);
}

struct State {
  std::vector<std::shared_ptr<PackedAEntry>> entries;  // a few hundred at most: a model's weights
  size_t bytes = 0;
  uint64_t tick = 0;
  // The operands declined for room lately (hashes of their keys), so that a
  // cycle counts what callers ask for, not only what is kept. Reset when
  // it grows large (a cycle of that many distinct weights is not one).
  std::unordered_set<size_t> declined;
};
State &state() {
  static auto *s = new State;  // never destroyed: GEMM may run at exit
  return *s;
}
std::atomic<size_t> limit_override{~size_t(0)};

void lock_cache() { pthread_mutex_lock(&cache_lock); }
void unlock_cache() { pthread_mutex_unlock(&cache_lock); }
// In the child: one thread, and an entry another thread of the parent was
// packing will never be finished.
void child_cache() {
  pthread_mutex_init(&cache_lock, nullptr);
  State &s = state();
  for (size_t i = 0; i < s.entries.size();)
    if (!s.entries[i]->ready) {
      s.bytes -= s.entries[i]->bytes;
      s.entries[i] = s.entries.back();
      s.entries.pop_back();
    } else {
      ++i;
    }
}
__attribute__((constructor)) void register_cache_fork_handlers() {
  pthread_atfork(lock_cache, unlock_cache, child_cache);
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

long find(const State &s, const PackedAKey &key) {
  for (size_t i = 0; i < s.entries.size(); ++i)
    if (s.entries[i]->key == key) return long(i);
  return -1;
}

// Makes room for `bytes` more, dropping entries unused for two cycles;
// whether there is room. `skip`: an entry about to be replaced (its bytes
// leave anyway).
bool make_room(State &s, size_t bytes, size_t limit, long skip) {
  const size_t leaving = skip >= 0 ? s.entries[size_t(skip)]->bytes : 0;
  if (s.bytes - leaving + bytes <= limit) return true;
  const uint64_t cycle = s.entries.size() + s.declined.size();
  const uint64_t idle = 2 * cycle + 16;
  for (size_t i = 0; i < s.entries.size() && s.bytes - leaving + bytes > limit;) {
    const PackedAEntry &e = *s.entries[i];
    if (long(i) != skip && e.ready && s.tick > e.last_use && s.tick - e.last_use > idle) {
      if (skip == long(s.entries.size()) - 1) skip = long(i);  // drop() moves the last entry to i
      drop(s, i);
    } else {
      ++i;
    }
  }
  return s.bytes - leaving + bytes <= limit;
}

void note_declined(State &s, const PackedAKey &key) {
  if (s.declined.size() >= 65536) s.declined.clear();
  s.declined.insert(key_hash(key));
}

}  // namespace

size_t packed_a_cache_limit() {
  static const size_t configured = size_t(env_long("HCOPS_WEIGHT_CACHE", 1024, 0, 1L << 24)) << 20;
  const size_t o = limit_override.load(std::memory_order_relaxed);
  return o != ~size_t(0) ? o : configured;
}

void testing::set_packed_a_cache_limit(size_t bytes) { limit_override.store(bytes, std::memory_order_relaxed); }

std::shared_ptr<PackedAEntry> acquire_packed_a(const PackedAKey &key, unsigned long long version, size_t bytes,
                                               int node, int threads, ACacheUse *use) {
  const size_t limit = packed_a_cache_limit();
  if (limit == 0) {
    *use = ACacheUse::off;
    return nullptr;
  }
  std::shared_ptr<PackedAEntry> found;
  {
    Locked l;
    State &s = state();
    ++s.tick;
    const long i = find(s, key);
    if (i >= 0) {
      found = s.entries[size_t(i)];
      if (!found->ready) {
        *use = ACacheUse::busy;
        return nullptr;
      }
      found->last_use = s.tick;
      if (found->version != version && found->hits == 0) {
        // Changed again before it was ever read back: free its panels and
        // keep a marker of its version (bytes 0) until it stops changing.
        if (found->bytes) {
          auto marker = std::make_shared<PackedAEntry>();
          marker->key = key;
          marker->ready = true;
          s.bytes -= found->bytes;
          s.entries[size_t(i)] = marker;
          found = marker;
        }
        found->version = version;
        found->last_use = s.tick;
        *use = ACacheUse::volatile_;
        return nullptr;
      }
    }
    // No room even after dropping idle entries: declined before reading A.
    if (bytes > limit || !make_room(s, bytes, limit, found && found->bytes ? find(s, key) : -1)) {
      note_declined(s, key);
      *use = ACacheUse::full;
      return nullptr;
    }
  }
  // Outside the lock: reading op(A) takes as long as reading a weight does.
  const uint64_t hash = matrix_hash(key.a, key.elem, key.ta == Trans::N ? key.m : key.k,
                                    key.ta == Trans::N ? key.k : key.m, key.lda, threads);
  if (found && found->bytes && found->version == version && found->hash == hash) {
    Locked l;
    ++found->hits;
    *use = ACacheUse::hit;
    return found;
  }
  *use = !found || !found->bytes ? ACacheUse::packed
         : found->version != version ? ACacheUse::repacked
                                     : ACacheUse::changed;
  // New panels: a call still reading the old ones keeps them until it ends.
  auto fresh = std::make_shared<PackedAEntry>();
  fresh->key = key;
  fresh->version = version;
  fresh->hash = hash;
  fresh->bytes = bytes;
  {
    Locked l;
    State &s = state();
    fresh->last_use = s.tick;
    const long i = find(s, key);
    if (i >= 0) {
      const std::shared_ptr<PackedAEntry> &e = s.entries[size_t(i)];
      if (!e->ready) {  // another call got here first
        *use = ACacheUse::busy;
        return nullptr;
      }
      if (e->bytes && e->version == version && e->hash == hash) {  // ... and packed it as it is now
        ++e->hits;
        *use = ACacheUse::hit;
        return e;
      }
    }
    if (!make_room(s, bytes, limit, i)) {
      note_declined(s, key);
      *use = ACacheUse::full;
      return nullptr;
    }
    const long j = find(s, key);  // make_room may have moved it
    if (j >= 0) drop(s, size_t(j));
    s.entries.push_back(fresh);
    s.bytes += bytes;
    s.declined.erase(key_hash(key));
  }
  if (!fresh->panels.ensure(bytes, node)) {  // no memory: forget it, pack as usual
    Locked l;
    State &s = state();
    for (size_t i = 0; i < s.entries.size(); ++i)
      if (s.entries[i] == fresh) {
        drop(s, i);
        break;
      }
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
  long n = 0;
  for (const auto &e : state().entries) n += e->bytes != 0;
  return n;
}

void packed_a_cache_clear() {
  Locked l;
  State &s = state();
  s.entries.clear();
  s.bytes = 0;
  s.declined.clear();
}

}  // namespace hcops
