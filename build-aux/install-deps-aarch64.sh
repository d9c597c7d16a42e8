#!/bin/sh
# What `make check-aarch64` needs on a Debian 12 x86-64 machine: the cross
# compiler (GCC 12: NEON, SVE, SVE2 and bf16 intrinsics), QEMU's user-mode
# emulator (SVE at any vector length and SME), Debian's arm64 libraries
# beside the amd64 ones (multiarch: dpkg --add-architecture arm64), and the
# kernel's binfmt_misc entry that runs an aarch64 program through QEMU, so
# that the test scripts' ./program runs as on an Arm machine. oneDNN's
# arm64 runtime (libdnnl2:arm64) installs beside the amd64 one, its headers
# (libdnnl-dev:arm64) do not (their dnnl_config.h differ): that .deb is
# downloaded into $HCOPS_DEB_CACHE, and the Makefile unpacks its headers
# into the build; so is libtorch-dev:arm64 (PyTorch 1.13's headers, whose
# libraries the arm64 root of the Python suites holds). As root it installs and registers; otherwise it tries sudo
# without a password; failing both it prints the commands for the user to
# run and stops.
set -eu
. "$(dirname "$0")/deps-common.sh"

packages="g++-aarch64-linux-gnu qemu-user-static"
arm64_packages="libc6-dev:arm64 libgomp1:arm64 libstdc++6:arm64 libopenblas-dev:arm64 libopenblas0-pthread:arm64
libblas3:arm64 libblas-test:arm64 libhwloc-dev:arm64 libnuma-dev:arm64 libcmocka-dev:arm64 libdnnl2:arm64"
debs="libdnnl-dev:arm64 libtorch-dev:arm64"
qemu=/usr/bin/qemu-aarch64-static
binfmt=/proc/sys/fs/binfmt_misc

missing=
for p in $packages $arm64_packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
fetch=
for p in $debs; do
  deb_cached "$p" || fetch="$fetch $p"
done
registered=no
[ -f "$binfmt/qemu-aarch64" ] && grep -q '^enabled' "$binfmt/qemu-aarch64" && registered=yes
[ -z "$missing$fetch" ] && [ $registered = yes ] && exit 0

unregistered=
[ $registered = yes ] || unregistered="sh $0   (registers $qemu with binfmt_misc)"
as_root "${missing:+dpkg --add-architecture arm64 && apt-get update && apt-get install -y$missing}" \
  "${fetch:+mkdir -p $deb_cache && cd $deb_cache && apt-get download$fetch}" "$unregistered"
if [ -n "$missing" ]; then
  echo "hcops: missing Debian packages for the aarch64 build:$missing"
  export DEBIAN_FRONTEND=noninteractive
  dpkg --print-foreign-architectures | grep -qx arm64 || $run dpkg --add-architecture arm64
  $run apt-get update -q
  # shellcheck disable=SC2086
  $run apt-get install -y -q --no-install-recommends $missing
fi
if [ -n "$fetch" ]; then
  dpkg --print-foreign-architectures | grep -qx arm64 || { $run dpkg --add-architecture arm64 && $run apt-get update -q; }
  # shellcheck disable=SC2086
  fetch_debs $fetch
fi
if [ $registered = no ]; then
  # The aarch64 ELF header (e_ident, e_type EXEC or DYN, e_machine 183), as
  # Debian's qemu-user-static registers it; F: QEMU opened now, so that it
  # also runs in other mount namespaces.
  [ -f "$binfmt/register" ] || $run mount -t binfmt_misc binfmt_misc "$binfmt"
  [ -f "$binfmt/qemu-aarch64" ] && echo 1 | $run tee "$binfmt/qemu-aarch64" >/dev/null  # present, disabled
  [ -f "$binfmt/qemu-aarch64" ] ||
    printf '%s' ':qemu-aarch64:M::\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00:\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:'"$qemu"':F' |
    $run tee "$binfmt/register" >/dev/null
  grep -q '^enabled' "$binfmt/qemu-aarch64" || { echo "hcops: could not register $qemu with binfmt_misc"; exit 1; }
  echo "hcops: aarch64 programs now run through $qemu (binfmt_misc)"
fi
