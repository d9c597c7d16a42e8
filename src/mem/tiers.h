// The memory tiers of the machine as the placement policies see them: for
// each compute domain of topology.h, its high-bandwidth ("fast") nodes and its
// DDR node. Among the domain's local NUMA nodes (hwloc's local-node query),
// fast nodes come from HCOPS_MEM_FAST_NODES when set, else from hwloc: nodes
// of subtype HBM or MCDRAM, or, in a domain without such nodes, nodes whose
// bandwidth to the domain (hwloc memory attributes) is at least 1.5x that of
// its DDR node.
#pragma once

#include <string>
#include <vector>

#include "common/topology.h"
#include "mem/policy.h"

namespace hcops {
namespace mem {

struct DomainTier {
  std::vector<int> fast;  // OS indexes, nearest first; empty: no fast tier here
  int ddr = -1;
  // What the first fast node holds (hwloc's local memory; 0 when unknown or
  // no fast tier): the capacity behind `fast` for this domain.
  std::size_t fast_bytes = 0;
};

struct Tiers {
  std::vector<DomainTier> domains;  // parallel to Topology::domains
  std::vector<int> domain_of_pu;    // PU OS index -> domain, -1 outside all
  NodeSet fast_nodes, ddr_nodes;
  std::string source;  // how the fast nodes were found, every way any domain used
  bool any_fast() const { return fast_nodes.any(); }
  // The domain of PU `pu` (0 when unknown, so a policy always has a target).
  int domain_of(int pu) const;
  std::string describe() const;
};

// The domain of the CPU the calling thread runs on (0 when unknown).
int current_domain();

// From a topology; `fast_nodes_env` is HCOPS_MEM_FAST_NODES (null: unset),
// a list of nodes of `topo` (common/id_list.h). A malformed list, or one
// naming a node `topo` lacks, warns once and is ignored.
Tiers build_tiers(const Topology &topo, const char *fast_nodes_env);

// The process-wide tiers, built on first use from topology().
const Tiers &tiers();
// pthread_atfork: fork waits for a build in progress.
void tiers_before_fork();
void tiers_after_fork();

}  // namespace mem
}  // namespace hcops
