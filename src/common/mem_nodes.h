// The NUMA nodes local to a set of CPUs, as hwloc knows them, and which of
// them is the set's ordinary DRAM ("DDR") node. Shared by the GEMM engine
// (where packed panels go) and libhcops_mem's tiers (fast and DDR nodes),
// so both read the machine the same way.
#pragma once

#include <hwloc.h>

#include <vector>

namespace hcops {

// Nodes whose locality equals or contains `cpuset`
// (hwloc_get_local_numanode_objs), nearest (smallest locality) first.
std::vector<hwloc_obj_t> local_numa_nodes(hwloc_topology_t hw, hwloc_const_bitmap_t cpuset);

// Bandwidth from `cpuset` to `node` in MiB/s (hwloc memory attributes, from
// the firmware's HMAT or an XML); 0 when unknown.
hwloc_uint64_t node_bandwidth(hwloc_topology_t hw, hwloc_obj_t node, hwloc_const_bitmap_t cpuset);

// Whether hwloc names `node` high-bandwidth memory (subtype HBM or MCDRAM).
bool hbm_by_subtype(hwloc_obj_t node);

// The DDR node among `nodes` (local_numa_nodes order) not marked in
// `named_fast`: the nearest, and of equally near ones the slowest when hwloc
// knows their bandwidth, since an HBM node hwloc did not label shares its
// DDR node's locality and may come first. nullptr when there is none.
hwloc_obj_t ddr_node(hwloc_topology_t hw, const std::vector<hwloc_obj_t> &nodes, const std::vector<bool> &named_fast,
                     hwloc_const_bitmap_t cpuset);

// ddr_node() with the nodes hwloc names HBM as the fast ones.
hwloc_obj_t ddr_node(hwloc_topology_t hw, hwloc_const_bitmap_t cpuset);

}  // namespace hcops
