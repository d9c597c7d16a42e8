#!/bin/sh
# in-aarch64-root.sh COMMAND [ARG...]: runs COMMAND (a path inside the root,
# /usr/bin/python3 say) in the Debian arm64 root that aarch64-root.sh made
# (the folder AARCH64_ROOT names), through QEMU (binfmt_misc), in the
# current directory. The paths the tests name (the source and build trees
# and the shared folder, colon-separated in AARCH64_ROOT_BINDS) and /proc,
# /sys, /dev and /tmp are bind-mounted into the root at the same places, in
# a mount namespace of this command's own, so nothing stays mounted and the
# host's view is unchanged. Inside the root already (a test's child
# python), it just runs COMMAND.
set -eu
[ $# -ge 1 ] || { echo "usage: AARCH64_ROOT=DIR $0 COMMAND [ARG...]" >&2; exit 2; }
[ -z "${HCOPS_IN_AARCH64_ROOT:-}" ] || exec "$@"
root=$(cd "${AARCH64_ROOT:?names no arm64 root (build-aux/aarch64-root.sh makes one)}" && pwd)
[ -f "$root/.hcops-root" ] || { echo "hcops: $root is not an arm64 root made by aarch64-root.sh" >&2; exit 99; }
HCOPS_IN_AARCH64_ROOT=$root
export HCOPS_IN_AARCH64_ROOT
# An LD_PRELOAD meant for COMMAND (an aarch64 library) is not for the
# host's unshare, mount and chroot: it is set again for COMMAND alone.
preload=${LD_PRELOAD-}
unset LD_PRELOAD
# chroot and the mount points in a root that debootstrap made as root.
if [ "$(id -u)" = 0 ]; then
  ns=
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  ns="sudo -n --preserve-env"
else
  echo "hcops: running the arm64 root needs root (chroot); as a user, make check-aarch64 AARCH64_PYTHON=no" >&2
  exit 77
fi
# shellcheck disable=SC2016  # expanded by the inner shell
exec $ns unshare --mount --propagation private sh -c '
  set -euf
  root=$1 cwd=$2 preload=$3; shift 3
  old_ifs=$IFS; IFS=:
  # The trees first: a root inside one of them then holds no mounts yet
  # when that tree is bound into it.
  for d in ${AARCH64_ROOT_BINDS:-} /proc /sys /dev /tmp; do
    [ -n "$d" ] && [ -d "$d" ] || continue
    mkdir -p "$root$d"
    mount --rbind "$d" "$root$d"
  done
  IFS=$old_ifs
  PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin
  export PATH
  exec chroot "$root" /bin/sh -c "cd \"\$0\" && { [ -z \"\$1\" ] || export LD_PRELOAD=\"\$1\"; } && shift && exec \"\$@\"" \
    "$cwd" "$preload" "$@"
' in-aarch64-root "$root" "$(pwd)" "$preload" "$@"
