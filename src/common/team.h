// Threads for one GEMM call. HCOps runs on the caller's OpenMP runtime (the
// libgomp PyTorch already uses) so both share one pool instead of two pools
// fighting for the cores.
#pragma once

#include <atomic>

#include "common/topology.h"

namespace hcops {

// The most threads a GEMM called now may use: 1 inside an OpenMP parallel
// region (the caller already parallelises), 1 in a child forked from a
// multi-threaded parent (libgomp's pool does not survive fork; a team there
// hangs), else HCOPS_NUM_THREADS, else omp_get_max_threads() (which follows
// OMP_NUM_THREADS and torch.set_num_threads).
int max_threads();

// Why max_threads() is what it is, for HCOPS_VERBOSE and hcops-info.
const char *thread_policy();

// Pins the calling thread to `d` when the machine has several domains and
// HCOPS_BIND is not 0; once per thread and domain. A failure warns once.
void bind_to_domain(const Topology &topo, const Domain &d);

// A barrier for the threads of one domain: spins briefly, then yields, so a
// team larger than the cores (synthetic topologies, busy machines) still moves.
class DomainBarrier {
 public:
  void reset(int n) {
    n_ = n;
    count_.store(0, std::memory_order_relaxed);
  }
  void wait();

 private:
  int n_ = 1;
  std::atomic<int> count_{0};
  std::atomic<unsigned> generation_{0};
};

}  // namespace hcops
