#include "mpi/cores.h"

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>
#include <strings.h>

#include <cstddef>

#include "common/env.h"
#include "common/id_list.h"
#include "common/log.h"
#include "common/topology.h"

namespace hcops {
namespace mpi {

// Unbound ranks all see every CPU: without it, `last` would put all their
// progress threads on one CPU (mpi_overlap.py --bind-to none, 2 ranks:
// Iallreduce 4 KiB 66 us instead of 4).
int rank_among_sharers(const cpu_set_t &mask) {
  MPI_Comm node;
  if (PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS) return 0;
  int rank = 0, size = 1;
  PMPI_Comm_rank(node, &rank);
  PMPI_Comm_size(node, &size);
  std::vector<cpu_set_t> all(static_cast<std::size_t>(size));
  int before = 0;
  if (PMPI_Allgather(&mask, sizeof mask, MPI_BYTE, all.data(), sizeof mask, MPI_BYTE, node) == MPI_SUCCESS)
    for (int r = 0; r < rank; ++r)
      if (CPU_EQUAL(&all[static_cast<std::size_t>(r)], &mask)) ++before;
  PMPI_Comm_free(&node);
  return before;
}

namespace {

// The first PU of the last core of `mask`, or of the sharer-th from the end.
std::vector<int> last_core(const cpu_set_t &mask, int sharer) {
  const Topology &t = topology();
  std::vector<int> firsts;  // first allowed PU of each core, in order
  if (t.this_system && t.hw) {
    for (hwloc_obj_t core = nullptr; (core = hwloc_get_next_obj_by_type(t.hw, HWLOC_OBJ_CORE, core));)
      for (int pu = hwloc_bitmap_first(core->cpuset); pu >= 0; pu = hwloc_bitmap_next(core->cpuset, pu))
        if (pu < CPU_SETSIZE && CPU_ISSET(pu, &mask)) {
          firsts.push_back(pu);
          break;
        }
  }
  if (firsts.empty())
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &mask)) firsts.push_back(c);
  std::vector<int> cpus;
  if (!firsts.empty()) cpus.push_back(firsts[firsts.size() - 1 - static_cast<std::size_t>(sharer) % firsts.size()]);
  return cpus;
}

}  // namespace

std::vector<int> progress_cpus(const cpu_set_t &mask, int sharer, std::string *setting) {
  const char *text = env_raw("HCOPS_MPI_CORES");
  // "last" alone is the default, by cores and sharers; in a list it is the
  // last CPU of `mask` (common/id_list.h).
  if (text && strcasecmp(text, "last")) {
    UsableIds usable(CPU_SETSIZE);
    for (int c = 0; c < CPU_SETSIZE; ++c) usable[c] = CPU_ISSET(c, &mask);
    std::vector<int> cpus;
    // The fallback is only this engine's: the variable stays as the user set
    // it (a library must not change its host's environment, and setenv
    // races with other threads' getenv).
    if (id_list_setting("HCOPS_MPI_CORES", text, "CPU", usable, false, "using last", cpus)) {
      *setting = text;
      return cpus;
    }
  }
  *setting = "last";
  return last_core(mask, sharer);
}

void clear_core(int cpu, cpu_set_t &set) {
  CPU_CLR(cpu, &set);
  const Topology &t = topology();
  if (!t.this_system || !t.hw) return;
  hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(t.hw, static_cast<unsigned>(cpu));
  hwloc_obj_t core = pu ? hwloc_get_ancestor_obj_by_type(t.hw, HWLOC_OBJ_CORE, pu) : nullptr;
  if (!core) return;
  for (int c = hwloc_bitmap_first(core->cpuset); c >= 0; c = hwloc_bitmap_next(core->cpuset, c))
    if (c < CPU_SETSIZE) CPU_CLR(c, &set);
}

}  // namespace mpi
}  // namespace hcops
