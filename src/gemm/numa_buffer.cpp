#include "gemm/numa_buffer.h"

#include <numaif.h>
#include <sys/mman.h>

#include <atomic>
#include <map>
#include <mutex>

#include "common/fault.h"
#include "common/fp_env.h"
#include "common/log.h"
#include "common/nodemask.h"
#include "common/topology.h"

namespace hcops {

namespace {
std::mutex stats_lock;
std::map<int, long> &requests() {
  static auto *r = new std::map<int, long>;
  return *r;
}
std::atomic<long> applied{0};

constexpr std::size_t kHugePage = 2u << 20;

// MPOL_PREFERRED, not BIND: a full node must spill elsewhere, never OOM-kill
// the application over a packing buffer.
bool prefer_node(void *p, std::size_t bytes, int node) {
  if (node < 0 || node >= kMaxNodes) return false;
  KeepFpEnv keep;  // libnuma, in the caller's thread
  return mbind(p, bytes, MPOL_PREFERRED, NodeMask::single(node).bits, NodeMask::kMaxnode, 0) == 0;
}
}  // namespace

void *NumaBuffer::ensure(std::size_t bytes, int node) {
  if (ptr_ && size_ >= bytes && node_ == node) return ptr_;
  if (ptr_) munmap(ptr_, size_);
  ptr_ = nullptr;
  size_ = (bytes + 4095) & ~std::size_t(4095);
  node_ = node;
  void *p = fault::allocation_fails() ? MAP_FAILED
                                       : mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    size_ = 0;
    return nullptr;
  }
  if (size_ >= kHugePage) madvise(p, size_, MADV_HUGEPAGE);  // packed panels are TLB-hungry
  if (node >= 0) {
    {
      std::lock_guard<std::mutex> g(stats_lock);
      ++requests()[node];
    }
    if (topology().this_system && topology().numa_nodes > 1) {
      if (prefer_node(p, size_, node)) ++applied;
      else warn_once("mbind", "cannot place packing buffers on NUMA node %d; using first-touch placement", node);
    }
  }
  ptr_ = p;
  return ptr_;
}

NumaBuffer::~NumaBuffer() {
  if (ptr_) munmap(ptr_, size_);
  ptr_ = nullptr;  // an ensure() after this maps afresh rather than hand out the unmapped memory
  size_ = 0;
}

long numa_requests(int node) {
  std::lock_guard<std::mutex> g(stats_lock);
  auto it = requests().find(node);
  return it == requests().end() ? 0 : it->second;
}

long numa_bindings_applied() { return applied.load(); }

void numa_reset_counters() {
  std::lock_guard<std::mutex> g(stats_lock);
  requests().clear();
  applied = 0;
}

}  // namespace hcops
