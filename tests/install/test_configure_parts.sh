#!/bin/sh
# configure's optional parts (README, "What configure needs"): each is built
# when what it needs is found and left out otherwise, with the reason in
# configure's summary; --with-X insists, --without-X leaves it out. Run in
# scratch directories (configure only, a few seconds each), with missing
# dependencies stood in for by autoconf cache variables and by a python3
# that sees no site packages:
# - --without-dnnl --without-mpi --without-torch: the BLAS-only build a
#   cluster admin makes. No oneDNN layer in libhcops, no libhcops_mpi, no
#   operators, no hcops-dnnl-replay; tests/Makefile runs no mpi/ dnnl/ or
#   torch tests and does run configured_out.sh. Under make check-external
#   (HCOPS_CHECK_EXTERNAL=1) also built and installed: a -lblas program's
#   sgemm_ runs in it. That is a whole build of the engine (2-5 min on 2
#   cores beside the other tests), which make check leaves out, saying so.
# - the same parts found missing: configure goes on, naming each missing
#   package; without a python that imports torch the Python tests go too.
# - --with-dnnl and --with-mpi where they are missing: configure stops.
# - no CMocka: configure goes on; a test program including cmocka.h then
#   stops at tests/no_cmocka/cmocka.h, naming the package.
set -u
status=0
fail() { echo "FAIL: $*"; status=1; }

top_srcdir=$HCOPS_TEST_TOP_SRCDIR
# configure refuses a second, out-of-tree build of a tree configured in place.
[ ! -f "$top_srcdir/config.status" ] || { echo "SKIP: $top_srcdir is configured in place"; exit 77; }
scratch=$(mktemp -d "${TMPDIR:-/tmp}/hcops-parts.XXXXXX") || exit 1
trap 'rm -rf "$scratch"' EXIT

# The make running this test passes its command-line variables (TESTS=...)
# and jobserver down through MAKEFLAGS: the scratch builds are not its.
unset MAKEFLAGS MFLAGS MAKELEVEL
# A variable of a Makefile configure wrote, as make expands it.
var() {  # dir, variable
  printf 'print-var:\n\t@echo %s\n' "'\$($2)'" > "$scratch/print.mk"
  make -s --no-print-directory -C "$1" -f Makefile -f "$scratch/print.mk" print-var 2>/dev/null
}
has() { case " $1 " in *" $2 "*) return 0 ;; *) return 1 ;; esac; }
configure_in() {  # dir, configure arguments...
  d=$scratch/$1; shift
  mkdir -p "$d" && (cd "$d" && "$top_srcdir/configure" "$@" > configure.out 2>&1)
}

echo "== --without-dnnl --without-mpi --without-torch"
if ! configure_in minimal --without-dnnl --without-mpi --without-torch; then
  fail "configure --without-dnnl --without-mpi --without-torch"; tail -20 "$scratch/minimal/configure.out"
else
  d=$scratch/minimal
  for line in "its oneDNN C ABI: *no" "libhcops_mpi.so: *no" "libhcops_torch.so: *no" \
      "the oneDNN C ABI: --without-dnnl" "libhcops_mpi and the torch.distributed backend: --without-mpi" \
      "libhcops_torch.so: --without-torch"; do
    grep -q "^  $line\$" "$d/configure.out" || fail "the summary has no line '$line'"
  done
  libadd=$(var "$d/shim" libhcops_la_LIBADD)
  has "$libadd" libhcops_shim.la || fail "libhcops.so is not linked from libhcops_shim ($libadd)"
  ! has "$libadd" libhcops_dnnl.la || fail "libhcops.so links the oneDNN layer --without-dnnl"
  pkglib=$(var "$d/shim" pkglib_LTLIBRARIES)
  has "$pkglib" libblas.la || fail "no lib/hcops/libblas.so.3 ($pkglib)"
  ! has "$pkglib" libdnnl.la || fail "lib/hcops/libdnnl.so.2 --without-dnnl"
  subdirs=$(var "$d/shim" SUBDIRS)
  ! has "$subdirs" mpi || fail "shim/mpi is built --without-mpi ($subdirs)"
  ! has "$subdirs" torch_dist || fail "shim/torch_dist is built --without-mpi ($subdirs)"
  ! has "$(var "$d/src" noinst_LTLIBRARIES)" libhcops_progress.la || fail "src/mpi is built --without-mpi"
  ! has "$(var "$d/shim/torch" lib_LTLIBRARIES)" libhcops_torch.la || fail "libhcops_torch is built --without-torch"
  tools=$(var "$d/tools" pkglibexec_PROGRAMS)
  has "$tools" hcops-replay || fail "hcops-replay is not built ($tools)"
  ! has "$tools" hcops-dnnl-replay || fail "hcops-dnnl-replay is built --without-dnnl"
  tests=$(var "$d/tests" TESTS)
  has "$tests" configured_out.sh || fail "configured_out.sh is not run"
  has "$tests" abi/test_symbols.sh || fail "the BLAS tests are not run ($tests)"
  for t in $tests; do
    case $t in mpi/* | dnnl/* | torch/test_dist_torch1.sh | torch2/test_dist*.sh | torch/test_dnnl_torch.py | \
        perf/test_op_peers.sh | install/test_one_engine.sh | prof/* | automem/test_automem_run.py | \
        external/test_torch_suite.py)
      fail "$t is run although its part was left out" ;;
    esac
  done
  # configured_out.sh skips, naming every part left out.
  out=$(HCOPS_PARTS_OUT=$(var "$d/tests" HCOPS_PARTS_OUT) sh "$top_srcdir/tests/configured_out.sh"); rc=$?
  [ $rc = 77 ] || fail "configured_out.sh exited $rc, not 77 (skip)"
  for part in "the oneDNN C ABI" "libhcops_mpi" "libhcops_torch.so"; do
    echo "$out" | grep -q "^  $part" || fail "configured_out.sh does not name $part: $out"
  done
  # Built and installed (make check-external): the BLAS and CBLAS ABI
  # without the oneDNN one, computing GEMMs; nothing of the parts left out
  # installed.
  if [ "${HCOPS_CHECK_EXTERNAL:-0}" != 1 ]; then
    echo "SKIP (this part only): the BLAS-only build and install, a whole build of HCOps (make check-external runs it; HCOPS_CHECK_EXTERNAL=1 here)"
  elif ! make -s -C "$d" -j2 > "$d/make.out" 2>&1; then
    fail "the BLAS-only build"; tail -20 "$d/make.out"
  elif ! make -s -C "$d" install prefix="$scratch/opt" > "$d/install.out" 2>&1; then
    fail "make install of the BLAS-only build"; tail -20 "$d/install.out"
  else
    lib=$scratch/opt/lib/libhcops.so.0
    nm -D --defined-only "$lib" | grep -q ' sgemm_$' || fail "the BLAS-only libhcops.so.0 has no sgemm_"
    nm -D --defined-only "$lib" | grep -q ' cblas_dgemm$' || fail "the BLAS-only libhcops.so.0 has no cblas_dgemm"
    ! nm -D --defined-only "$lib" | grep -q ' dnnl_' || fail "the BLAS-only libhcops.so.0 exports dnnl_ symbols"
    [ -e "$scratch/opt/lib/hcops/libblas.so.3" ] || fail "no lib/hcops/libblas.so.3 installed"
    for f in lib/hcops/libdnnl.so.2 lib/libhcops_mpi.so lib/libhcops_torch.so include/hcops_mpi.h libexec/hcops/hcops-dnnl-replay; do
      [ ! -e "$scratch/opt/$f" ] || fail "$f installed by the BLAS-only build"
    done
    HCOPS_VERBOSE=1 "$scratch/opt/bin/hcops-info" > "$d/info.out" 2>&1 || { fail "the installed hcops-info"; cat "$d/info.out"; }
    # A GEMM through the installed BLAS copy, by a program linked -lblas.
    printf '%s\n' '#include <stdio.h>' \
      'void sgemm_(const char *, const char *, const int *, const int *, const int *, const float *,' \
      '  const float *, const int *, const float *, const int *, const float *, float *, const int *);' \
      'int main(void) { float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, c[4] = {0}, one = 1, zero = 0; int n = 2;' \
      '  sgemm_("N", "N", &n, &n, &n, &one, a, &n, b, &n, &zero, c, &n);' \
      '  printf("%g %g %g %g\n", c[0], c[1], c[2], c[3]); return 0; }' > "$scratch/gemm.c"
    if ${CC:-cc} -o "$scratch/gemm" "$scratch/gemm.c" -L"$scratch/opt/lib/hcops" -lblas \
        -Wl,-rpath,"$scratch/opt/lib/hcops" 2> "$scratch/gemm.err"; then
      # column-major: C = A B = [1 3; 2 4] [5 7; 6 8] = [23 31; 34 46]
      got=$(HCOPS_VERBOSE=1 "$scratch/gemm" 2> "$scratch/gemm.verbose")
      [ "$got" = "23 34 31 46" ] || fail "sgemm_ through the BLAS-only lib/hcops/libblas.so.3 gave '$got'"
      grep -q '^hcops_verbose,exec,sgemm_,' "$scratch/gemm.verbose" || { fail "that sgemm_ did not run in HCOps"; cat "$scratch/gemm.verbose"; }
    else
      fail "a -lblas program does not link against the BLAS-only copy"; cat "$scratch/gemm.err"
    fi
  fi
fi

echo "== oneDNN, MPI and PyTorch missing, found so"
# Debian's python3 without its site packages: no torch, no numpy.
printf '#!/bin/sh\nexec %s -S "$@"\n' "$(command -v python3)" > "$scratch/python3-bare"
chmod +x "$scratch/python3-bare"
if ! configure_in missing ac_cv_header_oneapi_dnnl_dnnl_h=no ac_cv_path_MPICC_PATH=no \
    PYTHON="$scratch/python3-bare"; then
  fail "configure with oneDNN, MPI and torch missing stopped"; tail -20 "$scratch/missing/configure.out"
else
  d=$scratch/missing
  for line in "the oneDNN C ABI: oneapi/dnnl/dnnl.h not found (Debian: libdnnl-dev)" \
      "libhcops_mpi and the torch.distributed backend: no MPI compiler wrapper mpicc (Debian: libopenmpi-dev openmpi-bin)" \
      "libhcops_torch.so: $scratch/python3-bare imports no torch (Debian: python3-torch)"; do
    grep -qF "  $line" "$d/configure.out" || fail "configure did not say '$line'"
  done
  grep -q "^  the Python tests .*imports no torch and numpy" "$d/configure.out" || fail "configure did not say the Python tests are left out"
  tests=$(var "$d/tests" TESTS)
  for t in $tests; do
    case $t in integration/* | automem/* | external/* | prof/* | torch/*.py | mpi/* | dnnl/*)
      fail "$t is run although what it needs is missing" ;;
    esac
  done
  has "$tests" engine/test_gemm_isa.sh || fail "the engine tests are not run ($tests)"
fi

echo "== --with-dnnl, --with-mpi where they are missing"
if configure_in insist-dnnl --with-dnnl ac_cv_header_oneapi_dnnl_dnnl_h=no --without-mpi --without-torch; then
  fail "configure --with-dnnl went on without oneapi/dnnl/dnnl.h"
else
  grep -q "error: --with-dnnl: oneapi/dnnl/dnnl.h not found" "$scratch/insist-dnnl/configure.out" ||
    { fail "configure --with-dnnl stopped without the reason"; tail -3 "$scratch/insist-dnnl/configure.out"; }
fi
if configure_in insist-mpi --with-mpi=hcops-no-such-mpicc --without-dnnl --without-torch; then
  fail "configure --with-mpi=hcops-no-such-mpicc went on"
else
  grep -q "error: --with-mpi: no MPI compiler wrapper hcops-no-such-mpicc" "$scratch/insist-mpi/configure.out" ||
    { fail "configure --with-mpi stopped without the reason"; tail -3 "$scratch/insist-mpi/configure.out"; }
fi

echo "== no CMocka"
# pkg-config unavailable (hwloc's flags given), so CMocka is not found.
if ! configure_in no-cmocka PKG_CONFIG=/bin/false HWLOC_CFLAGS=-I/usr/include HWLOC_LIBS=-lhwloc \
    --without-dnnl --without-mpi --without-torch; then
  fail "configure without CMocka stopped"; tail -20 "$scratch/no-cmocka/configure.out"
else
  d=$scratch/no-cmocka
  grep -q "make check needs CMocka (Debian: libcmocka-dev)" "$d/configure.out" || fail "configure did not say make check needs CMocka"
  cflags=$(var "$d/tests" CMOCKA_CFLAGS)
  printf '#include <cmocka.h>\nint main(void) { return 0; }\n' > "$scratch/uses_cmocka.c"
  if ${CC:-cc} $cflags -c -o "$scratch/uses_cmocka.o" "$scratch/uses_cmocka.c" 2> "$scratch/cc.err"; then
    fail "a test program including cmocka.h compiled without CMocka ($cflags)"
  else
    grep -q "install the Debian package libcmocka-dev" "$scratch/cc.err" || { fail "the compiler error does not name libcmocka-dev"; cat "$scratch/cc.err"; }
  fi
fi

[ $status = 0 ] && echo "PASS: configure's optional parts"
exit $status
