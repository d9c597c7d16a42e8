// The Python module hcops._c10d: the backend's creator for
// torch.distributed.Backend.register_backend (hcops.dist).
#include <torch/csrc/utils/pybind.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include "backend.h"

namespace {

c10::intrusive_ptr<hcops::dist::BackendBase> create(const c10::intrusive_ptr<::c10d::Store> &, int64_t rank, int64_t size,
                                         const std::vector<uint64_t> &global_ranks) {
  MPI_Comm comm = MPI_COMM_NULL;
  {
    pybind11::gil_scoped_release nogil;  // collective over the group's ranks
    std::vector<uint64_t> ranks = global_ranks;
    int world = 0;
    comm = hcops::dist::Backend::make_comm(ranks);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    int crank = -1, csize = 0;
    MPI_Comm_rank(comm, &crank);
    MPI_Comm_size(comm, &csize);
    TORCH_CHECK(csize == size && crank == rank, "hcops: torch.distributed says rank ", rank, " of ", size,
                ", MPI says ", crank, " of ", csize, " (MPI_COMM_WORLD: ", world,
                " processes): start the job with mpirun (or srun), one process per rank");
  }
  return c10::make_intrusive<hcops::dist::Backend>(comm, static_cast<int>(rank), static_cast<int>(size));
}

// hcops:// rendezvous (hcops.dist): this process's rank and the job's size
// in MPI_COMM_WORLD, MPI initialized if it was not.
pybind11::tuple world() {
  int rank = 0, size = 0;
  {
    pybind11::gil_scoped_release nogil;
    hcops::dist::Backend::init_mpi();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
  return pybind11::make_tuple(rank, size);
}

// root's bytes, on every rank of MPI_COMM_WORLD (on a duplicate of it, so
// that nothing of the application's can match): the address of the
// TCPStore that rank 0 opened.
pybind11::bytes broadcast_bytes(const std::string &data, int root) {
  std::string out = data;
  {
    pybind11::gil_scoped_release nogil;
    hcops::dist::Backend::init_mpi();
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    unsigned long long n = out.size();
    MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, root, comm);
    out.resize(n);
    if (n) MPI_Bcast(&out[0], static_cast<int>(n), MPI_CHAR, root, comm);
    MPI_Comm_free(&comm);
  }
  return pybind11::bytes(out);
}

}  // namespace

// The torch this module was built against, as a marker in its bytes (as
// libhcops_torch's): hcops.dist reads it before loading the module.
extern "C" __attribute__((used, visibility("hidden"))) const char hcops_torch_built_for[] =
    "hcops-torch-built-for:" HCOPS_TORCH_VERSION;

// MPI_Abort on every rank: hcops.dist calls it when a rank ends on an
// uncaught exception, so the others stop instead of waiting for it in a
// collective or in MPI_Finalize.
static void abort_job(int code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
}

PYBIND11_MODULE(_c10d, m) {
  m.doc() = "HCOps' torch.distributed backend on MPI (libhcops_mpi)";
  m.def("create", &create, pybind11::arg("store"), pybind11::arg("rank"), pybind11::arg("size"),
        pybind11::arg("global_ranks") = std::vector<uint64_t>{});
  m.def("abort", &abort_job, pybind11::arg("code") = 1);
  m.def("world", &world);
  m.def("broadcast_bytes", &broadcast_bytes, pybind11::arg("data"), pybind11::arg("root") = 0);
}
