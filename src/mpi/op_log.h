// HCOPS_MPI_VERBOSE=2: one line per offloaded operation, in the
// "hcops_verbose,..." style of HCOPS_VERBOSE, for finding which reductions
// of a run are slow or exposed:
//   hcops_verbose,mpi,<rank>,<call>,<ranks>,<count>,<type>,<op>,<bytes>,<in_flight_ms>,<exposed_ms>
// <call> is iallreduce or allreduce (or a client's operation, see
// engine.h's offload(): "broadcast", ...), <ranks> the communicator's size, <type>
// the datatype's MPI name ("derived" if it has none, "-" for
// MPI_DATATYPE_NULL), <op> the predefined op's name, "user", or "-" for
// MPI_OP_NULL. In flight: from the start of the collective to its
// completion by the progress thread. Exposed: the part of that time the
// application spent in MPI_Wait*/MPI_Test* calls on it (the whole of it for
// a blocking call; time draining at MPI_Comm_free or MPI_Finalize is only in
// level 1's total). A nonblocking op's line comes when its last holder lets
// go of it: the progress thread, the freed request or a completion call.
#pragma once

#include "mpi/op.h"

namespace hcops {
namespace mpi {

// The legend line, once per rank.
void log_legend();

// Records in `op` what its line will show of the call (`call` is copied);
// `comm` is the communicator it runs on.
void log_describe(Op *op, const char *call, int count, MPI_Datatype type, MPI_Op mop, MPI_Comm comm);

// Prints the line of `op`, finished, which was exposed for `exposed` seconds
// (capped at its time in flight; negative: not known, shown as "-", as for a
// client's operation, whose waits the engine does not see).
void log_op(int rank, const Op *op, double exposed);

}  // namespace mpi
}  // namespace hcops
