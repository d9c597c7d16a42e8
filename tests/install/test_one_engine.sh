#!/bin/sh
# lib/hcops/libblas.so.3 and lib/hcops/libdnnl.so.2 (what `module load hcops`
# puts first on LD_LIBRARY_PATH) are thin libraries over the one
# lib/libhcops.so.0 (shim/Makefile.am): a Python process that loads numpy's
# BLAS and PyTorch's oneDNN through them has one HCOps engine. Installed
# with `make install prefix=` into a throw-away prefix, then:
# - each copy: its SONAME, an ELF filter of libhcops.so.0 found through
#   $ORIGIN/.., no engine of its own, libhcops's exports (libblas.so.3: less
#   the oneDNN layer), tests/abi's check of the BLAS/CBLAS ABI;
# - programs linked -lblas and -ldnnl reaching the copies through symlinks
#   in another folder (as the system's libblas.so.3 alternative does) find
#   libhcops.so.0 by the installed libdir and run in HCOps;
# - one_engine.py under LD_LIBRARY_PATH=<prefix>/lib/hcops, HCOPS_VERBOSE=1:
#   numpy's GEMM and torch's bf16 Linear both ran in HCOps; one mapped file
#   holds the engine, libhcops.so.0; the HCOps entry points reached through
#   libblas.so.3 and through libdnnl.so.2 are libhcops.so.0's; that engine
#   made one workspace for both libraries' GEMMs; the forwarded routines go
#   to the real OpenBLAS and libdnnl, not back into the copies; no error;
# - the same with LD_PRELOAD=<prefix>/lib/libhcops.so too: still one engine;
# - every hcops-run route: <prefix>/bin/hcops-run with Debian's python (BLAS
#   through the preloaded libhcops.so, the dispatcher through
#   libhcops_torch.so) and with the PyTorch 2.x venv's (libhcops_torch2.so),
#   and the venv's python importing hcops.torch without hcops-run (the
#   torch layer brings libhcops.so.0 through its RUNPATH $ORIGIN): the
#   dispatcher's f32 and bf16 mm ran in HCOps, the torch layer loaded is the
#   installed one and holds no engine, libhcops.so.0 is the one engine and
#   has one workspace for every route's GEMMs;
# - libhcops.so.0 exports that engine interface (C++, hcops:: only, none of
#   the oneDNN layer's own), the copies do not.
set -u
. "${srcdir:-../../tests}/tree_lock.sh"  # tree_make: make in the build tree, in turn
status=0
fail() { echo "FAIL: $*"; status=1; }

top_builddir=$HCOPS_TEST_TOP_BUILDDIR
scratch=$(mktemp -d "${TMPDIR:-/tmp}/hcops-thin.XXXXXX") || exit 1
prefix=$scratch/p
tree_make -s -C "$top_builddir" install prefix="$prefix" > "$scratch/install.log" 2>&1 ||
  { echo "FAIL: make install"; tail -30 "$scratch/install.log"; exit 1; }
lib=$prefix/lib
dir=$lib/hcops

echo "== the copies in $dir"
ls -l "$dir" "$lib"/libhcops.so*
for copy in libblas.so.3 libdnnl.so.2; do
  f=$dir/$copy
  readelf -d "$f" > "$scratch/$copy.dynamic"
  grep -q "Library soname: \[$copy\]" "$scratch/$copy.dynamic" || fail "$copy: SONAME"
  grep -q "Filter library: \[libhcops.so.0\]" "$scratch/$copy.dynamic" || fail "$copy: not a filter of libhcops.so.0"
  grep -q 'R.*PATH.*\$ORIGIN/\.\.' "$scratch/$copy.dynamic" || fail "$copy: no \$ORIGIN/.. to find libhcops.so.0"
  grep -aq 'fp32 math (HCOPS_FP32_MATH' "$(readlink -f "$f")" && fail "$copy holds an engine of its own"
done
grep -q "NEEDED.*\[libhcops_dnnl_real.so\]" "$scratch/libdnnl.so.2.dynamic" ||
  fail "libdnnl.so.2 does not bring in the real libdnnl (its dnnl::impl symbols)"
# The C ABI: what the copies must export too. The C++ engine interface of
# HCOps's own torch layers (src/common/api.h) is libhcops.so.0's alone.
exports() { nm -D --defined-only "$1" | awk 'NF >= 3 { print $NF }' | grep -v '^_Z' | sort; }
cxx_exports() { nm -D --defined-only "$1" | awk 'NF >= 3 && $NF ~ /^_Z/ { print $NF }' | sort; }
cxx_exports "$lib/libhcops.so.0" | c++filt > "$scratch/engine.exports"
n=$(wc -l < "$scratch/engine.exports")
[ "$n" -ge 20 ] || fail "libhcops.so.0 exports $n C++ symbols: no engine interface"
grep -q '^hcops::GemmReport hcops::gemm<' "$scratch/engine.exports" || fail "libhcops.so.0 does not export gemm<Ty>"
grep -q '^hcops::ops::attention_forward' "$scratch/engine.exports" || fail "libhcops.so.0 does not export the operators"
grep -v '^hcops::' "$scratch/engine.exports" | grep -v '^hcops::GemmReport hcops::gemm<' | grep . &&
  fail "libhcops.so.0 exports C++ outside namespace hcops"
grep -E '^hcops::(dnnl|cblas|blas)::|gemm_batched' "$scratch/engine.exports" && fail "libhcops.so.0 exports the ABI layers' own C++"
echo "  engine interface: $n C++ symbols"
for copy in libblas.so.3 libdnnl.so.2; do
  [ -z "$(cxx_exports "$dir/$copy")" ] || fail "$copy exports C++ symbols"
done
exports "$lib/libhcops.so.0" > "$scratch/libhcops.exports"
exports "$dir/libdnnl.so.2" | diff "$scratch/libhcops.exports" - > /dev/null || fail "libdnnl.so.2 does not export what libhcops.so.0 does"
exports "$dir/libblas.so.3" > "$scratch/libblas.exports"
grep -Ev '^(dnnl_|hcops_(underlying|reference)_dnnl$)' "$scratch/libhcops.exports" | diff - "$scratch/libblas.exports" > /dev/null ||
  fail "libblas.so.3 does not export libhcops.so.0's BLAS, CBLAS and hcops_*"
echo "  exports: libhcops.so.0 $(wc -l < "$scratch/libhcops.exports"), libblas.so.3 $(wc -l < "$scratch/libblas.exports")"
HCOPS_LIB=$dir/libblas.so.3 sh "$srcdir/abi/test_symbols.sh" > "$scratch/symbols.out" 2>&1 ||
  { fail "tests/abi/test_symbols.sh on libblas.so.3"; cat "$scratch/symbols.out"; }

echo "== -lblas and -ldnnl programs through symlinks in another folder"
alt=$scratch/alt
mkdir -p "$alt" && ln -s "$dir/libblas.so.3" "$alt/libblas.so.3" && ln -s "$dir/libdnnl.so.2" "$alt/libdnnl.so.2"
LD_LIBRARY_PATH=$alt HCOPS_VERBOSE=1 ./modules_blas_user > "$scratch/alt_blas.out" 2> "$scratch/alt_blas.err" ||
  { fail "modules_blas_user through $alt"; cat "$scratch/alt_blas.err"; }
grep -q '^hcops_verbose,exec,sgemm_,' "$scratch/alt_blas.err" || fail "the -lblas program's sgemm_ did not run in HCOps"
LD_LIBRARY_PATH=$alt HCOPS_VERBOSE=1 ./test_dnnl_forwarded > "$scratch/alt_dnnl.out" 2> "$scratch/alt_dnnl.err" ||
  { fail "test_dnnl_forwarded through $alt"; cat "$scratch/alt_dnnl.err"; }
grep "^dnnl_engine_create in $lib/libhcops.so.0\$" "$scratch/alt_dnnl.err" ||
  { fail "the -ldnnl program did not reach $lib/libhcops.so.0"; grep '^dnnl_engine_create' "$scratch/alt_dnnl.err"; }
grep -q '^hcops_verbose,exec,dnnl_sgemm,' "$scratch/alt_dnnl.err" || fail "the -ldnnl program's dnnl_sgemm did not run in HCOps"

echo "== numpy and torch under LD_LIBRARY_PATH=$dir"
LD_LIBRARY_PATH=$dir HCOPS_VERBOSE=1 OMP_NUM_THREADS=2 TMPDIR=$scratch \
  /usr/bin/python3 "$srcdir/install/one_engine.py" "$prefix" > "$scratch/probe.out" 2> "$scratch/probe.err" ||
  { fail "one_engine.py"; cat "$scratch/probe.out"; tail -20 "$scratch/probe.err"; }
cat "$scratch/probe.out"
real_lib0=$(readlink -f "$lib/libhcops.so.0")
engines=$(grep -c '^engine_file ' "$scratch/probe.out")
[ "$engines" = 1 ] || fail "$engines mapped files hold an HCOps engine (want 1)"
grep -qx "engine_file $real_lib0" "$scratch/probe.out" || fail "the engine is not $real_lib0"
for copy in libblas.so.3 libdnnl.so.2; do
  grep -qx "entry $copy $real_lib0" "$scratch/probe.out" || fail "hcops_print_info through $copy is not libhcops.so.0's"
  grep -qx "workspaces $copy 1" "$scratch/probe.out" || fail "the engine behind $copy: $(grep "^workspaces $copy" "$scratch/probe.out") workspaces (want 1)"
  ref=$(sed -n "s/^underlying_blas $copy //p" "$scratch/probe.out")
  case $ref in "$prefix"/* | '') fail "the reference BLAS through $copy is '$ref'" ;; esac
  ref=$(sed -n "s/^underlying_dnnl $copy //p" "$scratch/probe.out")
  case $ref in "$prefix"/* | none | '') fail "the real libdnnl through $copy is '$ref'" ;; esac
done
grep -Eq '^hcops_verbose,exec,(cblas_sgemm|sgemm_),' "$scratch/probe.err" ||
  fail "numpy's GEMM did not run in HCOps"
if grep -q '^torch none' "$scratch/probe.out"; then
  echo "SKIP (part): no torch"
elif grep -q '^hcops_verbose,exec,cpu,matmul,.*hcops:' "$scratch/probe.err"; then
  echo "  torch's oneDNN matmul ran in HCOps"
elif grep -q avx512bw /proc/cpuinfo; then
  fail "torch's bf16 Linear did not run in HCOps through libdnnl.so.2"
else
  echo "SKIP (part): PyTorch sends bf16 matmuls to oneDNN on AVX-512 CPUs only"
fi
if grep '^hcops:' "$scratch/probe.err"; then fail "errors from HCOps"; fi

echo "== the same with LD_PRELOAD=$lib/libhcops.so too (hcops-run under the module)"
LD_PRELOAD=$lib/libhcops.so LD_LIBRARY_PATH=$dir OMP_NUM_THREADS=2 TMPDIR=$scratch \
  /usr/bin/python3 "$srcdir/install/one_engine.py" "$prefix" > "$scratch/preload.out" 2> "$scratch/preload.err" ||
  { fail "one_engine.py under LD_PRELOAD"; tail -20 "$scratch/preload.err"; }
grep -E '^(engine_file|entry|workspaces) ' "$scratch/preload.out"
[ "$(grep -c '^engine_file ' "$scratch/preload.out")" = 1 ] && grep -qx "engine_file $real_lib0" "$scratch/preload.out" &&
  [ "$(grep -c "^entry .* $real_lib0\$" "$scratch/preload.out")" = 3 ] ||
  fail "the preloaded libhcops.so and the copies' are not one engine"

# route_check TAG OUT ERR TORCH_LAYER: one_engine.py's output of a route
# that loads libhcops_torch: the dispatcher's products ran in HCOps, the
# torch layer is the installed TORCH_LAYER, one engine (libhcops.so.0) with
# one workspace, no error.
route_check() {
  tag=$1 out=$2 err=$3 layer=$4
  grep -E '^(engine_file|torch_layer|entry|workspaces|dispatcher_mm) ' "$out" | sed "s/^/  $tag: /"
  grep -qx "torch_layer $(readlink -f "$lib/$layer")" "$out" || fail "$tag: the torch layer is not the installed $layer"
  [ "$(grep -c '^torch_layer ' "$out")" = 1 ] || fail "$tag: $(grep -c '^torch_layer ' "$out") torch layers"
  [ "$(grep -c '^engine_file ' "$out")" = 1 ] && grep -qx "engine_file $real_lib0" "$out" ||
    fail "$tag: the engine is not libhcops.so.0 alone: $(grep '^engine_file' "$out" | tr '\n' ' ')"
  grep -qx "entry libhcops.so.0 $real_lib0" "$out" || fail "$tag: libhcops.so.0 is not loaded from $lib"
  grep -qx "workspaces libhcops.so.0 1" "$out" || fail "$tag: $(grep '^workspaces libhcops.so.0' "$out") (want 1)"
  n=$(sed -n 's/^dispatcher_mm //p' "$out")
  [ "${n:-0}" -ge 4 ] || fail "$tag: the dispatcher's mm ran in HCOps ${n:-0} times (want 4)"
  grep -q '^hcops_verbose,exec,aten::mm,' "$err" || fail "$tag: no verbose aten::mm line"
  if grep '^hcops:' "$err"; then fail "$tag: errors from HCOps"; fi
}

echo "== hcops-run with Debian's python (libhcops_torch.so)"
if /usr/bin/python3 -c 'import torch' 2> /dev/null && [ -f "$lib/libhcops_torch.so" ]; then
  env -u HCOPS_TORCH_LIB HCOPS_VERBOSE=1 OMP_NUM_THREADS=2 TMPDIR=$scratch \
    "$prefix/bin/hcops-run" /usr/bin/python3 "$srcdir/install/one_engine.py" "$prefix" > "$scratch/run1.out" 2> "$scratch/run1.err" ||
    { fail "hcops-run one_engine.py"; tail -20 "$scratch/run1.err"; }
  route_check "hcops-run python3" "$scratch/run1.out" "$scratch/run1.err" libhcops_torch.so
  grep -Eq '^hcops_verbose,exec,(cblas_sgemm|sgemm_),' "$scratch/run1.err" || fail "hcops-run python3: numpy's GEMM did not run in HCOps"
else
  echo "SKIP (part): no Debian torch or no libhcops_torch.so"
fi

echo "== the PyTorch 2.x venv (libhcops_torch2.so): under hcops-run, and importing hcops.torch"
if [ -n "${HCOPS_TORCH2_PYTHON:-}" ] && [ -f "$lib/libhcops_torch2.so" ]; then
  env -u HCOPS_TORCH_LIB HCOPS_VERBOSE=1 OMP_NUM_THREADS=2 TMPDIR=$scratch \
    "$prefix/bin/hcops-run" "$HCOPS_TORCH2_PYTHON" "$srcdir/install/one_engine.py" "$prefix" > "$scratch/run2.out" 2> "$scratch/run2.err" ||
    { fail "hcops-run venv one_engine.py"; tail -20 "$scratch/run2.err"; }
  route_check "hcops-run venv" "$scratch/run2.out" "$scratch/run2.err" libhcops_torch2.so
  pydir=$prefix/share/hcops/python  # the installed package (hcops-run's PYTHONPATH)
  [ -f "$pydir/hcops/torch/__init__.py" ] || fail "no hcops.torch in $pydir"
  env -u HCOPS_TORCH_LIB -u LD_PRELOAD HCOPS_VERBOSE=1 OMP_NUM_THREADS=2 TMPDIR=$scratch ONE_ENGINE_OPS=1 PYTHONPATH="$pydir" \
    "$HCOPS_TORCH2_PYTHON" "$srcdir/install/one_engine.py" "$prefix" > "$scratch/imp2.out" 2> "$scratch/imp2.err" ||
    { fail "venv import hcops.torch one_engine.py"; tail -20 "$scratch/imp2.err"; }
  route_check "venv import hcops.torch" "$scratch/imp2.out" "$scratch/imp2.err" libhcops_torch2.so
else
  echo "SKIP (part): no PyTorch 2.x build"
fi

[ $status = 0 ] && rm -rf "$scratch"
exit $status
