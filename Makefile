# Entry point. `make demo` and `make check` install missing Debian packages,
# configure an out-of-tree autotools build in $(BUILD) and run. Everything
# else (install, dist) is the ordinary automake target run inside $(BUILD).
BUILD    ?= build
PREFIX   ?= /usr/local
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
# Tests `make check` runs at once. Most are a Python process importing
# PyTorch, compiling or configuring, often on one core: two at a time keep a
# 2-core machine busy (34 -> 30 min of tests on a 2-core guest). At most 4:
# each may take 2 threads and a few GB. The tests that run make in the build
# tree take a lock in turn (tests/tree_lock.sh). CHECK_JOBS=1: one by one.
CHECK_JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ "$$n" -gt 4 ] && n=4; echo $$n)
CONFIGURE_FLAGS ?=

AUTOTOOLS_INPUTS := configure.ac Makefile.am $(wildcard */Makefile.am)

.PHONY: all deps deps-aarch64 demo check check-external check-aarch64 install uninstall clean distclean wheel

all: $(BUILD)/Makefile
	$(MAKE) -C $(BUILD) -j$(JOBS)

deps:
	@sh build-aux/install-deps.sh

configure: $(AUTOTOOLS_INPUTS) | deps
	autoreconf -fi

# Once configured, automake's own rules regenerate after Makefile.am edits.
# A configure regenerated here re-checks an existing build with the options
# it was configured with (config.status --recheck): a PREFIX given to `make
# install` must not reconfigure the build (see install below).
#
# The first configure also sets up the PyTorch 2.x environment that
# libhcops_torch2.so builds and is tested against (build-aux/torch2-venv.sh:
# a venv in $(TORCH2_VENV) with the index's torch wheel, ~3.5 GB downloaded
# once into pip's cache, ~5 GB installed). Where the index cannot be reached
# it says so in one line and the build goes on without the 2.x library (its
# tests skip). TORCH2=no skips it; TORCH2_PYTHON=PATH uses an existing
# environment's python instead.
TORCH2        ?= yes
TORCH2_VENV   ?= $(BUILD)/torch2-venv
TORCH2_PYTHON ?=
$(BUILD)/Makefile: configure
	mkdir -p $(BUILD)
	if [ -f $(BUILD)/config.status ]; then \
	  cd $(BUILD) && ./config.status --recheck && ./config.status; \
	else \
	  t2='$(if $(findstring /,$(TORCH2_PYTHON)),$(abspath $(TORCH2_PYTHON)),$(TORCH2_PYTHON))'; \
	  if [ -z "$$t2" ] && [ '$(TORCH2)' = yes ]; then \
	    t2=$$(sh build-aux/torch2-venv.sh '$(abspath $(TORCH2_VENV))') || t2=; \
	  fi; \
	  cd $(BUILD) && ../configure --prefix=$(PREFIX) $${t2:+--with-torch-python=$$t2} $(CONFIGURE_FLAGS); \
	fi

demo: deps $(BUILD)/Makefile
	$(MAKE) -C $(BUILD) -j$(JOBS)
	$(MAKE) -C $(BUILD) demo

# A wheel for the torch 2.x venv the build is configured for, in
# $(BUILD)/wheels (README.md, "pip"); `pip install --no-build-isolation .`
# in a venv builds one for that venv's torch.
wheel: deps $(BUILD)/Makefile
	$(MAKE) -C $(BUILD) -j$(JOBS)
	$(MAKE) -C $(BUILD) wheel

check: deps $(BUILD)/Makefile
	$(MAKE) -C $(BUILD) -j$(JOBS)
	$(MAKE) -C $(BUILD) -j$(CHECK_JOBS) check || { cat $(BUILD)/tests/test-suite.log; exit 1; }
	@awk '/^# PASS:/ {p = $$3} /^# SKIP:/ {s = $$3} /^# (FAIL|ERROR|XPASS):/ {f += $$3} \
	  END {printf "check: %d passed, %d failed, %d skipped\n", p, f, s}' $(BUILD)/tests/test-suite.log

# numpy's and scipy's own linalg suites under the preloads, PyTorch's own
# tests of the operators and GEMMs HCOps replaces, from Debian's source package
# (fetched once into $(BUILD)/tests, ~18 MB), under every route (hcops-run,
# LD_PRELOAD, the installed lib/hcops copies) and every kernel family this CPU
# runs, and oneDNN's benchdnn matmul and ip batches in full (tests/external).
# make check runs a quick selection of PyTorch's and of benchdnn's.
check-external: deps $(BUILD)/Makefile
	$(MAKE) -C $(BUILD) -j$(JOBS)
	$(MAKE) -C $(BUILD)/tests check-external || { cat $(BUILD)/tests/test-suite.log; exit 1; }

# The AArch64 build, cross-compiled into $(BUILD_AARCH64) and tested under
# QEMU's user-mode emulator on this x86-64 machine (build-aux/install-deps-
# aarch64.sh installs the cross compiler, QEMU and Debian's arm64 libraries,
# and registers QEMU with binfmt_misc): the C test suites, the netlib
# BLAS/CBLAS testers and the scripts around them, on every kernel family
# the emulated CPU runs, and the oneDNN layer against Debian's arm64
# libdnnl 2.6 (its headers unpacked from libdnnl-dev's arm64 .deb into
# $(AARCH64_DNNL_DEV): multiarch cannot install them beside the amd64 ones,
# their dnnl_config.h differ). With AARCH64_PYTHON=yes (the default) the
# PyTorch layers too: libhcops_torch2.so cross-built against PyTorch 2.x's
# aarch64 wheel (installed into $(BUILD_AARCH64)/torch2-aarch64), whose
# python is Debian's arm64 python3 in the root of the Python suites
# (below) with that folder first on its path ($(BUILD_AARCH64)/python3-
# torch2), and libhcops_torch.so against Debian's arm64 PyTorch 1.13 in
# that root (libtorch-dev's arm64 headers unpacked into
# $(BUILD_AARCH64)/torch-dev): build-aux/aarch64-torch-layers.sh. Open MPI, which Debian
# has no cross-installable arm64 development files for, is configured out,
# and configured_out.sh says so. Not part of `make check` (CI).
BUILD_AARCH64 ?= build-aarch64
AARCH64_DNNL_DEV = $(abspath $(BUILD_AARCH64))/dnnl-dev
AARCH64_CONFIGURE = --host=aarch64-linux-gnu --with-dnnl --without-mpi \
	HWLOC_CFLAGS=' ' HWLOC_LIBS=-lhwloc CMOCKA_CFLAGS=' ' CMOCKA_LIBS=-lcmocka \
	CPPFLAGS='-I$(AARCH64_DNNL_DEV)/usr/include' \
	LDFLAGS='-L$(AARCH64_DNNL_DEV)/usr/lib/aarch64-linux-gnu -Wl,-rpath-link,$(abspath $(AARCH64_ROOT))/usr/lib/aarch64-linux-gnu:$(abspath $(AARCH64_ROOT))/usr/lib'
deps-aarch64:
	@sh build-aux/install-deps-aarch64.sh
$(BUILD_AARCH64)/Makefile: configure | deps-aarch64
	mkdir -p $(BUILD_AARCH64)
	# The headers, and libdnnl.so for -ldnnl naming the arm64 runtime (the
	# package's own link is relative, to a library it does not hold).
	rm -rf '$(AARCH64_DNNL_DEV)'
	v=$$(dpkg-query -W -f='$${Version}' libdnnl2:arm64) && \
	  dpkg-deb -x "$${HCOPS_DEB_CACHE:-/var/cache/hcops}/libdnnl-dev_$${v}_arm64.deb" '$(AARCH64_DNNL_DEV)'
	ln -sf /usr/lib/aarch64-linux-gnu/libdnnl.so.2 '$(AARCH64_DNNL_DEV)/usr/lib/aarch64-linux-gnu/libdnnl.so'
	# With the Python suites, the PyTorch layers, for Debian's PyTorch 1.13
	# and PyTorch 2.x's aarch64 wheel, each where it can be had
	# (build-aux/aarch64-torch-layers.sh makes the arm64 root, unpacks
	# libtorch-dev's headers, installs the wheel, writes the pythons that
	# run them, and gives configure its arguments; it says what it leaves out).
	torch=--without-torch; \
	if [ '$(AARCH64_PYTHON)' = yes ]; then \
	  torch=$$(sh build-aux/aarch64-torch-layers.sh '$(BUILD_AARCH64)' '$(AARCH64_ROOT)' '$(AARCH64_ROOT_BINDS)') || exit 1; \
	fi; \
	cd $(BUILD_AARCH64) && QEMU_CPU=max ../configure $(AARCH64_CONFIGURE) $$torch $(CONFIGURE_FLAGS)
# The whole suite runs on QEMU's "max" CPU (SVE at 512 bits, SME's
# streaming vectors at 256), the torch 2.x suites with it (through
# $(BUILD_AARCH64)/python3-torch2), DiT training on every family for DiT-tiny and
# DiT-S/2 at batch 1 ($(AARCH64_DIT_MODELS)), 2 steps each; then the GEMM suites of the vector-length
# agnostic families (sme, sve_bf16, sve) and the operators (built once per
# SVE length) at the other lengths, in bytes SVE:SME: 128:128, 256:512,
# 1024:1024, 2048:2048 bits.
#
# Several hours on 2 cores: `make check-aarch64 RESUME=yes` continues an
# interrupted run (stages that passed are not rerun; in an interrupted
# whole-suite stage neither are the tests that passed; a later stage runs
# again whole), provided what is tested is unchanged: the source tree, the
# build, the parameters and QEMU, the root and the wheel (an identity of
# them is recorded); otherwise it says so and starts over
# (build-aux/check-aarch64.sh). Each stage reports its time.
AARCH64_DIT_MODELS = tiny S:1
AARCH64_VECTOR_LENGTHS = 16:16 32:64 128:128 256:256
# With the torch 2.x wheel, DiT training on those families against stock
# (torch2/test_dit_families.sh; it skips without the wheel).
AARCH64_VL_TESTS = engine/test_gemm_isa.sh engine/test_gemm_bf16.sh engine/test_gemm_epilogue.sh test_gemm_sme \
	abi/test_netlib_testers.sh ops/test_ops_isa.sh ops/test_ops_eltwise.sh torch2/test_dit_families.sh
# Then the Python suites that preload the cross-built libraries into numpy,
# scipy and PyTorch (tests/integration), with Debian's arm64 python3,
# numpy, scipy and PyTorch 1.13 run by QEMU: multiarch cannot install an
# arm64 python3 beside the amd64 one, so they live in a Debian root of
# their own, made once by debootstrap in $(AARCH64_ROOT) (335 MB fetched,
# 1.9 GB installed; build-aux/aarch64-root.sh), and entered as root with the
# source and build trees bind-mounted in place (build-aux/in-aarch64-root.sh).
# torch's bmm reaches HCOps' oneDNN layer there. With libhcops_torch.so
# cross-built for that PyTorch 1.13, its suites too: the operators against
# PyTorch's, the edge semantics, the fused Adam, hcops-run's start-up hook
# and DiT training under hcops-run against PyTorch's own operators. (The
# torch 2.x suites ran in the whole suite above, through
# $(BUILD_AARCH64)/python3-torch2, which enters the same root.) AARCH64_PYTHON=no
# skips this part, and the PyTorch layers.
AARCH64_PYTHON ?= yes
AARCH64_ROOT   ?= $(BUILD_AARCH64)/debian-arm64
AARCH64_ROOT_BINDS = $(CURDIR):$(abspath $(BUILD_AARCH64))
AARCH64_PYTHON_TESTS = integration/test_numpy.py integration/test_numpy_fp_env.py integration/test_lapack_xerbla.py \
	integration/test_mem_python.py integration/test_mem_scipy.py integration/test_torch.py integration/test_torch_mem.py
AARCH64_TORCH_TESTS = torch/test_torch_ops.py torch/test_edge_semantics.py torch/test_adam.sh \
	torch/test_hcops_run_hook.py torch/test_dit_ops.py
check-aarch64: deps-aarch64 $(BUILD_AARCH64)/Makefile
	$(MAKE) -C $(BUILD_AARCH64) -j$(JOBS)
	# The test programs too, in parallel, before the stages (TESTS= runs none).
	$(MAKE) -C $(BUILD_AARCH64) -j$(JOBS) check TESTS=
	BUILD_AARCH64='$(abspath $(BUILD_AARCH64))' SRCDIR='$(CURDIR)' RESUME='$(RESUME)' MAKE='$(MAKE)' \
	  AARCH64_DIT_MODELS='$(AARCH64_DIT_MODELS)' AARCH64_VECTOR_LENGTHS='$(AARCH64_VECTOR_LENGTHS)' \
	  AARCH64_VL_TESTS='$(AARCH64_VL_TESTS)' AARCH64_PYTHON='$(AARCH64_PYTHON)' \
	  AARCH64_ROOT='$(abspath $(AARCH64_ROOT))' AARCH64_ROOT_BINDS='$(AARCH64_ROOT_BINDS)' \
	  AARCH64_PYTHON_TESTS='$(AARCH64_PYTHON_TESTS)' AARCH64_TORCH_TESTS='$(AARCH64_TORCH_TESTS)' \
	  sh build-aux/check-aarch64.sh

# `make install PREFIX=X` installs into X whatever prefix the build was
# configured with (and `make uninstall PREFIX=X` removes from X): PREFIX,
# when given, reaches the build as prefix=X, from which automake derives
# every installation directory, and every installed file that names a
# directory (hcops-run, hcops-prof, hcops-info's RUNPATH, the modulefiles,
# hcops.pc, the libtool .la files, hcops.torch's _paths.py) is written at
# install time from those directories rather than copied from the build.
# Substituting at install time, rather than reconfiguring for X, rebuilds
# nothing, leaves the build and its tests as they were, and lets one build
# be installed into several prefixes and staged with DESTDIR. Without
# PREFIX: the prefix the build was configured with.
INSTALL_PREFIX := $(if $(filter-out undefined default file,$(origin PREFIX)),prefix=$(PREFIX))
install uninstall: $(BUILD)/Makefile
	$(MAKE) -C $(BUILD) $@ $(INSTALL_PREFIX)

clean:
	[ ! -f $(BUILD)/Makefile ] || $(MAKE) -C $(BUILD) clean

distclean:
	rm -rf $(BUILD) autom4te.cache configure config.h.in aclocal.m4 \
	  $(patsubst %.am,%.in,$(filter %.am,$(AUTOTOOLS_INPUTS))) \
	  build-aux/ar-lib build-aux/compile build-aux/config.guess build-aux/config.sub \
	  build-aux/depcomp build-aux/install-sh build-aux/ltmain.sh build-aux/missing \
	  build-aux/test-driver m4/libtool.m4 m4/lt*.m4
