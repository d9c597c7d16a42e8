#!/bin/sh
# aarch64-root.sh ROOT: a Debian 12 arm64 system in the folder ROOT, with
# Debian's python3, numpy, scipy and PyTorch 1.13 for arm64, the libraries
# the cross-built libhcops.so needs, and hwloc's lstopo
# (test_numpy_fp_env.py). Made once by debootstrap: 490 packages, 335 MB
# fetched from Debian's mirror, 1.9 GB installed, 7-8 minutes, most of them
# dpkg under QEMU. `make check-aarch64` runs the Python integration suites
# in it (build-aux/in-aarch64-root.sh): multiarch cannot install an arm64
# python3 beside the amd64 one. Present and complete (ROOT/.hcops-root
# names these packages): nothing to do. As root, or with sudo without a
# password; otherwise it prints the command for the user and stops
# (running the suites in the root needs root too: in-aarch64-root.sh).
set -eu
. "$(dirname "$0")/deps-common.sh"
[ $# = 1 ] || { echo "usage: $0 ROOT" >&2; exit 2; }
root=$1
suite=bookworm
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
packages="python3,python3-numpy,python3-scipy,python3-torch,libopenblas0-pthread,libblas3,libhwloc15,libnuma1,libgomp1,hwloc-nox"
stamp=$root/.hcops-root
[ -f "$stamp" ] && [ "$(cat "$stamp")" = "$suite $packages" ] && exit 0

# Making the arm64 root for the Python suites needs root (deps-common.sh).
as_root "sh $0 $root"
if ! command -v debootstrap >/dev/null 2>&1 && [ ! -x /usr/sbin/debootstrap ]; then
  echo "hcops: installing debootstrap (the arm64 root for the Python suites)"
  DEBIAN_FRONTEND=noninteractive $run apt-get install -y -q --no-install-recommends debootstrap
fi
# An interrupted run leaves a root debootstrap cannot finish: start again,
# removing only what is one (debootstrap's folder or the stamp in it) or
# empty, never what else ROOT might name, nor through a mount left in it.
if [ -e "$root" ]; then
  if [ -d "$root/debootstrap" ] || [ -f "$stamp" ] || [ -z "$(ls -A "$root")" ]; then
    $run rm -rf --one-file-system "$root"
  else
    echo "hcops: $root is not an arm64 root of aarch64-root.sh (no debootstrap/ nor .hcops-root in it): not removed"
    exit 1
  fi
fi
mkdir -p "$(dirname "$root")"
echo "hcops: debootstrap $suite arm64 into $root (python3, numpy, scipy, PyTorch 1.13)"
# The second stage runs arm64's dpkg in the root through binfmt_misc's QEMU.
$run /usr/sbin/debootstrap --arch=arm64 --variant=minbase --include="$packages" \
  "$suite" "$root" "$mirror" >"$root.log" 2>&1 ||
  { tail -20 "$root.log"; echo "hcops: debootstrap failed (whole log: $root.log)"; exit 1; }
$run chroot "$root" apt-get clean
echo "$suite $packages" | $run tee "$stamp" >/dev/null
