// Which CPUs the progress threads of a rank take (HCOPS_MPI_CORES), and how
// ranks sharing a CPU set avoid taking the same ones.
#pragma once

#include <sched.h>

#include <string>
#include <vector>

namespace hcops {
namespace mpi {

// How many ranks of this node that were given the same CPU set come before
// this one. Collective over MPI_COMM_WORLD (every rank calls it at MPI_Init).
int rank_among_sharers(const cpu_set_t &mask);

// CPUs for the progress threads, one thread each: HCOPS_MPI_CORES, a list
// of CPUs of `mask` (common/id_list.h: "3", "6-7", "2,5") or "last"
// (default): the first PU of the last core of `mask`; the `sharer`-th rank
// sharing the same CPU set takes the `sharer`-th core from the end. A
// malformed list, or one naming a CPU outside `mask`, warns once and gives
// "last". `setting` receives the setting used, for messages.
std::vector<int> progress_cpus(const cpu_set_t &mask, int sharer, std::string *setting);

// Removes from `set` every PU of the core holding `cpu`.
void clear_core(int cpu, cpu_set_t &set);

}  // namespace mpi
}  // namespace hcops
