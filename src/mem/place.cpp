#include "place.h"

#include <numaif.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "../log.h"
#include "arena.h"
#include "tiers.h"

#ifndef MPOL_LOCAL
#define MPOL_LOCAL 4
#endif
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

namespace hcops {
namespace mem {

namespace {

int current_domain() {
  const int cpu = sched_getcpu();
  return tiers().domain_of(cpu);
}

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
  switch (r.place) {
    case Place::system:
    case Place::local: {
      Target t;
      t.mode = MPOL_LOCAL;
      return t;
    }
    case Place::ddr:
      return preferred(tt.domains[current_domain()].ddr);
    case Place::fast: {
      const DomainTier &d = tt.domains[current_domain()];
      if (d.fast.empty()) return preferred(d.ddr);  // no fast tier here: local DDR
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

bool map_range(void *addr, std::size_t len, Pages want, Pages &got) {
  const int fixed = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED;
  if (want == Pages::hugetlb) {
    // Mapped where the kernel likes, then moved over the reservation in one
    // step. A MAP_FIXED | MAP_HUGETLB that fails (pool empty) unmaps the
    // range first: another thread's mmap could land in that hole before it
    // is reserved again, and the THP mapping below would then replace it.
    void *h = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
    if (h != MAP_FAILED) {
      if (mremap(h, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, addr) == addr) {
        got = Pages::hugetlb;
        return true;
      }
      // mremap of hugetlb needs Linux 5.16; before, it may have unmapped
      // the target: reserve it again unless it still is (EEXIST).
      munmap(h, len);
      mmap(addr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    }
    want = Pages::thp;
  }
  void *p = mmap(addr, len, PROT_READ | PROT_WRITE, fixed, -1, 0);
  if (p != addr) {
    mmap(addr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    return false;
  }
  // Explicit either way, so THP "always" mode cannot turn base into huge.
  if (madvise(addr, len, want == Pages::thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) != 0 && want == Pages::thp)
    want = Pages::base;  // THP disabled in this kernel
  got = want;
  return true;
}

void unmap_range(void *addr, std::size_t len) {
  mmap(addr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}

namespace {
long do_mbind(void *addr, std::size_t len, const Target &t, unsigned flags) {
  unsigned long mask[kMaxNodes / (8 * sizeof(unsigned long))] = {};
  for (int i = 0; i < kMaxNodes; ++i)
    if (t.nodes.test(i)) mask[i / (8 * sizeof(unsigned long))] |= 1UL << (i % (8 * sizeof(unsigned long)));
  const bool has_mask = t.mode != MPOL_LOCAL && t.mode != MPOL_DEFAULT;
  return mbind(addr, len, t.mode, has_mask ? mask : nullptr, has_mask ? kMaxNodes + 1 : 0, flags);
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
