// hcops_mpi.h: libhcops_mpi's C interface for clients in the same process
// (the torch.distributed backend), over the engine's offload().
#include "mpi/engine.h"  // first: it keeps Open MPI's C++ bindings out

#include "hcops_mpi.h"

#define HCOPS_EXPORT __attribute__((visibility("default")))

extern "C" {

HCOPS_EXPORT int hcops_mpi_offload(MPI_Comm comm, const char *call, int count, MPI_Datatype type, MPI_Op op,
                                   hcops_mpi_start_fn start, hcops_mpi_done_fn done, void *arg, int *rc) {
  int ignored;
  return hcops::mpi::offload(comm, call, count, type, op, start, done, arg, rc ? rc : &ignored) ? 1 : 0;
}

HCOPS_EXPORT void hcops_mpi_exposed(double seconds) { hcops::mpi::exposed(seconds); }

}  // extern "C"
