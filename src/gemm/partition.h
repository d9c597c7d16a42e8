// How one GEMM call is spread over the machine (DiT-HC's two-level scheme):
// first across compute domains — along N, so each domain packs only its own
// slice of B into its own memory; along M when N is too narrow to split —
// then over a grid of mt x nt threads inside each domain, so the threads of a
// domain share the packed B panel in their common cache instead of each
// streaming its own.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "common/topology.h"

namespace hcops {

struct DomainPart {
  int domain = 0;        // index into Topology::domains
  int mem_node = -1;     // where this part's packed panels are requested
  long m0 = 0, m1 = 0;   // rows of C this domain computes
  long n0 = 0, n1 = 0;   // columns of C this domain computes
  int first_thread = 0;  // team thread numbers [first_thread, first_thread + threads)
  int threads = 0;
  int grid_m = 1, grid_n = 1;  // threads = grid_m * grid_n
};

struct PartitionPlan {
  bool split_n = true;  // across domains along N (else along M)
  int threads = 1;
  std::vector<DomainPart> parts;
  std::string describe() const;
};

struct PlanLimits {
  int mr = 8, nr = 4;                   // microkernel tile
  long min_flops_per_thread = 2000000;  // below this a thread costs more than it gives
};

// [begin, end) of piece `idx` when [0, len) is cut into `parts` nearly equal
// pieces whose boundaries fall on multiples of `align` (whole tiles). How a
// part's rows are dealt to its grid_m thread rows, and columns to grid_n.
inline void tile_range(long len, int parts, int idx, long align, long &begin, long &end) {
  const long units = (len + align - 1) / align;
  const long per = units / parts, extra = units % parts;
  const long u0 = idx * per + (idx < extra ? idx : extra);
  const long u1 = u0 + per + (idx < extra ? 1 : 0);
  begin = u0 * align < len ? u0 * align : len;
  end = u1 * align < len ? u1 * align : len;
}

// The flops of an m x n x k product, as the planner and the driver weigh
// it: 2 m n k in integers (no floating-point flag raised in the caller's
// environment; exact for m, n, k < 2^42), k = 0 counted as 1 (C is still
// scaled).
inline __int128 product_flops(long m, long n, long k) { return __int128(2) * m * n * std::max(k, 1L); }

// threads: the most the caller allows (>= 1). The plan may use fewer.
PartitionPlan plan_gemm(const Topology &topo, long m, long n, long k, int threads, const PlanLimits &lim);

}  // namespace hcops
