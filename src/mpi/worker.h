// The progress threads of libhcops_mpi: each drives the collectives handed
// to it to completion (PMPI_Testsome) while the application computes.
#pragma once

#include <vector>

#include "mpi/op.h"

namespace hcops {
namespace mpi {

struct Worker;

// The shortest nap of a progress thread between fruitless polls on a shared
// core (worker.cpp).
constexpr long kNapMinNs = 20000;

// A progress thread pinned to `cpu` (-1: not pinned), with every signal
// blocked; `own_core`: nobody else runs on its core (HCOPS_MPI_EXCLUSIVE),
// so it may poll without pause; otherwise it naps between fruitless polls,
// up to `nap_max_ns` (HCOPS_MPI_NAP_MAX). nullptr if the thread cannot start.
Worker *start_worker(int cpu, bool own_core, long nap_max_ns);

// Hands `op`, whose collective has been started, to `w`, which calls
// finish() on it once the collective has completed.
void submit(Worker *w, Op *op);

// The CPU `w` was pinned to (-1: none).
int worker_cpu(const Worker *w);

// An application thread starts (ends) waiting for offloaded operations:
// the progress threads cut their naps short and keep them at 20 us
// meanwhile (worker.cpp).
void waiting_begin(const std::vector<Worker *> &workers);
void waiting_end();

// Joins the thread once its ops are finished, and deletes `w`.
void stop_worker(Worker *w);

}  // namespace mpi
}  // namespace hcops
