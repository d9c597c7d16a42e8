#!/bin/sh
# Installs the Debian packages HCOps builds and tests against, so that a fresh
# Debian 12 machine needs only `make demo` / `make check`. As root it runs
# apt-get; otherwise it tries sudo without a password; failing both it prints
# the command for the user to run and stops.
set -eu
. "$(dirname "$0")/deps-common.sh"

# libblis4-openmp is only a benchmark peer (its libblas.so.3 alternative ranks
# below OpenBLAS's, so the system default is unchanged); so is libmemkind0
# (memkind's libmemtier.so interposer, for perf/mem_bench.py and mem_dit.py;
# nothing links it); python3-matplotlib only draws perf/gemm_sweep.py's plot.
# libtorch-dev: the headers libhcops_torch.so (the operators) builds against.
# python3-mpi4py: the libhcops_mpi tests (mpi4py under LD_PRELOAD) and
# perf/dit/ddp.py. hwloc (lstopo): the tests that write this machine's
# topology as XML (tests/abi/fp_env_xmls.sh, automem). python3-pytest, python3-scipy: numpy's and
# scipy's own linalg suites under the preloads (tests/external); scipy's complex
# SVD and lstsq (OpenBLAS over-reads) under libhcops_mem (test_mem_scipy.py).
# python3-hypothesis: PyTorch's own tests (tests/external/torch_suite.py; its
# test_nn.py imports it); their other import, expecttest, is not packaged by
# Debian 12 and the suite brings a stand-in for it. dpkg-dev is not needed:
# only the orig tarball of the source package is unpacked, by tar.
# lmod: tests/modules loads HCOps's modulefiles with it. Debian's
# environment-modules conflicts with lmod, so it is not installed: its .deb is
# downloaded into $HCOPS_DEB_CACHE (below) and tests/modules unpacks it into a
# throw-away folder and runs its modulecmd.tcl with tclsh (package tcl).
# ocl-icd-opencl-dev: oneDNN's benchdnn (tests/external/benchdnn.mk) is built
# against libdnnl-dev's headers, whose dnnl_config.h says Debian's libdnnl has
# the OpenCL GPU runtime: benchdnn then includes CL/cl.h and links -lOpenCL.
# (Its source comes with `apt-get source`, which unpacks with dpkg-dev's
# dpkg-source, there with build-essential.)
# python3-dev, pybind11-dev: the torch.distributed backend (shim/torch_dist, a
# Python extension) for Debian's torch (and Python.h for the torch 2.x venv's,
# should it be made from Debian's python3).
# libblas-test: netlib's own BLAS/CBLAS testers (tests/abi/test_netlib_testers.sh).
# iproute2: tests/torch2/test_dist_netns.sh's two network namespaces (ip, tc).
# llvm-19: llvm-mca and its core models for perf/kernel_mca.py, which
# tests/perf/test_kernel_mca.py runs on the build's kernels.
packages="build-essential autoconf automake libtool pkg-config binutils
libhwloc-dev libnuma-dev libopenblas-dev libopenblas0-pthread libblas3 libblas-test
libdnnl-dev libtorch-dev libcmocka-dev libopenmpi-dev openmpi-bin libblis4-openmp
libmemkind0 python3-torch python3-numpy python3-matplotlib python3-mpi4py python3-pytest
python3-scipy python3-hypothesis hwloc lmod tcl ocl-icd-opencl-dev python3-dev pybind11-dev iproute2 llvm-19"

# The packages downloaded, not installed (see above), into $deb_cache
# (deps-common.sh); tests/modules looks there.
debs="environment-modules"

missing= fetch=
for p in $debs; do
  deb_cached "$p" || fetch="$fetch $p"
done
# This machine's architecture (or all): after `make check-aarch64`, an arm64
# instance of a package (multiarch) is not the one the build needs.
arch=$(dpkg --print-architecture)
for p in $packages; do
  dpkg-query -W -f='${Status}\n' "$p:$arch" "$p:all" 2>/dev/null | grep -q 'install ok installed' ||
    missing="$missing $p"
done
[ -z "$missing$fetch" ] && exit 0

[ -z "$missing" ] || echo "hcops: missing Debian packages:$missing"
[ -z "$fetch" ] || echo "hcops: missing in $deb_cache (downloaded, not installed):$fetch"
as_root "${missing:+apt-get update && apt-get install -y$missing}" \
  "${fetch:+mkdir -p $deb_cache && cd $deb_cache && apt-get download$fetch}"
export DEBIAN_FRONTEND=noninteractive
$run apt-get update -q
# shellcheck disable=SC2086
[ -z "$missing" ] || $run apt-get install -y -q --no-install-recommends $missing
# shellcheck disable=SC2086
[ -z "$fetch" ] || fetch_debs $fetch
