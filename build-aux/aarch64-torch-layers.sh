#!/bin/sh
# aarch64-torch-layers.sh BUILD ROOT BINDS: what the AArch64 build (the
# folder BUILD) needs for its PyTorch layers, and the configure arguments
# for them on stdout (the Makefile's $(BUILD_AARCH64)/Makefile rule):
#   - the arm64 root of the Python suites (ROOT, aarch64-root.sh), whose
#     python3 runs the layers' tests under QEMU: BUILD/python3-arm64 runs
#     it (in-aarch64-root.sh, with the source and build trees, BINDS,
#     bound in);
#   - libhcops_torch.so for Debian's PyTorch 1.13 in that root: libtorch-
#     dev's arm64 headers (its .deb from $HCOPS_DEB_CACHE, of the version
#     the root has, unpacked into BUILD/torch-dev: multiarch cannot install
#     it beside the amd64 one), with links to the root's libtorch_cpu and
#     libc10 (the Makefile's LDFLAGS give the root's other libraries to the
#     linker, -rpath-link);
#   - libhcops_torch2.so for PyTorch 2.x's aarch64 wheel, installed into
#     BUILD/torch2-aarch64 (torch2-aarch64.sh) and run by a venv of the
#     root's python3 (BUILD/torch2-aarch64-venv) with that folder first on
#     its path (BUILD/python3-torch2). The venv, like the native one, does
#     not see Debian's dist-packages: their scipy, built for Debian's numpy
#     1.24, fails to import beside the wheel's numpy 2, and PyTorch's
#     OpInfo and ModuleInfo import scipy wherever it is found.
# Whatever cannot be had (no root privileges for the root, the package
# index unreachable, the .deb missing) leaves that layer out, saying why
# on stderr: the build goes on without it.
set -eu
[ $# = 3 ] || { echo "usage: $0 BUILD ROOT BINDS" >&2; exit 2; }
build=$(cd "$1" && pwd)
root=$2
binds=$3
here=$(cd "$(dirname "$0")" && pwd)
say() { echo "hcops: the AArch64 build: $*" >&2; }

if ! sh "$here/aarch64-root.sh" "$root" >&2; then
  say "no arm64 root ($root): built without the PyTorch layers"
  echo "--without-torch"
  exit 0
fi
root=$(cd "$root" && pwd)

# A python of the root: PYTHON (a path inside the root: /usr/bin/python3,
# or a venv's), with PYTHONPATH first on its path when given (the wheel's
# folder).
write_python() {  # FILE PYTHON [PYTHONPATH]
  {
    echo '#!/bin/sh'
    echo "# $2 in Debian's arm64 root $root${3:+, with $3 first on its path} (build-aux/aarch64-torch-layers.sh)."
    echo "AARCH64_ROOT='$root' AARCH64_ROOT_BINDS='$binds'"
    echo 'export AARCH64_ROOT AARCH64_ROOT_BINDS'
    [ -z "${3:-}" ] || echo "PYTHONPATH='$3'\${PYTHONPATH:+:\$PYTHONPATH}; export PYTHONPATH"
    echo "exec sh '$here/in-aarch64-root.sh' '$2' \"\$@\""
  } >"$1"
  chmod +x "$1"
}
# Whether it runs torch (QEMU, and root privileges for the chroot).
runs_torch() { QEMU_CPU=${QEMU_CPU:-max} "$1" -c 'import torch' >/dev/null 2>&1; }

args=
python1=$build/python3-arm64
write_python "$python1" /usr/bin/python3
dev=$build/torch-dev
rm -rf "$dev"
lib=$root/usr/lib/aarch64-linux-gnu
v=$(dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Version}' libtorch1.13 2>/dev/null || true)
deb=${HCOPS_DEB_CACHE:-/var/cache/hcops}/libtorch-dev_${v}_arm64.deb
if [ -z "$v" ] || [ ! -f "$lib/libtorch_cpu.so.1.13" ]; then
  say "the root has no PyTorch 1.13 (libtorch1.13): built without libhcops_torch.so"
  args=--without-torch
elif [ ! -f "$deb" ]; then
  say "no $deb (make deps-aarch64 downloads it): built without libhcops_torch.so"
  args=--without-torch
elif ! runs_torch "$python1"; then
  say "$python1 does not run torch (the root needs root privileges: chroot): built without libhcops_torch.so"
  args=--without-torch
else
  dpkg-deb -x "$deb" "$dev"
  for l in torch_cpu c10; do ln -sf "$lib/lib$l.so.1.13" "$dev/usr/lib/aarch64-linux-gnu/lib$l.so"; done
  args="--with-torch TORCH_INCLUDE=$dev/usr/include TORCH_LIBDIR=$dev/usr/lib/aarch64-linux-gnu TORCH_PYTHON=$python1"
fi

python2=$build/python3-torch2
rm -f "$python2"
venv=$build/torch2-aarch64-venv
if ! wheel=$(sh "$here/torch2-aarch64.sh" "$build/torch2-aarch64"); then
  say "built without libhcops_torch2.so"
# The root's venv module, without pip (Debian's ensurepip is a package of
# its own, python3-venv; the wheels come from this machine's pip).
elif ! QEMU_CPU=${QEMU_CPU:-max} "$python1" -m venv --without-pip --clear "$venv" >&2; then
  say "the root's python3 could not make a venv ($venv): built without libhcops_torch2.so"
else
  write_python "$python2" "$venv/bin/python3" "$wheel"
  if runs_torch "$python2"; then
    args="$args --with-torch-python=$python2"
  else
    say "$python2 does not run torch: built without libhcops_torch2.so"
  fi
fi
echo "$args"
