#include "mem/tiers.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "common/env.h"
#include "common/fp_env.h"
#include "common/id_list.h"
#include "common/log.h"
#include "common/mem_nodes.h"

namespace hcops {
namespace mem {

namespace {

// The nodes of the topology (hwloc lists only those the cpuset allows), or
// node 0 alone when hwloc gave none.
UsableIds topology_nodes(const Topology &topo) {
  UsableIds nodes(kMaxNodes);
  bool any = false;
  if (topo.hw)
    for (hwloc_obj_t n = nullptr; (n = hwloc_get_next_obj_by_type(topo.hw, HWLOC_OBJ_NUMANODE, n));)
      if (n->os_index < static_cast<unsigned>(kMaxNodes)) nodes[n->os_index] = any = true;
  if (!any) nodes[0] = true;
  return nodes;
}

}  // namespace

int current_domain() { return tiers().domain_of(sched_getcpu()); }

int Tiers::domain_of(int pu) const {
  if (pu < 0 || pu >= static_cast<int>(domain_of_pu.size()) || domain_of_pu[pu] < 0) return 0;
  return domain_of_pu[pu];
}

std::string Tiers::describe() const {
  std::string s = "fast nodes: ";
  if (!any_fast()) s += "none (fast means local DDR)";
  for (int i = 0; i < kMaxNodes; ++i)
    if (fast_nodes.test(i)) s += std::to_string(i) + " ";
  s += " [" + source + "]";
  for (std::size_t i = 0; i < domains.size(); ++i) {
    s += "\n  domain " + std::to_string(i) + ": fast ";
    if (domains[i].fast.empty()) s += "none";
    for (std::size_t j = 0; j < domains[i].fast.size(); ++j) s += (j ? "," : "") + std::to_string(domains[i].fast[j]);
    s += ", ddr " + std::to_string(domains[i].ddr);
  }
  return s;
}

Tiers build_tiers(const Topology &topo, const char *fast_env) {
  Tiers t;
  NodeSet listed;
  std::vector<int> ids;
  if (id_list_setting("HCOPS_MEM_FAST_NODES", fast_env, "node", topology_nodes(topo), false,
                      "fast nodes from hwloc instead", ids))
    for (int n : ids) listed.set(n);
  const bool use_env = listed.any();
  // How each domain's fast nodes were found; the label names every way used.
  bool by_subtype = false, by_bandwidth = false;
  hwloc_topology_t hw = topo.hw;
  for (const Domain &d : topo.domains) {
    DomainTier dt;
    dt.ddr = d.mem_node;
    if (hw && d.cpuset) {
      const std::vector<hwloc_obj_t> nodes = local_numa_nodes(hw, d.cpuset);
      std::vector<bool> named_fast(nodes.size());
      for (std::size_t i = 0; i < nodes.size(); ++i) {
        named_fast[i] = use_env ? listed.test(static_cast<int>(nodes[i]->os_index)) : hbm_by_subtype(nodes[i]);
        if (named_fast[i]) dt.fast.push_back(static_cast<int>(nodes[i]->os_index));
      }
      if (!use_env && !dt.fast.empty()) by_subtype = true;
      const hwloc_obj_t ddr = ddr_node(hw, nodes, named_fast, d.cpuset);
      if (ddr) dt.ddr = static_cast<int>(ddr->os_index);
      if (!use_env && dt.fast.empty() && ddr) {
        const hwloc_uint64_t base = node_bandwidth(hw, ddr, d.cpuset);
        for (hwloc_obj_t n : nodes)
          if (n != ddr && base && node_bandwidth(hw, n, d.cpuset) * 2 >= base * 3) {
            dt.fast.push_back(static_cast<int>(n->os_index));
            by_bandwidth = true;
          }
      }
      const int lastpu = hwloc_bitmap_last(d.cpuset);
      if (lastpu >= static_cast<int>(t.domain_of_pu.size())) t.domain_of_pu.resize(lastpu + 1, -1);
      for (int pu = hwloc_bitmap_first(d.cpuset); pu >= 0; pu = hwloc_bitmap_next(d.cpuset, pu))
        t.domain_of_pu[pu] = d.index;
    }
    // Listed nodes local to no domain are still fast: the user said so.
    if (use_env && dt.fast.empty())
      for (int i = 0; i < kMaxNodes; ++i)
        if (listed.test(i)) dt.fast.push_back(i);
    if (hw && !dt.fast.empty())
      if (hwloc_obj_t n = hwloc_get_numanode_obj_by_os_index(hw, static_cast<unsigned>(dt.fast.front())))
        dt.fast_bytes = n->attr->numanode.local_memory;
    for (int n : dt.fast) t.fast_nodes.set(n);
    if (dt.ddr >= 0) t.ddr_nodes.set(dt.ddr);
    t.domains.push_back(dt);
  }
  if (t.domains.empty()) t.domains.push_back(DomainTier{});
  t.source = use_env                      ? "HCOPS_MEM_FAST_NODES"
             : by_subtype && by_bandwidth ? "hwloc node subtype and bandwidth"
             : by_subtype                 ? "hwloc node subtype HBM/MCDRAM"
             : by_bandwidth               ? "hwloc bandwidth attributes"
                                          : "hwloc: no high-bandwidth node";
  return t;
}

namespace {
// Built at the first large allocation, under a lock that fork waits for: a
// child forked while another thread builds would otherwise wait forever on a
// function-local static's guard.
pthread_mutex_t build_lock = PTHREAD_MUTEX_INITIALIZER;
std::atomic<const Tiers *> built{nullptr};
}  // namespace

const Tiers &tiers() {
  if (const Tiers *t = built.load(std::memory_order_acquire)) return *t;
  pthread_mutex_lock(&build_lock);
  if (!built.load(std::memory_order_relaxed)) {
    KeepFpEnv keep;  // hwloc's queries run in the allocating thread
    built.store(new Tiers(build_tiers(topology(), env_raw("HCOPS_MEM_FAST_NODES"))), std::memory_order_release);
  }
  pthread_mutex_unlock(&build_lock);
  return *built.load(std::memory_order_acquire);
}

void tiers_before_fork() { pthread_mutex_lock(&build_lock); }
void tiers_after_fork() { pthread_mutex_unlock(&build_lock); }

}  // namespace mem
}  // namespace hcops
