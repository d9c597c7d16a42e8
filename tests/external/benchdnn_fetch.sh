#!/bin/sh
# Brings Debian's source package of the installed oneDNN (libdnnl2) into DIR
# with apt's own source retrieval, for benchdnn_build.sh: its benchdnn is
# built from it at test time and never committed.
#
#   sh benchdnn_fetch.sh DIR
#
# apt runs on a private configuration under DIR/apt (its lists, cache and
# deb-src sources), so the system's apt state is neither read for sources
# nor changed: the deb-src entries are the system's own deb sources
# (/etc/apt/sources.list, sources.list.d/*.list and deb822 *.sources) with
# their type changed. It works as root and as any user who can write DIR.
# Prints the source tree's path on stdout; exits 77 (skip) with one line
# saying why when the source cannot be had (no network, no such version on
# the mirrors), 1 on any other error. A tree fetched once is kept.
set -eu

dir=${1:?usage: benchdnn_fetch.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

fields=$(dpkg-query -W -f='${source:Package} ${source:Version} ${source:Upstream-Version}' libdnnl2 2>/dev/null) ||
  { echo "hcops: benchdnn: libdnnl2 is not installed (build-aux/install-deps.sh installs libdnnl-dev)" >&2; exit 77; }
set -- $fields
package=$1 version=$2 upstream=$3
tree=$dir/$package-$upstream
# The stamp names the Debian version: an upgraded libdnnl2 fetches anew.
stamp=$tree/.hcops-fetched-$version
if [ -f "$stamp" ]; then
  echo "$tree"
  exit 0
fi

apt_dir=$dir/apt
rm -rf "$apt_dir" "$tree"
mkdir -p "$apt_dir/sources.list.d" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"

# One-line entries: "deb [options] URI suite components" becomes deb-src.
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [ -f "$f" ] || continue
  sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f"
done > "$apt_dir/sources.list"
# deb822 stanzas: those whose Types has deb and that are not disabled are
# copied with Types: deb-src (Signed-By and the rest as they are, an inline
# key included). Comments are dropped; a blank line ends a stanza.
for f in /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] || continue
  awk '
    function flush() {
      if (n && deb && !off) { for (i = 1; i <= n; ++i) print s[i]; print "" }
      n = 0; deb = 0; off = 0
    }
    /^#/ { next }
    /^[[:space:]]*$/ { flush(); next }
    tolower($1) == "types:" {
      for (i = 2; i <= NF; ++i) if ($i == "deb") deb = 1
      s[++n] = "Types: deb-src"; next
    }
    tolower($1) == "enabled:" && tolower($2) == "no" { off = 1 }
    { s[++n] = $0 }
    END { flush() }' "$f" > "$apt_dir/sources.list.d/$(basename "$f")"
done
if ! grep -q . "$apt_dir/sources.list" "$apt_dir"/sources.list.d/*.sources 2>/dev/null; then
  echo "hcops: benchdnn: no deb source in /etc/apt to derive a deb-src one from; skipped" >&2
  exit 77
fi

apt_get() {
  apt-get -q -o Dir::Etc::SourceList="$apt_dir/sources.list" -o Dir::Etc::SourceParts="$apt_dir/sources.list.d" \
    -o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache="$apt_dir/cache" -o Debug::NoLocking=1 "$@"
}
# A source without a deb-src index (a vendor's repository) fails its part of
# the update and no more: only the package's own source matters below.
apt_get update > "$apt_dir/update.log" 2>&1 || true
# As root, apt downloads unsandboxed into a folder _apt cannot write, and says so.
if ! (cd "$dir" && apt_get source "$package=$version") > "$apt_dir/source.log" 2>&1; then
  why=$(grep -h '^E:' "$apt_dir/source.log" | head -1 | sed 's/^E: //; s/ *\[IP:[^]]*\]//' | cut -c1-200)
  rm -f "$dir/$package"_*
  echo "hcops: benchdnn: cannot fetch Debian's source of $package $version (${why:-see $apt_dir/source.log}); skipped" >&2
  exit 77
fi
[ -d "$tree/tests/benchdnn" ] || { echo "hcops: benchdnn: $tree/tests/benchdnn is missing after apt-get source" >&2; exit 1; }
# The downloaded archives and apt's lists are no longer needed (~20 MB).
rm -rf "$apt_dir/lists" "$apt_dir/cache" "$dir/$package"_*
touch "$stamp"
echo "$tree"
