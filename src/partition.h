// How one GEMM call is spread over the machine (DiT-HC's two-level scheme):
// first across compute domains — along N, so each domain packs only its own
// slice of B into its own memory; along M when N is too narrow to split —
// then over a grid of mt x nt threads inside each domain, so the threads of a
// domain share the packed B panel in their common cache instead of each
// streaming its own.
#pragma once

#include <string>
#include <vector>

#include "topology.h"

namespace hcops {

struct DomainPart {
  int domain = 0;           // index into Topology::domains
  int mem_node = -1;        // where this part's packed panels are requested
  long m0 = 0, m1 = 0;      // rows of C this domain computes
  long n0 = 0, n1 = 0;      // columns of C this domain computes
  int first_thread = 0;     // team thread numbers [first_thread, first_thread + threads)
  int threads = 0;
  int grid_m = 1, grid_n = 1;  // threads = grid_m * grid_n
};

struct Plan {
  bool split_n = true;      // across domains along N (else along M)
  int threads = 1;
  std::vector<DomainPart> parts;
  std::string describe() const;
};

struct PlanLimits {
  int mr = 8, nr = 4;           // microkernel tile
  double min_flops_per_thread = 2e6;  // below this a thread costs more than it gives
};

// threads: the most the caller allows (>= 1). The plan may use fewer.
Plan plan_gemm(const Topology &topo, long m, long n, long k, int threads, const PlanLimits &lim);

}  // namespace hcops
