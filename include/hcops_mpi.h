/* HCOps: libhcops_mpi.so's interface for clients in the same process, such
 * as the torch.distributed backend: any nonblocking MPI operation, not only
 * MPI_Iallreduce, driven to completion by the progress threads on the
 * dedicated cores (see doc/mpi.md). Link -lhcops_mpi before the MPI library,
 * or find the functions with dlsym when libhcops_mpi.so is preloaded. */
#ifndef HCOPS_MPI_H
#define HCOPS_MPI_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Starts the operation on `shadow` (store its request in *request) with the
 * PMPI_ entry points (MPI_Iallreduce would be the wrapper's, for a
 * communicator it did not make); returns an MPI error code. Runs on the
 * thread that called hcops_mpi_offload. */
typedef int (*hcops_mpi_start_fn)(void *arg, MPI_Comm shadow, MPI_Request *request);
/* The operation completed with `error` (MPI_SUCCESS or an MPI error code).
 * Runs on a progress thread: keep it short, and make no MPI call there. */
typedef void (*hcops_mpi_done_fn)(void *arg, int error);

/* Offloads one nonblocking operation on `comm`: `start` starts it at once,
 * on the caller's thread, on libhcops_mpi's private duplicate of `comm` (so
 * operations keep the order in which they are offloaded, and never match
 * messages sent on `comm` itself); a progress thread then drives it, and
 * calls `done(arg, error)` when it has completed. The duplicate also carries
 * the offloaded MPI_Iallreduce/MPI_Allreduce of whoever calls them on
 * `comm`: a client uses a communicator of its own (made with MPI_Comm_dup
 * or another constructor the wrapper interposes), or issues its operations
 * in the same order as those. `call`, `count`, `type` (MPI_DATATYPE_NULL:
 * none) and `op` (MPI_OP_NULL: none) describe the operation in
 * HCOPS_MPI_VERBOSE; `call` is copied.
 * Returns 0 when it was not offloaded: libhcops_mpi is off (MPI was not
 * initialized through its MPI_Init*, HCOPS_MPI=0, no MPI_THREAD_MULTIPLE),
 * `comm` is MPI_COMM_NULL or was made without the wrapper, or `start` or
 * `done` is NULL. The caller then runs the operation itself. Returns 1
 * otherwise, with *rc the error of `start` (then `done` is never called) or
 * MPI_SUCCESS. MPI_Comm_free and MPI_Finalize wait for the operations
 * offloaded on the communicator; a `done` may still be returning when
 * MPI_Comm_free does (MPI_Finalize waits for it too). */
int hcops_mpi_offload(MPI_Comm comm, const char *call, int count, MPI_Datatype type, MPI_Op op,
                      hcops_mpi_start_fn start, hcops_mpi_done_fn done, void *arg, int *rc);

/* The caller was blocked `seconds` waiting for offloaded operations still
 * running: counted as exposed communication in HCOPS_MPI_VERBOSE's summary. */
void hcops_mpi_exposed(double seconds);

#ifdef __cplusplus
}
#endif

#endif
