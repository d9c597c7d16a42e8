#include "common/mem_nodes.h"

#include <algorithm>
#include <cstring>

namespace hcops {

namespace {
hwloc_location at(hwloc_const_bitmap_t cpuset) {
  hwloc_location loc;
  loc.type = HWLOC_LOCATION_TYPE_CPUSET;
  loc.location.cpuset = const_cast<hwloc_cpuset_t>(cpuset);  // hwloc reads it only
  return loc;
}
}  // namespace

bool hbm_by_subtype(hwloc_obj_t n) {
  return n->subtype && (!std::strcmp(n->subtype, "HBM") || !std::strcmp(n->subtype, "MCDRAM"));
}

// The NUMA nodes local to a domain as hwloc sees them (locality equal to or
// larger than its cpuset), nearest (smallest locality) first.
std::vector<hwloc_obj_t> local_numa_nodes(hwloc_topology_t hw, hwloc_const_bitmap_t cpuset) {
  hwloc_location loc = at(cpuset);
  unsigned nr = static_cast<unsigned>(std::max(1, hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_NUMANODE)));
  std::vector<hwloc_obj_t> out(nr);
  if (hwloc_get_local_numanode_objs(hw, &loc, &nr, out.data(), HWLOC_LOCAL_NUMANODE_FLAG_LARGER_LOCALITY) != 0)
    return {};
  out.resize(std::min<std::size_t>(nr, out.size()));
  std::stable_sort(out.begin(), out.end(), [](hwloc_obj_t a, hwloc_obj_t b) {
    return hwloc_bitmap_weight(a->cpuset) < hwloc_bitmap_weight(b->cpuset);
  });
  return out;
}

hwloc_uint64_t node_bandwidth(hwloc_topology_t hw, hwloc_obj_t node, hwloc_const_bitmap_t cpuset) {
  hwloc_location loc = at(cpuset);
  hwloc_uint64_t v = 0;
  if (hwloc_memattr_get_value(hw, HWLOC_MEMATTR_ID_BANDWIDTH, node, &loc, 0, &v) != 0) return 0;
  return v;
}

hwloc_obj_t ddr_node(hwloc_topology_t hw, const std::vector<hwloc_obj_t> &nodes, const std::vector<bool> &named_fast,
                     hwloc_const_bitmap_t cpuset) {
  hwloc_obj_t best = nullptr;
  hwloc_uint64_t best_bw = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (named_fast[i]) continue;
    if (!best) {
      best = nodes[i];
      best_bw = node_bandwidth(hw, best, cpuset);
      continue;
    }
    if (hwloc_bitmap_weight(nodes[i]->cpuset) != hwloc_bitmap_weight(best->cpuset)) break;
    const hwloc_uint64_t bw = node_bandwidth(hw, nodes[i], cpuset);
    if (bw && best_bw && bw < best_bw) {
      best = nodes[i];
      best_bw = bw;
    }
  }
  return best;
}

hwloc_obj_t ddr_node(hwloc_topology_t hw, hwloc_const_bitmap_t cpuset) {
  const std::vector<hwloc_obj_t> nodes = local_numa_nodes(hw, cpuset);
  std::vector<bool> named_fast(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) named_fast[i] = hbm_by_subtype(nodes[i]);
  return ddr_node(hw, nodes, named_fast, cpuset);
}

}  // namespace hcops
