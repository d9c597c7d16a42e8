#!/bin/sh
# in-aarch64-root.sh COMMAND [ARG...]: runs COMMAND (a path inside the root,
# /usr/bin/python3 say) in the Debian arm64 root that aarch64-root.sh made
# (the folder AARCH64_ROOT names), through QEMU (binfmt_misc), in the
# current directory. The paths the tests
# name (the source and build trees, ../shared, listed colon-separated in
# AARCH64_ROOT_BINDS) and /proc, /sys, /dev and /tmp are bind-mounted into
# the root at the same places, in a mount namespace of this command's own,
# so nothing stays mounted and the host's view is unchanged. Inside the root
# already (a test's child python), it just runs COMMAND.
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
# Without root: a user namespace in which this user is root (where the
# kernel allows unprivileged ones).
if [ "$(id -u)" = 0 ]; then ns="unshare --mount --propagation private"; else ns="unshare --map-root-user --mount --propagation private"; fi
# shellcheck disable=SC2016  # expanded by the inner shell
exec $ns sh -c '
  set -eu
  root=$1 cwd=$2 preload=$3; shift 3
  old_ifs=$IFS; IFS=:
  for d in /proc /sys /dev /tmp ${AARCH64_ROOT_BINDS:-}; do
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
