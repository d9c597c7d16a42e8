#!/bin/sh
# The installed lib/hcops/libdnnl.so.2 (shim/Makefile.am: a thin filter of
# libhcops.so.0), in a throw-away DESTDIR under the build tree: programs
# linked against the system libdnnl run with LD_LIBRARY_PATH=<pkglibdir> get
# HCOps (dnnl_engine_create resolves to libhcops.so.0 of the same tree,
# dnnl_sgemm runs in HCOps, forwarded calls reach the real library:
# test_dnnl_forwarded's output is the plain run's), and a C++ program that
# imports libdnnl's dnnl::impl internals still loads and runs. Uninstalling
# removes the link install made. (Not `ldd` of the copy itself: glibc's
# ldd cannot list a filter library; the dynamic loader of a program that
# loads it can, LD_TRACE_LOADED_OBJECTS=1, which is what ldd does: it also
# runs under QEMU, where the host's ldd cannot read an aarch64 program.)
set -u
. "${srcdir:-../../tests}/tree_lock.sh"  # tree_make: make in the build tree, in turn
status=0
dest=$HCOPS_TEST_BUILDDIR/dnnl_install
rm -rf "$dest"
tree_make -s -C ../shim install DESTDIR="$dest" >dnnl_install.log 2>&1 || { echo "FAIL: make install"; cat dnnl_install.log; exit 1; }
dir=$dest$HCOPS_TEST_PKGLIBDIR
ls -l "$dir"
[ "$(readelf -d "$dir/libdnnl.so.2" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')" = libdnnl.so.2 ] ||
  { echo "FAIL: the copy's SONAME is not libdnnl.so.2"; status=1; }
echo "== the copy's dynamic section"
readelf -d "$dir/libdnnl.so.2" | grep -E 'NEEDED|FILTER|RUNPATH'
readelf -d "$dir/libdnnl.so.2" | grep -q 'Filter library: \[libhcops.so.0\]' ||
  { echo "FAIL: the copy is not a filter of libhcops.so.0"; status=1; }
[ "$(readlink "$dir/libhcops_dnnl_real.so")" = "$HCOPS_TEST_DNNL" ] ||
  { echo "FAIL: libhcops_dnnl_real.so does not link to $HCOPS_TEST_DNNL"; status=1; }
echo "== the libraries a program linked -ldnnl loads, under LD_LIBRARY_PATH"
LD_LIBRARY_PATH=$dir LD_TRACE_LOADED_OBJECTS=1 ./test_dnnl_forwarded | grep -E 'dnnl|hcops' | tee dnnl_install.ldd
grep -q "libhcops_dnnl_real.so => $dir/libhcops_dnnl_real.so" dnnl_install.ldd ||
  { echo "FAIL: the copy does not find the real libdnnl beside itself"; status=1; }
grep -q "libhcops.so.0 => $dir/../libhcops.so.0 " dnnl_install.ldd ||
  { echo "FAIL: the copy does not find libhcops.so.0 of its own tree"; status=1; }

echo "== test_dnnl_forwarded, plain and under LD_LIBRARY_PATH=$dir with HCOPS_VERBOSE=1"
./test_dnnl_forwarded > dnnl_install_plain.out 2>/dev/null || status=1
LD_LIBRARY_PATH=$dir HCOPS_VERBOSE=1 ./test_dnnl_forwarded > dnnl_install_copy.out 2> dnnl_install_copy.err || status=1
diff dnnl_install_plain.out dnnl_install_copy.out || { echo "FAIL: the calls answer differently"; status=1; }
grep "^dnnl_engine_create in $dir/../libhcops.so.0\$" dnnl_install_copy.err ||
  { echo "FAIL: the program did not go through the copy to its libhcops.so.0"; cat dnnl_install_copy.err; status=1; }
grep '^hcops_verbose,exec,dnnl_sgemm,' dnnl_install_copy.err ||
  { echo "FAIL: dnnl_sgemm did not run in HCOps"; cat dnnl_install_copy.err; status=1; }
if grep '^hcops:' dnnl_install_copy.err; then echo "FAIL: errors from HCOps"; status=1; fi

echo "== a C++ program using dnnl::impl, under LD_LIBRARY_PATH=$dir"
LD_LIBRARY_PATH=$dir ./dnnl_impl_user || { echo "FAIL: dnnl_impl_user"; status=1; }

echo "== uninstall"
tree_make -s -C ../shim uninstall DESTDIR="$dest" >>dnnl_install.log 2>&1 || { echo "FAIL: make uninstall"; status=1; }
if [ -e "$dir/libhcops_dnnl_real.so" ] || [ -L "$dir/libhcops_dnnl_real.so" ] || [ -e "$dir/libdnnl.so.2" ]; then
  echo "FAIL: uninstall left the copy or its link"; ls -l "$dir"; status=1
fi
[ $status = 0 ] && rm -rf "$dest"
exit $status
