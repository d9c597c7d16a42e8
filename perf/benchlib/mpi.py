"""The mpirun command line of the MPI benchmarks (Open MPI's mpirun, or $MPIRUN)."""
import os

MPIRUN = os.environ.get("MPIRUN", "mpirun")
BIND_HELP = "core: mpirun's default binding (a core per rank for 2 ranks); none: --bind-to none"
# What libhcops_mpi.so prints at exit under HCOPS_MPI_VERBOSE=1: proof that it was loaded.
STATS_PREFIX = "hcops_mpi:"


def add_options(ap, binds, default_bind):
    """--np and --bind, with binds the choices of --bind."""
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--bind", choices=binds, default=default_bind, help=BIND_HELP)


def mpirun(np, bind):
    """mpirun and its options up to the program: np ranks, bind "core" (mpirun's
    default) or "none"."""
    cmd = [MPIRUN, "-np", str(np)]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    # Ranks plus compute and progress threads exceed the 2 cores this is meant for.
    cmd.append("--oversubscribe")
    if bind == "none":
        cmd += ["--bind-to", "none"]
    return cmd
