#include "mem/allocator.h"

#include <errno.h>
#include <numaif.h>
#include <pthread.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/log.h"
#include "common/topology.h"
#include "mem/cache.h"
#include "mem/config.h"
#include "mem/mover.h"
#include "mem/place.h"
#include "mem/stats.h"
#include "mem/tiers.h"

namespace hcops {
namespace mem {

std::atomic<std::size_t> threshold{SIZE_MAX};
thread_local bool inside __attribute__((tls_model("initial-exec"))) = false;

namespace {

constexpr std::size_t kArenaBytes = std::size_t(1) << 40;  // address space only
constexpr int kMaxDepth = 16;

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

// Bytes of data a block of `size` bytes maps: whole huge pages for hugetlb,
// whole base pages otherwise.
std::size_t data_bytes(std::size_t size, Pages pages) {
  return round_up(size ? size : 1, pages == Pages::hugetlb ? kSlot : page_size());
}

// Slots a block of `len` data bytes holds: its slack may spill into one more.
std::size_t slots_for(std::size_t len) { return round_up(len + slack_bytes(), kSlot) / kSlot; }

// Maps the `len` data bytes of a block at `p` with page kind `want`, and its
// slack after them. For thp and base the slack is one more page of the same
// mapping (no extra VMA); a hugetlb mapping is whole huge pages, so there the
// slack is a base page of its own in the next slot rather than one more huge
// page from the pool.
MapResult map_with_slack(char *p, std::size_t len, Pages want, Pages &got) {
  const std::size_t slack = slack_bytes();
  if (want != Pages::hugetlb) return map_range(p, len + slack, want, got);
  const MapResult data = map_range(p, len, want, got);
  if (data != MapResult::ok) return data;
  Pages tail;
  const MapResult m = map_range(p + len, slack, Pages::base, tail);
  if (m != MapResult::ok) unmap_range(p, len);  // reserved again, as for `failed`
  return m;
}

// ---- policy stacks ----
thread_local Policy *thread_stack[kMaxDepth];
thread_local int thread_depth = 0;
pthread_mutex_t process_lock = PTHREAD_MUTEX_INITIALIZER;
std::vector<Policy *> *process_stack = nullptr;  // under process_lock
std::atomic<int> process_depth{0};

void start() {
  process_stack = new std::vector<Policy *>;
  init_cache();
  init_mover();
  const Config &c = load_config();
  if (!arena().reserve(kArenaBytes)) {
    note_once("arena", "libhcops_mem: cannot reserve address space for large allocations; leaving them to glibc");
    return;
  }
  if (c.stats)
    std::atexit([] {
      Internal in;
      write_stats_report();
    });
  threshold.store(c.threshold, std::memory_order_release);
}

}  // namespace

void init() {
  // Once, and every caller waits for it: a second thread must not see a
  // half-built configuration.
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, [] {
    Internal in;
    start();
  });
}

Rule rule_for(std::size_t size) {
  for (int i = thread_depth - 1; i >= 0; --i)
    if (const Rule *r = thread_stack[i]->match(size)) return *r;
  if (process_depth.load(std::memory_order_acquire) > 0) {
    pthread_mutex_lock(&process_lock);
    for (auto it = process_stack->rbegin(); it != process_stack->rend(); ++it)
      if (const Rule *r = (*it)->match(size)) {
        const Rule copy = *r;
        pthread_mutex_unlock(&process_lock);
        return copy;
      }
    pthread_mutex_unlock(&process_lock);
  }
  const Config &c = *config();
  if (const Rule *r = c.env_policy.match(size)) return *r;
  return c.fallback;
}

void *allocate(std::size_t size, std::size_t align, bool zero) {
  // Beyond the arena (e.g. malloc(SIZE_MAX)): glibc answers, and the
  // roundings below cannot overflow.
  if (size > Arena::span() || align > Arena::span()) {
    counters.to_glibc.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  const Rule r = rule_for(size);
  if (r.place == Place::system) {
    counters.system_rule.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  const std::size_t len = data_bytes(size, r.pages);
  const std::size_t slots = slots_for(len);
  const std::size_t align_slots = align > kSlot ? align / kSlot : 1;
  const Config &c = *config();
  const Target t = resolve(r, len, counters.fast_in_use.load(std::memory_order_relaxed), c.fast_limit);
  const uint64_t where = where_of(t);
  if (c.cache_limit && align_slots == 1) {
    if (void *p = reuse(r, where, len)) {
      Block &b = arena().block(p);
      // Counted as this request's target (whose policy the block has), not
      // as first made: where fast and DDR share a node, or after a move,
      // the two differ, and HCOPS_MEM_FAST_LIMIT must hold either way.
      b.node = static_cast<int16_t>(t.node);
      b.counted_fast = t.fast;
      counters.cache_hits.fetch_add(1, std::memory_order_relaxed);
      counters.cached.fetch_sub(b.mapped, std::memory_order_relaxed);
      if (t.fell_back) counters.fast_to_ddr.fetch_add(1, std::memory_order_relaxed);
      if (b.counted_fast) counters.fast_in_use.fetch_add(b.mapped, std::memory_order_relaxed);
      count_alloc(b);
      if (zero) std::memset(p, 0, size);
      return p;
    }
  }
  make_room(len);  // before mapping: the cache must not lift the peak
  void *p = arena().take(slots, align_slots);
  if (!p) {
    note_once("arena full", "libhcops_mem: address space for large allocations exhausted; further ones go to glibc");
    counters.to_glibc.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  Pages got;
  const MapResult mapped = map_with_slack(static_cast<char *>(p), len, r.pages, got);
  if (mapped != MapResult::ok) {
    // A lost range may hold someone else's mapping now: never hand it out.
    if (mapped == MapResult::failed) arena().give_back(p, slots);
    counters.to_glibc.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  if (r.pages == Pages::hugetlb && got != Pages::hugetlb)
    counters.hugetlb_to_thp.fetch_add(1, std::memory_order_relaxed);
  if (r.pages != Pages::base && got == Pages::base) counters.thp_to_base.fetch_add(1, std::memory_order_relaxed);
  if (t.fell_back) counters.fast_to_ddr.fetch_add(1, std::memory_order_relaxed);
  bool placed = true;
  if (topology().this_system && !apply_policy(p, len + slack_bytes(), t)) {
    const int err = errno;
    // EPERM or ENOSYS: this process can never set a policy (a container's
    // seccomp profile without CAP_SYS_NICE, a kernel without NUMA), so the
    // next request of this rule gets first-touch pages too, and may reuse
    // this block. Another refusal (a node not allowed now) is not the rule's
    // lasting fate: the block is not reused under the rule's policy.
    placed = err == EPERM || err == ENOSYS;
    counters.policy_refused.fetch_add(1, std::memory_order_relaxed);
    note_once("mem mbind", "libhcops_mem: cannot apply the NUMA policy %s to an allocation (%s); first-touch placement",
              describe(r).c_str(), std::strerror(err));
  }
  Block &b = arena().block(p);
  b.mapped = len;
  b.slots = static_cast<uint32_t>(slots);
  b.pages = got;
  b.asked = r.pages;
  b.place = r.place;
  b.node = static_cast<int16_t>(t.node);
  b.counted_fast = t.fast;
  b.where = placed ? where : 0;
  if (t.fast) counters.fast_in_use.fetch_add(len, std::memory_order_relaxed);
  count_alloc(b);
  return p;
}

void release(void *p) {
  Block &b = arena().block(p);
  counters.frees.fetch_add(1, std::memory_order_relaxed);
  counters.live.fetch_sub(b.mapped, std::memory_order_relaxed);
  if (b.counted_fast) counters.fast_in_use.fetch_sub(b.mapped, std::memory_order_relaxed);
  const Block freed = b;
  b = Block{};
  retire(p, freed);
}

bool resize_in_place(void *p, std::size_t size) {
  if (size > Arena::span()) return false;  // the roundings below would overflow
  Block &b = arena().block(p);
  const std::size_t len = data_bytes(size, b.pages), slots = slots_for(len), slack = slack_bytes();
  // A hugetlb block's slack is a base page right after its last huge page:
  // it changes size only by moving (realloc copies), which keeps the slack
  // mapped at every moment without a failure path that could lose it.
  if (b.pages == Pages::hugetlb) return len == b.mapped;
  char *base = static_cast<char *>(p);
  if (len <= b.mapped) {  // shrink: the first pages past the end stay as the slack; the rest goes
    if (len + slack < b.slots * kSlot) unmap_range(base + len + slack, b.slots * kSlot - len - slack);
    if (slots < b.slots) arena().give_back(base + slots * kSlot, b.slots - slots);
    counters.live.fetch_sub(b.mapped - len, std::memory_order_relaxed);
    if (b.counted_fast) counters.fast_in_use.fetch_sub(b.mapped - len, std::memory_order_relaxed);
    b.mapped = len;
    b.slots = static_cast<uint32_t>(slots);
    return true;
  }
  if (slots > b.slots && !arena().extend(p, b.slots, slots)) return false;
  make_room(len - b.mapped);
  // The extension takes the policy the block's first page has.
  Target t;
  int mode = 0;
  NodeMask mask;
  const bool known = get_mempolicy(&mode, mask.bits, NodeMask::kMaxnode, p, MPOL_F_ADDR) == 0;
  if (known) {
    t.mode = mode;
    t.nodes = mask.to_set();
  }
  // The old slack becomes data; the extension is mapped past it, over the
  // reservation, and its last page(s) are the new slack.
  char *from = base + b.mapped + slack;
  const std::size_t more = len - b.mapped;
  Pages got;
  switch (map_range(from, more, b.pages, got)) {
    case MapResult::ok: break;
    case MapResult::failed:
      if (slots > b.slots) arena().give_back(base + b.slots * kSlot, slots - b.slots);
      return false;
    case MapResult::lost:  // the block keeps what it had; the lost range is never handed out
      return false;
  }
  if (!known || got != b.pages || (topology().this_system && t.mode && !apply_policy(from, more, t)))
    b.where = 0;  // the block is no longer one policy and one page kind: not reused
  count_growth(b, got, more);
  if (b.counted_fast) counters.fast_in_use.fetch_add(more, std::memory_order_relaxed);
  b.mapped = len;
  b.slots = static_cast<uint32_t>(std::max<std::size_t>(slots, b.slots));
  return true;
}

// What the caller may write: the data pages. The slack past them is for
// reading only by contract (nothing writes it, so it stays the zero page).
std::size_t usable_size(const void *p) { return arena().block(p).mapped; }

std::size_t slack_bytes() {
  static const std::size_t s = round_up(kMinSlack, page_size());
  return s;
}

bool push_policy(Scope s, const char *text, ParseError &err) {
  Policy parsed;
  if (!parse_policy(text, parsed, err)) return false;
  if (s == Scope::thread) {
    if (thread_depth == kMaxDepth) {
      err = {0, "policy stack full (16 levels)"};
      return false;
    }
    thread_stack[thread_depth++] = new Policy(std::move(parsed));
    return true;
  }
  pthread_mutex_lock(&process_lock);
  process_stack->push_back(new Policy(std::move(parsed)));
  process_depth.store(static_cast<int>(process_stack->size()), std::memory_order_release);
  pthread_mutex_unlock(&process_lock);
  return true;
}

bool pop_policy(Scope s) {
  if (s == Scope::thread) {
    if (thread_depth == 0) return false;
    delete thread_stack[--thread_depth];
    return true;
  }
  pthread_mutex_lock(&process_lock);
  const bool ok = !process_stack->empty();
  if (ok) {
    delete process_stack->back();
    process_stack->pop_back();
    process_depth.store(static_cast<int>(process_stack->size()), std::memory_order_release);
  }
  pthread_mutex_unlock(&process_lock);
  return ok;
}

// Lock order: tiers, policy stacks, mover, cache, arena.
void before_fork() {
  tiers_before_fork();
  pthread_mutex_lock(&process_lock);
  mover_before_fork();
  cache_before_fork();
  arena().lock();
}
void after_fork_parent() {
  arena().unlock();
  cache_after_fork_parent();
  mover_after_fork_parent();
  pthread_mutex_unlock(&process_lock);
  tiers_after_fork();
}
void after_fork_child() {
  arena().reinit_after_fork();
  cache_after_fork_child();
  mover_after_fork_child();
  pthread_mutex_init(&process_lock, nullptr);
  tiers_after_fork();  // unlocking is enough: the lock's owner came along
}

}  // namespace mem
}  // namespace hcops
