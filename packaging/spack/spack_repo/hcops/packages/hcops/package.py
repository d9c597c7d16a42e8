# HCOps for Spack (1.x, package API v2). doc/user-guide.md, "Spack", says
# how to add this repository and build a checkout or a `make dist` tarball.
from spack_repo.builtin.build_systems.autotools import AutotoolsPackage

from spack.package import *


class Hcops(AutotoolsPackage):
    """HCOps: a drop-in BLAS/CBLAS and oneDNN C ABI whose GEMMs run on NUMA-
    and cache-tiled AVX-512/AMX/SVE/SME kernels (every other routine is
    forwarded to OpenBLAS and oneDNN), PyTorch operators and dispatcher
    GEMMs, huge-page and fast-tier memory placement, and asynchronous MPI
    allreduce, for deep-learning training on HPC CPUs."""

    # No release is published yet: `spack develop` a checkout (or add a
    # mirror holding `make dist`'s tarball and its checksum to a version).
    homepage = "https://hcops.invalid/"

    version("0.1.0")

    # Out of the source tree: a `spack develop` checkout keeps its own
    # Makefile (the top-level one that drives build/) and stays unconfigured.
    build_directory = "spack-build"
    # HCOps' `make check` needs Debian's packages and the network (it sets up
    # a PyTorch venv): `spack install --test=root` runs check_installed below.
    build_time_test_callbacks = []

    variant("mpi", default=True, description="libhcops_mpi (allreduce on progress cores) and, with +torch, "
            "the torch.distributed backend")
    variant("dnnl", default=True, description="the oneDNN C ABI in libhcops.so and the lib/hcops/libdnnl.so.2 "
            "copy, forwarding to oneDNN 2.x")
    variant("torch", default=False, description="libhcops_torch2.so: operators and dispatcher GEMMs for the "
            "py-torch 2.x of this Spack (built with the C++11 ABI)")

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("pkgconfig", type="build")
    # A checkout has no configure: Spack's autoreconf phase makes it (the
    # `make dist` tarball has one).
    depends_on("autoconf", type="build")
    depends_on("automake", type="build")
    depends_on("libtool", type="build")

    depends_on("hwloc@2.3:")
    depends_on("numactl")
    # What HCOps forwards the BLAS routines it does not compute to, and
    # netlib's reference BLAS (its symbols are the ABI HCOps exports).
    depends_on("openblas")
    depends_on("netlib-lapack")
    depends_on("mpi", when="+mpi")
    depends_on("onednn@2", when="+dnnl")
    # hcops-prof and hcops-run's start-up hook are Python; configure needs one.
    depends_on("python@3.7:", type=("build", "run"))
    depends_on("py-torch@2.7:", type=("build", "link", "run"), when="+torch")

    # x86_64 (AVX-512, AVX512_BF16, AMX) and aarch64 (NEON, SVE, SME) only.
    requires("target=x86_64:", "target=aarch64:", policy="one_of", msg="HCOps targets x86_64 and aarch64")
    # The amx kernels need GCC >= 11's intrinsics (configure leaves them out
    # otherwise, saying so).
    conflicts("%gcc@:8", msg="HCOps is C++17 with AVX-512 intrinsics: GCC 9 or newer")

    def configure_args(self):
        spec = self.spec
        args = [
            f"--with-underlying-blas={spec['openblas'].libs[0]}",
            f"--with-netlib-blas={find_libraries('libblas', spec['netlib-lapack'].prefix, shared=True, recursive=True)[0]}",
            # Debian's torch 1.13 layer (libhcops_torch.so) is not Spack's.
            "--without-torch",
        ]
        args.append(f"--with-mpi={spec['mpi'].mpicc}" if spec.satisfies("+mpi") else "--without-mpi")
        if spec.satisfies("+dnnl"):
            dnnl = find_libraries("libdnnl", spec["onednn"].prefix, shared=True, recursive=True)[0]
            args += ["--with-dnnl", f"--with-underlying-dnnl={dnnl}"]
        else:
            args.append("--without-dnnl")
        args.append(f"PYTHON={spec['python'].command.path}")
        if spec.satisfies("+torch"):
            args.append(f"--with-torch-python={spec['python'].command.path}")
        return args

    def setup_run_environment(self, env):
        # As HCOps' own modulefile: the libblas.so.3 and libdnnl.so.2 copies
        # ahead of the system's, the Python package on PYTHONPATH.
        env.prepend_path("LD_LIBRARY_PATH", self.prefix.lib)
        env.prepend_path("LD_LIBRARY_PATH", self.prefix.lib.hcops)
        env.prepend_path("PYTHONPATH", join_path(self.prefix.share, "hcops", "python"))
        env.set("HCOPS_ROOT", self.prefix)

    @run_after("install")
    @on_package_attributes(run_tests=True)
    def check_installed(self):
        Executable(join_path(self.prefix.bin, "hcops-info"))()
        Executable(join_path(self.prefix.bin, "hcops-run"))("--dry-run", "true")
