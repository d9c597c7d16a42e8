#include "mem/place.h"

#include <numaif.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/fp_env.h"
#include "common/log.h"
#include "mem/arena.h"
#include "mem/tiers.h"

#ifndef MPOL_LOCAL
#define MPOL_LOCAL 4
#endif
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

namespace hcops {
namespace mem {

namespace {

// Free bytes on `node` from sysfs, or SIZE_MAX when unknown.
std::size_t node_free_bytes(int node) {
  char path[96];
  std::snprintf(path, sizeof path, "/sys/devices/system/node/node%d/meminfo", node);
  FILE *f = std::fopen(path, "re");
  if (!f) return SIZE_MAX;
  char line[256];
  std::size_t kb = SIZE_MAX;
  while (std::fgets(line, sizeof line, f))
    if (const char *p = std::strstr(line, "MemFree:")) {
      kb = std::strtoull(p + 8, nullptr, 10);
      break;
    }
  std::fclose(f);
  return kb == SIZE_MAX ? kb : kb << 10;
}

Target preferred(int node) {
  Target t;
  if (node >= 0 && node < kMaxNodes) {
    t.mode = MPOL_PREFERRED;
    t.nodes.set(node);
    t.node = node;
  } else {
    t.mode = MPOL_LOCAL;
  }
  return t;
}

}  // namespace

Target resolve(const Rule &r, std::size_t bytes, std::size_t fast_in_use, std::size_t fast_limit) {
  const Tiers &tt = tiers();
  return resolve(tt, current_domain(), r, bytes, fast_in_use, fast_limit);
}

Target resolve(const Tiers &tt, int domain, const Rule &r, std::size_t bytes, std::size_t fast_in_use,
               std::size_t fast_limit) {
  if (domain < 0 || domain >= static_cast<int>(tt.domains.size())) domain = 0;
  switch (r.place) {
    case Place::system:
    case Place::local: {
      Target t;
      t.mode = MPOL_LOCAL;
      return t;
    }
    case Place::ddr: return preferred(tt.domains[domain].ddr);
    case Place::fast: {
      const DomainTier &d = tt.domains[domain];
      if (d.fast.empty()) {
        // Every such allocation comes here: the note's lookup only once.
        static std::atomic<bool> said{false};
        if (!said.exchange(true, std::memory_order_relaxed))
          note_once("no fast tier", "libhcops_mem: no high-bandwidth memory found (%s); 'fast' places on local DDR",
                    tt.source.c_str());
        return preferred(d.ddr);
      }
      const int node = d.fast.front();
      // MPOL_PREFERRED alone already spills to DDR when the node is full; the
      // checks choose DDR up front so the choice is counted and the fast
      // node's last pages are not split between tensors.
      const bool over_limit = fast_limit && fast_in_use + bytes > fast_limit;
      const bool over_free = !fast_limit && node != d.ddr && node_free_bytes(node) < bytes;
      if (over_limit || over_free) {
        Target t = preferred(d.ddr);
        t.fell_back = true;
        return t;
      }
      Target t = preferred(node);
      t.fast = true;
      return t;
    }
    case Place::interleave: {
      Target t;
      t.mode = MPOL_INTERLEAVE;
      t.nodes = r.nodes.any() ? r.nodes : tt.ddr_nodes;
      if (t.nodes.none()) t.mode = MPOL_LOCAL;
      return t;
    }
    case Place::bind: {
      Target t;
      t.mode = MPOL_BIND;
      t.nodes = r.nodes;
      if (r.nodes.count() == 1)
        for (int i = 0; i < kMaxNodes; ++i)
          if (r.nodes.test(i)) t.node = i;
      return t;
    }
  }
  return Target{};
}

namespace {
constexpr int kReserve = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;

// True when all of [addr, addr + len) is still an inaccessible private
// anonymous mapping, i.e. the arena's reservation and nothing else.
bool still_reserved(void *addr, std::size_t len) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr), e = a + len;
  FILE *f = std::fopen("/proc/self/maps", "re");
  if (!f) return false;
  uintptr_t covered = a;
  char line[512];
  while (covered < e && std::fgets(line, sizeof line, f)) {
    unsigned long lo, hi, off, inode;
    char perms[8];
    unsigned dev_major, dev_minor;
    if (std::sscanf(line, "%lx-%lx %7s %lx %x:%x %lu", &lo, &hi, perms, &off, &dev_major, &dev_minor, &inode) != 7)
      continue;
    if (hi <= covered || lo > covered) continue;
    if (std::strcmp(perms, "---p") != 0 || inode != 0) break;
    covered = hi;
  }
  std::fclose(f);
  return covered >= e;
}

// After a failed MAP_FIXED call that may have unmapped [addr, addr + len):
// reserve it again. False when another mapping took (part of) its place.
bool reserve_again(void *addr, std::size_t len) {
  const int saved = errno;
  void *p = mmap(addr, len, PROT_NONE, kReserve | MAP_FIXED_NOREPLACE, -1, 0);
  bool ok = p == addr;
  if (!ok && p != MAP_FAILED) munmap(p, len);  // a kernel before 4.17 took the flag as a hint
  if (!ok && p == MAP_FAILED && errno == EEXIST) ok = still_reserved(addr, len);
  errno = saved;
  return ok;
}

// Whether this kernel can mremap hugetlb mappings (Linux 5.16). Before, the
// call fails after unmapping its target, which inside the arena would open a
// hole another thread's mmap could fill. Tried once, on a scratch range
// outside the arena, with the first hugetlb mapping obtained.
enum { kUnknown, kWorks, kBroken };
std::atomic<int> hugetlb_mremap{kUnknown};

bool probe_hugetlb_mremap(void *&h, std::size_t len) {
  int state = hugetlb_mremap.load(std::memory_order_acquire);
  if (state != kUnknown) return state == kWorks;
  void *scratch = mmap(nullptr, len, PROT_NONE, kReserve, -1, 0);
  if (scratch == MAP_FAILED) return false;  // try again next time
  void *moved = mremap(h, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, scratch);
  if (moved == scratch) {
    h = moved;
    state = kWorks;
  } else {
    // The scratch range may be partly unmapped now, and refilled by another
    // thread: leave it alone rather than unmap someone else's memory.
    state = kBroken;
    note_once("hugetlb mremap",
              "libhcops_mem: this kernel cannot move hugetlb mappings (Linux < 5.16); "
              "hugetlb requests get transparent huge pages");
  }
  hugetlb_mremap.store(state, std::memory_order_release);
  return state == kWorks;
}

// An empty hugetlb pool stays empty for a while (until an administrator or
// a finished job fills it): after a MAP_HUGETLB of `len` bytes failed,
// requests at least that large go straight to THP instead of each paying a
// failing system call. The pool is tried again by the kHugetlbRetry-th of
// them after a failure, and by any smaller request; a success forgets the
// failure. Counted in requests, not time: nothing to read per allocation,
// and the same on a fast and a slow machine.
constexpr unsigned kHugetlbRetry = 64;
std::atomic<std::size_t> hugetlb_failed_len{0};  // 0: the last try succeeded
std::atomic<unsigned> hugetlb_skipped{0};

bool pool_known_empty(std::size_t len) {
  const std::size_t failed = hugetlb_failed_len.load(std::memory_order_relaxed);
  if (!failed || len < failed) return false;
  return hugetlb_skipped.fetch_add(1, std::memory_order_relaxed) % kHugetlbRetry != kHugetlbRetry - 1;
}
}  // namespace

MapResult map_range(void *addr, std::size_t len, Pages want, Pages &got) {
  if (want == Pages::hugetlb && hugetlb_mremap.load(std::memory_order_relaxed) != kBroken && !pool_known_empty(len)) {
    // Mapped where the kernel likes, then moved over the reservation in one
    // step. A MAP_FIXED | MAP_HUGETLB that fails (pool empty) would unmap
    // the range first, leaving a hole for another thread's mmap.
    void *h = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
    if (h == MAP_FAILED) {
      const std::size_t failed = hugetlb_failed_len.load(std::memory_order_relaxed);
      if (!failed || len < failed) hugetlb_failed_len.store(len, std::memory_order_relaxed);
      hugetlb_skipped.store(0, std::memory_order_relaxed);
    } else {
      hugetlb_failed_len.store(0, std::memory_order_relaxed);
    }
    if (h != MAP_FAILED) {
      if (probe_hugetlb_mremap(h, len) && mremap(h, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, addr) == addr) {
        got = Pages::hugetlb;
        return MapResult::ok;
      }
      munmap(h, len);
      if (hugetlb_mremap.load(std::memory_order_relaxed) == kWorks && !reserve_again(addr, len)) return MapResult::lost;
    }
    want = Pages::thp;
  }
  if (want == Pages::hugetlb) want = Pages::thp;
  void *p = mmap(addr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (p != addr) return reserve_again(addr, len) ? MapResult::failed : MapResult::lost;
  // Explicit either way, so THP "always" mode cannot turn base into huge.
  if (madvise(addr, len, want == Pages::thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) != 0 && want == Pages::thp)
    want = Pages::base;  // THP disabled in this kernel
  got = want;
  return MapResult::ok;
}

void unmap_range(void *addr, std::size_t len) {
  mmap(addr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}

namespace {
long do_mbind(void *addr, std::size_t len, const Target &t, unsigned flags) {
  const NodeMask mask(t.nodes);
  const bool has_mask = t.mode != MPOL_LOCAL && t.mode != MPOL_DEFAULT;
  KeepFpEnv keep;  // libnuma is foreign code in the allocating thread; a syscall costs far more
  return mbind(addr, len, t.mode, has_mask ? mask.bits : nullptr, has_mask ? NodeMask::kMaxnode : 0, flags);
}
}  // namespace

bool apply_policy(void *addr, std::size_t len, const Target &t) {
  if (t.mode == MPOL_DEFAULT) return true;
  return do_mbind(addr, len, t, 0) == 0;
}

int move_range(void *addr, std::size_t len, const Target &t) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr) & ~(page - 1);
  const uintptr_t e = (reinterpret_cast<uintptr_t>(addr) + len + page - 1) & ~(page - 1);
  if (e <= a) return 0;
  return do_mbind(reinterpret_cast<void *>(a), e - a, t, MPOL_MF_MOVE) == 0 ? 0 : -1;
}

}  // namespace mem
}  // namespace hcops
