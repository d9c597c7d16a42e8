#include "mem/allocator.h"

#include <errno.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <vector>

#include "common/env.h"
#include "common/log.h"
#include "common/topology.h"
#include "mem/place.h"
#include "mem/tiers.h"

namespace hcops {
namespace mem {

std::atomic<std::size_t> threshold{SIZE_MAX};
thread_local bool inside __attribute__((tls_model("initial-exec"))) = false;

namespace {

constexpr std::size_t kDefaultThreshold = std::size_t(1) << 20;
constexpr std::size_t kArenaBytes = std::size_t(1) << 40;  // address space only
constexpr int kMaxDepth = 16;
constexpr int kStatNodes = 64;  // nodes >= 63 share the last row

struct Config {
  Policy env_policy;  // HCOPS_MEM_POLICY, empty when unset or malformed
  Rule fallback;      // "fast,thp" for every size the interposer sees
  std::size_t fast_limit = 0;
  bool stats = false;
  std::size_t cache_limit = 0;  // bytes of freed blocks kept mapped for reuse
  bool explicit_threshold = false;
  int helper_core = -1;
};
Config *config = nullptr;

std::size_t page_size() {
  static const std::size_t p = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return p;
}
std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

// ---- statistics ----
struct Stats {
  std::atomic<std::size_t> live{0}, peak{0}, allocations{0}, frees{0}, fast_in_use{0};
  std::atomic<std::size_t> hugetlb_to_thp{0}, thp_to_base{0}, fast_to_ddr{0}, to_glibc{0}, system_rule{0}, policy_refused{0};
  std::atomic<std::size_t> cache_hits{0}, cached{0};
  std::atomic<std::size_t> bytes[kStatNodes + 1][3] = {};  // [node + 1][pages], cumulative
};
Stats stats_;

void add_live(std::size_t bytes) {
  const std::size_t live = stats_.live.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  std::size_t peak = stats_.peak.load(std::memory_order_relaxed);
  while (live > peak && !stats_.peak.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
}

void count_alloc(const Block &b) {
  stats_.allocations.fetch_add(1, std::memory_order_relaxed);
  add_live(b.mapped);
  const int row = b.node < 0 ? 0 : (b.node >= kStatNodes ? kStatNodes : b.node + 1);
  stats_.bytes[row][static_cast<int>(b.pages)].fetch_add(b.mapped, std::memory_order_relaxed);
}

// ---- policy stacks ----
thread_local Policy *thread_stack[kMaxDepth];
thread_local int thread_depth = 0;
pthread_mutex_t process_lock = PTHREAD_MUTEX_INITIALIZER;
std::vector<Policy *> *process_stack = nullptr;  // under process_lock
std::atomic<int> process_depth{0};

// ---- the helper thread for asynchronous moves ----
struct MoveJob {
  long ticket;
  void *addr;
  std::size_t len;
  Target target;
};
pthread_mutex_t helper_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t helper_wake = PTHREAD_COND_INITIALIZER, helper_done = PTHREAD_COND_INITIALIZER;
std::deque<MoveJob> *helper_queue = nullptr;
// ticket -> (rc, errno) for every ticket issued and not yet waited for;
// rc is kPending until the helper has run the move.
std::map<long, std::pair<int, int>> *helper_results = nullptr;
constexpr int kPending = 1;
long helper_next_ticket = 1;
bool helper_running = false;

// ---- freed blocks kept mapped, most recently freed last ----
pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
std::vector<std::pair<void *, Block>> *cache = nullptr;  // under cache_lock
std::size_t cache_bytes = 0;                            // under cache_lock

// What Block::where records for a target: a hash of mode and node mask,
// never 0 (0 is "unknown").
uint64_t where_of(const Target &t) {
  const uint64_t h = std::hash<NodeSet>{}(t.nodes) ^ (static_cast<uint64_t>(t.mode) + 1) * 0x9E3779B97F4A7C15ull;
  return h ? h : 1;
}

// A cached block of the same page kind and placement holding `len` bytes
// without wasting more than an eighth (or one slot); nullptr when none.
void *reuse(const Rule &r, uint64_t where, std::size_t len) {
  pthread_mutex_lock(&cache_lock);
  std::size_t best = SIZE_MAX;
  for (std::size_t i = 0; i < cache->size(); ++i) {
    const Block &c = (*cache)[i].second;
    if (c.pages != r.pages || c.place != r.place || c.where != where) continue;
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

void unmap_block(void *p, std::size_t slots) {
  unmap_range(p, slots * kSlot);
  arena().give_back(p, slots);
}

void read_config() {
  auto *c = new Config;
  c->fallback.place = Place::fast;
  c->fallback.pages = Pages::thp;

  std::size_t thr = kDefaultThreshold;
  if (const char *t = env_raw("HCOPS_MEM_THRESHOLD")) {
    std::size_t v = 0;
    const std::size_t n = parse_size(t, v);
    if (n && !t[n]) {
      thr = v;
      c->explicit_threshold = true;
    } else {
      warn_once("HCOPS_MEM_THRESHOLD", "HCOPS_MEM_THRESHOLD=\"%s\" is not a size (e.g. 4M); using 1M", t);
    }
  }
  if (const char *p = env_raw("HCOPS_MEM_POLICY")) {
    ParseError err;
    if (!parse_policy(p, c->env_policy, err))
      warn_once("HCOPS_MEM_POLICY", "HCOPS_MEM_POLICY=\"%s\": %s at position %zu; using the default (%s)", p,
                err.what.c_str(), err.pos + 1, describe(c->fallback).c_str());
  }
  // A rule reaching below the threshold lowers it, unless it was set.
  if (!c->explicit_threshold) thr = std::min(thr, c->env_policy.lowest_explicit());
  thr = std::max(thr, page_size());
  if (const char *l = env_raw("HCOPS_MEM_FAST_LIMIT")) {
    std::size_t v = 0;
    const std::size_t n = parse_size(l, v);
    if (n && !l[n]) c->fast_limit = v;
    else warn_once("HCOPS_MEM_FAST_LIMIT", "HCOPS_MEM_FAST_LIMIT=\"%s\" is not a size; ignored", l);
  }
  c->stats = env_long("HCOPS_MEM_STATS", 0, 0, 1) == 1;
  // Training loops free and re-allocate the same tensors every step; keeping
  // freed blocks mapped spares the page faults (and huge-page zeroing) that
  // glibc spares by recycling its heap. Default: 1/8 of RAM, at most 4 GiB.
  {
    const std::size_t ram = static_cast<std::size_t>(sysconf(_SC_PHYS_PAGES)) * page_size();
    c->cache_limit = std::min(ram / 8, std::size_t(4) << 30);
    if (const char *v = env_raw("HCOPS_MEM_CACHE")) {
      std::size_t bytes = 0;
      const std::size_t n = parse_size(v, bytes);
      if (n && !v[n]) c->cache_limit = bytes;
      else warn_once("HCOPS_MEM_CACHE", "HCOPS_MEM_CACHE=\"%s\" is not a size (0 disables); using %s", v,
                     format_size(c->cache_limit).c_str());
    }
  }
  c->helper_core = static_cast<int>(env_long("HCOPS_MEM_HELPER_CORE", -1, -1, CPU_SETSIZE - 1));
  // Default: the last CPU of the process, read now (the constructor runs on
  // the main thread) rather than from whichever thread starts the helper.
  cpu_set_t set;
  if (c->helper_core < 0 && sched_getaffinity(0, sizeof set, &set) == 0)
    for (int cpu = CPU_SETSIZE - 1; cpu >= 0 && c->helper_core < 0; --cpu)
      if (CPU_ISSET(cpu, &set)) c->helper_core = cpu;
  process_stack = new std::vector<Policy *>;
  cache = new std::vector<std::pair<void *, Block>>;
  helper_queue = new std::deque<MoveJob>;
  helper_results = new std::map<long, std::pair<int, int>>;
  config = c;
  if (!arena().reserve(kArenaBytes)) {
    note_once("arena", "libhcops_mem: cannot reserve address space for large allocations; leaving them to glibc");
    return;
  }
  if (c->stats) std::atexit([] { print_line("%s", stats_report().c_str()); });
  threshold.store(thr, std::memory_order_release);
}

}  // namespace

void init() {
  // Once, and every caller waits for it: a second thread must not see a
  // half-built configuration.
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, [] {
    Internal in;
    read_config();
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
  if (const Rule *r = config->env_policy.match(size)) return *r;
  return config->fallback;
}

void *allocate(std::size_t size, std::size_t align, bool zero) {
  // Beyond the arena (e.g. malloc(SIZE_MAX)): glibc answers, and the
  // roundings below cannot overflow.
  if (size > Arena::span() || align > Arena::span()) {
    stats_.to_glibc.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  const Rule r = rule_for(size);
  if (r.place == Place::system) {
    stats_.system_rule.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  const std::size_t slots = round_up(size ? size : 1, kSlot) / kSlot;
  const std::size_t align_slots = align > kSlot ? align / kSlot : 1;
  const std::size_t len = r.pages == Pages::hugetlb ? slots * kSlot : round_up(size ? size : 1, page_size());
  const Target t = resolve(r, len, stats_.fast_in_use.load(std::memory_order_relaxed), config->fast_limit);
  const uint64_t where = where_of(t);
  if (config->cache_limit && align_slots == 1) {
    if (void *p = reuse(r, where, len)) {
      Block &b = arena().block(p);
      // Counted as this request's target (whose policy the block has), not
      // as first made: where fast and DDR share a node, or after a move,
      // the two differ, and HCOPS_MEM_FAST_LIMIT must hold either way.
      b.node = static_cast<int16_t>(t.node);
      b.counted_fast = t.fast;
      stats_.cache_hits.fetch_add(1, std::memory_order_relaxed);
      stats_.cached.fetch_sub(b.mapped, std::memory_order_relaxed);
      if (t.fell_back) stats_.fast_to_ddr.fetch_add(1, std::memory_order_relaxed);
      if (b.counted_fast) stats_.fast_in_use.fetch_add(b.mapped, std::memory_order_relaxed);
      count_alloc(b);
      if (zero) std::memset(p, 0, size);
      return p;
    }
  }
  void *p = arena().take(slots, align_slots);
  if (!p) {
    note_once("arena full", "libhcops_mem: address space for large allocations exhausted; further ones go to glibc");
    stats_.to_glibc.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  Pages got;
  const MapResult mapped = map_range(p, len, r.pages, got);
  if (mapped != MapResult::ok) {
    // A lost range may hold someone else's mapping now: never hand it out.
    if (mapped == MapResult::failed) arena().give_back(p, slots);
    stats_.to_glibc.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  if (r.pages == Pages::hugetlb && got != Pages::hugetlb) stats_.hugetlb_to_thp.fetch_add(1, std::memory_order_relaxed);
  if (r.pages != Pages::base && got == Pages::base) stats_.thp_to_base.fetch_add(1, std::memory_order_relaxed);
  if (t.fell_back) stats_.fast_to_ddr.fetch_add(1, std::memory_order_relaxed);
  bool placed = true;
  if (topology().this_system && !apply_policy(p, len, t)) {
    placed = false;
    stats_.policy_refused.fetch_add(1, std::memory_order_relaxed);
    note_once("mem mbind", "libhcops_mem: cannot apply the NUMA policy %s to an allocation (%s); first-touch placement",
              describe(r).c_str(), std::strerror(errno));
  }
  Block &b = arena().block(p);
  b.mapped = len;
  b.slots = static_cast<uint32_t>(slots);
  b.pages = got;
  b.place = r.place;
  b.node = static_cast<int16_t>(t.node);
  b.counted_fast = t.fast;
  b.where = placed ? where : 0;
  if (t.fast) stats_.fast_in_use.fetch_add(len, std::memory_order_relaxed);
  count_alloc(b);
  return p;
}

void release(void *p) {
  Block &b = arena().block(p);
  stats_.frees.fetch_add(1, std::memory_order_relaxed);
  stats_.live.fetch_sub(b.mapped, std::memory_order_relaxed);
  if (b.counted_fast) stats_.fast_in_use.fetch_sub(b.mapped, std::memory_order_relaxed);
  const Block freed = b;
  b = Block{};
  if (!config->cache_limit || freed.mapped > config->cache_limit || !freed.where)
    return unmap_block(p, freed.slots);
  std::vector<std::pair<void *, Block>> evicted;
  pthread_mutex_lock(&cache_lock);
  cache->emplace_back(p, freed);
  cache_bytes += freed.mapped;
  std::size_t drop = 0;
  while (cache_bytes > config->cache_limit && drop < cache->size()) cache_bytes -= (*cache)[drop++].second.mapped;
  evicted.assign(cache->begin(), cache->begin() + static_cast<long>(drop));
  cache->erase(cache->begin(), cache->begin() + static_cast<long>(drop));
  pthread_mutex_unlock(&cache_lock);
  stats_.cached.fetch_add(freed.mapped, std::memory_order_relaxed);
  for (const auto &e : evicted) {
    stats_.cached.fetch_sub(e.second.mapped, std::memory_order_relaxed);
    unmap_block(e.first, e.second.slots);
  }
}

bool resize_in_place(void *p, std::size_t size) {
  if (size > Arena::span()) return false;  // the roundings below would overflow
  Block &b = arena().block(p);
  const std::size_t len = b.pages == Pages::hugetlb ? round_up(size ? size : 1, kSlot)
                                                     : round_up(size ? size : 1, page_size());
  const std::size_t slots = round_up(len, kSlot) / kSlot;
  char *base = static_cast<char *>(p);
  if (len <= b.mapped) {  // shrink: return whole slots and pages past the end
    if (len < b.slots * kSlot) unmap_range(base + len, b.slots * kSlot - len);
    if (slots < b.slots) arena().give_back(base + slots * kSlot, b.slots - slots);
    stats_.live.fetch_sub(b.mapped - len, std::memory_order_relaxed);
    if (b.counted_fast) stats_.fast_in_use.fetch_sub(b.mapped - len, std::memory_order_relaxed);
    b.mapped = len;
    b.slots = static_cast<uint32_t>(slots);
    return true;
  }
  if (slots > b.slots && !arena().extend(p, b.slots, slots)) return false;
  // The extension takes the policy the block's first page has.
  Target t;
  int mode = 0;
  NodeMask mask;
  const bool known = get_mempolicy(&mode, mask.bits, NodeMask::kMaxnode, p, MPOL_F_ADDR) == 0;
  if (known) {
    t.mode = mode;
    t.nodes = mask.to_set();
  }
  Pages got;
  switch (map_range(base + b.mapped, len - b.mapped, b.pages, got)) {
    case MapResult::ok:
      break;
    case MapResult::failed:
      if (slots > b.slots) arena().give_back(base + b.slots * kSlot, slots - b.slots);
      return false;
    case MapResult::lost:  // the block keeps what it had; the lost range is never handed out
      return false;
  }
  if (!known || got != b.pages || (topology().this_system && t.mode && !apply_policy(base + b.mapped, len - b.mapped, t)))
    b.where = 0;  // the block is no longer one policy and one page kind: not reused
  add_live(len - b.mapped);
  {
    const int row = b.node < 0 ? 0 : (b.node >= kStatNodes ? kStatNodes : b.node + 1);
    stats_.bytes[row][static_cast<int>(got)].fetch_add(len - b.mapped, std::memory_order_relaxed);
  }
  if (b.counted_fast) stats_.fast_in_use.fetch_add(len - b.mapped, std::memory_order_relaxed);
  b.mapped = len;
  b.slots = static_cast<uint32_t>(std::max<std::size_t>(slots, b.slots));
  return true;
}

std::size_t usable_size(const void *p) { return arena().block(p).mapped; }

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

namespace {
// A move gives the blocks it covers whole the target's policy; a block it
// covers in part (or a failed move) has no single policy any more.
int move_and_file(void *addr, std::size_t len, const Target &t) {
  const int rc = move_range(addr, len, t);
  const uint64_t where = rc == 0 ? where_of(t) : 0;
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  arena().for_each_block(addr, len, [&](char *start, Block &b) {
    const uintptr_t s = reinterpret_cast<uintptr_t>(start);
    b.where = s >= a && s + b.mapped <= a + len ? where : 0;
  });
  return rc;
}

bool target_from(const char *text, std::size_t len, Target &t) {
  Policy p;
  ParseError err;
  if (!text || !parse_policy(text, p, err) || p.rules.size() != 1 || p.rules[0].has_lo ||
      p.rules[0].hi != SIZE_MAX || p.rules[0].place == Place::system) {
    errno = EINVAL;
    return false;
  }
  t = resolve(p.rules[0], len, 0, 0);
  return true;
}

void pin_helper() {
  const int core = config ? config->helper_core : -1;
  if (core < 0 || core >= CPU_SETSIZE) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    note_once("helper core", "libhcops_mem: cannot pin the memory helper thread to CPU %d", core);
}

void *helper_main(void *) {
  pin_helper();
  pthread_mutex_lock(&helper_lock);
  for (;;) {
    while (helper_queue->empty()) pthread_cond_wait(&helper_wake, &helper_lock);
    MoveJob job = helper_queue->front();
    helper_queue->pop_front();
    pthread_mutex_unlock(&helper_lock);
    const int rc = move_and_file(job.addr, job.len, job.target);
    const int err = rc ? errno : 0;
    pthread_mutex_lock(&helper_lock);
    (*helper_results)[job.ticket] = {rc, err};
    pthread_cond_broadcast(&helper_done);
  }
  return nullptr;
}
}  // namespace

int move(void *addr, std::size_t len, const char *target) {
  Target t;
  if (!target_from(target, len, t)) return -1;
  return move_and_file(addr, len, t);
}

long move_async(void *addr, std::size_t len, const char *target) {
  Target t;
  if (!target_from(target, len, t)) return -1;
  pthread_mutex_lock(&helper_lock);
  if (!helper_running) {
    pthread_t th;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    // Signals are for the application's threads: the helper starts with all
    // of them blocked.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    const int rc = pthread_create(&th, &attr, helper_main, nullptr);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
      pthread_mutex_unlock(&helper_lock);
      errno = rc;
      return -1;
    }
    helper_running = true;
  }
  const long ticket = helper_next_ticket++;
  (*helper_results)[ticket] = {kPending, 0};
  helper_queue->push_back(MoveJob{ticket, addr, len, t});
  pthread_cond_signal(&helper_wake);
  pthread_mutex_unlock(&helper_lock);
  return ticket;
}

int wait_move(long ticket) {
  pthread_mutex_lock(&helper_lock);
  std::map<long, std::pair<int, int>>::iterator it;
  // Never issued, or already waited for: waiting would never end.
  while ((it = helper_results->find(ticket)) == helper_results->end() || it->second.first == kPending) {
    if (it == helper_results->end()) {
      pthread_mutex_unlock(&helper_lock);
      errno = EINVAL;
      return -1;
    }
    if (!helper_running) {  // forked child: the helper is gone, and its jobs with it
      helper_results->erase(it);
      pthread_mutex_unlock(&helper_lock);
      errno = ECHILD;
      return -1;
    }
    pthread_cond_wait(&helper_done, &helper_lock);
  }
  const auto [rc, err] = it->second;
  helper_results->erase(it);
  pthread_mutex_unlock(&helper_lock);
  if (rc) errno = err;
  return rc;
}

std::size_t stat(const char *name) {
  const std::string n = name ? name : "";
  if (n == "live") return stats_.live.load();
  if (n == "peak") return stats_.peak.load();
  if (n == "allocations") return stats_.allocations.load();
  if (n == "frees") return stats_.frees.load();
  if (n == "fast_in_use") return stats_.fast_in_use.load();
  if (n == "fallback.hugetlb_to_thp") return stats_.hugetlb_to_thp.load();
  if (n == "fallback.thp_to_base") return stats_.thp_to_base.load();
  if (n == "fallback.fast_to_ddr") return stats_.fast_to_ddr.load();
  if (n == "fallback.to_glibc") return stats_.to_glibc.load();
  if (n == "system_rule") return stats_.system_rule.load();
  if (n == "policy_refused") return stats_.policy_refused.load();
  if (n == "cache_hits") return stats_.cache_hits.load();
  if (n == "cached") return stats_.cached.load();
  if (n == "threshold") return threshold.load();
  static const char *const kinds[] = {"thp", "hugetlb", "base"};
  for (int k = 0; k < 3; ++k) {
    const std::string prefix = std::string("bytes.") + kinds[k];
    if (n == prefix) {
      std::size_t sum = 0;
      for (int row = 0; row <= kStatNodes; ++row) sum += stats_.bytes[row][k].load();
      return sum;
    }
    if (n.rfind(prefix + ".node", 0) == 0) {
      const int node = std::atoi(n.c_str() + prefix.size() + 5);
      if (node >= 0 && node < kStatNodes) return stats_.bytes[node + 1][k].load();
    }
  }
  return SIZE_MAX;
}

std::string stats_report() {
  auto mib = [](std::size_t b) { return std::to_string((b + (1 << 19)) >> 20) + " MiB"; };
  std::string s = "hcops_mem: " + std::to_string(stats_.allocations.load()) + " large allocations (" +
                  std::to_string(stats_.allocations.load() - stats_.frees.load()) + " live), peak " +
                  mib(stats_.peak.load()) + " mapped\nhcops_mem: fallbacks: hugetlb->thp " +
                  std::to_string(stats_.hugetlb_to_thp.load()) + ", thp->base " +
                  std::to_string(stats_.thp_to_base.load()) + ", fast->ddr " +
                  std::to_string(stats_.fast_to_ddr.load()) + ", to glibc " + std::to_string(stats_.to_glibc.load()) +
                  "; rule 'system' " + std::to_string(stats_.system_rule.load()) + "; policy refused " + std::to_string(stats_.policy_refused.load()) + "; reused from the cache " +
                  std::to_string(stats_.cache_hits.load()) + ", cached at exit " + mib(stats_.cached.load()) + "\n";
  for (int row = 0; row <= kStatNodes; ++row) {
    std::string line;
    static const char *const kinds[] = {"thp", "hugetlb", "base"};
    for (int k = 0; k < 3; ++k)
      if (const std::size_t b = stats_.bytes[row][k].load()) line += std::string(" ") + kinds[k] + " " + mib(b);
    if (line.empty()) continue;
    s += "hcops_mem: allocated on " +
         (row == 0 ? std::string("the faulting CPU's node(s)") : "node " + std::to_string(row - 1)) + ":" + line + "\n";
  }
  if (!tiers().any_fast()) s += "hcops_mem: no fast memory tier here: 'fast' meant the local DDR node\n";
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

std::string describe_config() {
  init();
  std::string s = "threshold " + format_size(threshold.load()) + (config->explicit_threshold ? " (HCOPS_MEM_THRESHOLD)" : "");
  s += "\npolicy: ";
  s += config->env_policy.rules.empty() ? describe(config->fallback) + " (default)"
                                        : describe(config->env_policy) + "; otherwise " + describe(config->fallback);
  s += "\n" + tiers().describe();
  if (config->fast_limit) s += "; fast limit " + format_size(config->fast_limit) + " (HCOPS_MEM_FAST_LIMIT)";
  s += "\narena: " + (Arena::span() ? format_size(Arena::span()) + " of address space reserved" : std::string("none"));
  return s;
}

void before_fork() {
  tiers_before_fork();
  pthread_mutex_lock(&process_lock);
  pthread_mutex_lock(&helper_lock);
  pthread_mutex_lock(&cache_lock);
  arena().lock();
}
void after_fork_parent() {
  arena().unlock();
  pthread_mutex_unlock(&cache_lock);
  pthread_mutex_unlock(&helper_lock);
  pthread_mutex_unlock(&process_lock);
  tiers_after_fork();
}
void after_fork_child() {
  arena().reinit_after_fork();
  pthread_mutex_init(&cache_lock, nullptr);
  pthread_mutex_init(&helper_lock, nullptr);
  pthread_mutex_init(&process_lock, nullptr);
  pthread_cond_init(&helper_wake, nullptr);
  pthread_cond_init(&helper_done, nullptr);
  tiers_after_fork();  // unlocking is enough: the lock's owner came along
  helper_running = false;  // threads do not survive fork
  if (helper_queue) helper_queue->clear();
}

}  // namespace mem
}  // namespace hcops
