# Sourced by install-deps.sh and install-deps-aarch64.sh: what they share.
# Packages installed with apt-get (as root, else through sudo without a
# password, else the commands printed for the user), and .debs only
# downloaded into $HCOPS_DEB_CACHE for the tests to unpack.

deb_cache=${HCOPS_DEB_CACHE:-/var/cache/hcops}

# deb_cached PKG or PKG:ARCH: whether its .deb is in the cache.
deb_cached() {
  case $1 in
    *:*) ls "$deb_cache/${1%%:*}_"*"_${1##*:}.deb" >/dev/null 2>&1 ;;
    *) ls "$deb_cache/${1}_"*.deb >/dev/null 2>&1 ;;
  esac
}

# as_root LINE...: sets run to how this script runs a command as root ("" or
# "sudo -n"); without either, prints the LINEs (empty ones left out) for the
# user to run as root, and exits 1.
as_root() {
  if [ "$(id -u)" = 0 ]; then
    run=
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    run="sudo -n"
  else
    echo "hcops: run this as root, then try again:"
    for line in "$@"; do
      [ -z "$line" ] || echo "  $line"
    done
    exit 1
  fi
}

# fetch_debs PKG...: downloads them into the cache (after as_root), checked.
fetch_debs() {
  $run mkdir -p "$deb_cache"
  # As root, apt's download runs unsandboxed in a folder _apt cannot write; say nothing of it.
  # shellcheck disable=SC2086
  (cd "$deb_cache" && $run apt-get download -q "$@" 2>&1 | grep -v 'unsandboxed as root' || true)
  for p in "$@"; do
    deb_cached "$p" || { echo "hcops: could not download $p into $deb_cache"; exit 1; }
  done
}
