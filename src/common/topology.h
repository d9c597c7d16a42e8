// The machine as the GEMM engine sees it: compute domains (the finest NUMA
// localities that own cores), their cores and memory node, and cache sizes.
// Loaded once from hwloc, which honours HWLOC_XMLFILE, so the large machines
// in tests/topologies can be studied on a small one.
#pragma once

#include <hwloc.h>

#include <cstddef>
#include <string>
#include <vector>

namespace hcops {

struct Domain {
  int index = 0;                    // position in Topology::domains
  std::vector<int> cores;           // OS index of the first PU of each allowed core
  int mem_node = -1;                // OS index of the NUMA node packed panels go to
  std::string mem_kind;             // hwloc subtype of that node ("" = DRAM)
  hwloc_bitmap_t cpuset = nullptr;  // allowed PUs of the domain
};

struct Topology {
  std::vector<Domain> domains;
  std::size_t l1d = 32 << 10, l2 = 1 << 20, l3 = 16 << 20;  // per instance, bytes
  bool this_system = true;                                  // false for an XML topology: no binding possible
  std::string source;                                       // "this machine" or the XML path
  int numa_nodes = 0;                                       // all NUMA nodes, including memory-only ones
  int total_cores() const;
  hwloc_topology_t hw = nullptr;
};

// The process-wide topology, loaded on first use. Never fails: when hwloc
// cannot load anything it warns once and describes one domain of the PUs
// the process may run on (topology.cpp's fallback) with default cache sizes.
const Topology &topology();

// Builds a topology from an already loaded hwloc handle (takes ownership).
// `restrict_to` (may be null) limits domains to those PUs, e.g. the process's
// CPU binding under mpirun.
Topology build_topology(hwloc_topology_t hw, hwloc_const_bitmap_t restrict_to);

}  // namespace hcops
