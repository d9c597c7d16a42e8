#include "mem/arena.h"

#include <sys/mman.h>
#include <sys/resource.h>

#include <new>

namespace hcops {
namespace mem {

namespace {
class Guard {
 public:
  explicit Guard(Arena &a) : a_(a) { a_.lock(); }
  ~Guard() { a_.unlock(); }

 private:
  Arena &a_;
};

void *reserve_range(std::size_t bytes) {
  void *p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}
}  // namespace

bool Arena::reserve(std::size_t want) {
  // Under ulimit -v (batch schedulers set it) the reservation counts against
  // the limit: take at most a quarter of it, so the program's own mappings
  // and thread stacks still fit.
  struct rlimit as;
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
    want = std::min<std::size_t>(want, as.rlim_cur / 4);
  // Halve until the address space allows it.
  for (std::size_t bytes = want; bytes >= 64 * kSlot; bytes /= 2) {
    const std::size_t nslots = bytes / kSlot;
    void *raw = reserve_range(bytes + kSlot);
    if (!raw) continue;
    void *meta = reserve_range(nslots * sizeof(Block));
    if (!meta) {
      munmap(raw, bytes + kSlot);
      continue;
    }
    // The metadata is read-write but backed only where touched.
    mprotect(meta, nslots * sizeof(Block), PROT_READ | PROT_WRITE);
    const uintptr_t r = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t base = (r + kSlot - 1) & ~(kSlot - 1);
    if (base > r) munmap(raw, base - r);
    if (r + bytes + kSlot > base + bytes)
      munmap(reinterpret_cast<void *>(base + bytes), r + bytes + kSlot - base - bytes);
    meta_ = static_cast<Block *>(meta);
    free_[0] = nslots;
    base_.store(base, std::memory_order_relaxed);
    span_.store(bytes, std::memory_order_release);
    return true;
  }
  return false;
}

void *Arena::take(std::size_t slots, std::size_t align_slots) {
  if (!slots || align_slots == 0) return nullptr;
  Guard g(*this);
  // The base is only slot-aligned: align the address, not the slot index.
  const std::size_t b = base_.load(std::memory_order_relaxed) / kSlot;
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    const std::size_t s = it->first, len = it->second;
    const std::size_t a = (b + s + align_slots - 1) / align_slots * align_slots - b;
    if (a + slots > s + len) continue;
    free_.erase(it);
    if (a > s) free_[s] = a - s;
    if (a + slots < s + len) free_[a + slots] = s + len - a - slots;
    meta_[a] = Block{};
    return reinterpret_cast<void *>(base_.load(std::memory_order_relaxed) + a * kSlot);
  }
  return nullptr;
}

bool Arena::extend(void *p, std::size_t have, std::size_t want) {
  const std::size_t s = index(p), next = s + have, more = want - have;
  Guard g(*this);
  auto it = free_.find(next);
  if (it == free_.end() || it->second < more) return false;
  const std::size_t len = it->second;
  free_.erase(it);
  if (len > more) free_[next + more] = len - more;
  return true;
}

void Arena::give_back(void *p, std::size_t slots) {
  std::size_t s = index(p), len = slots;
  Guard g(*this);
  auto next = free_.find(s + len);
  if (next != free_.end()) {
    len += next->second;
    free_.erase(next);
  }
  auto it = free_.lower_bound(s);
  if (it != free_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == s) {
      prev->second += len;
      return;
    }
  }
  free_[s] = len;
}

void Arena::lock() { pthread_mutex_lock(&lock_); }
void Arena::unlock() { pthread_mutex_unlock(&lock_); }
void Arena::reinit_after_fork() { pthread_mutex_init(&lock_, nullptr); }

Arena &arena() {
  // Placement-new into static storage: never destroyed, so frees that run
  // after static destructors (atexit handlers, other libraries) still work.
  alignas(Arena) static unsigned char storage[sizeof(Arena)];
  static Arena *a = new (storage) Arena;
  return *a;
}

}  // namespace mem
}  // namespace hcops
