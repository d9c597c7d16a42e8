#!/bin/sh
# What a long test run tests, recorded so that a resumed run can tell
# whether it still tests the same thing (build-aux/check-aarch64.sh).
#
#   run-identity.sh record  STATE SRC BUILD [PRUNED...] < parameters
#   run-identity.sh compare STATE SRC BUILD [PRUNED...] < parameters
#
# The record is a manifest in STATE: the SHA-256 of every file of the source
# tree SRC (build trees, version control, autoconf's cache and Python's
# bytecode left out), of every object, library and program of the build
# BUILD with its config.status (the PRUNED paths left out), and the lines of
# the parameters read on stdin. `compare` exits 0 when nothing of it has
# changed, and otherwise 1, printing what did (a few entries and a count).
#
# The build is compared on the files the record lists, not on what the
# build tree holds now: tests leave programs and libraries of their own in
# it (a package unpacked with its files' dates, a module's scratch), which
# are not what was tested. A build product that is new since the record can
# only come from changed sources, a changed config.status or changed
# parameters, which are compared in full.
set -eu

[ $# -ge 4 ] || { echo "usage: $0 record|compare STATE SRC BUILD [PRUNED...]" >&2; exit 2; }
cmd=$1 state=$2 src=$3 b=$4
shift 4
case $cmd in record | compare) ;; *) echo "$0: $cmd: record or compare" >&2; exit 2 ;; esac

source_files() {
  find "$src" -type d \( -name .git -o -name autom4te.cache -o -name __pycache__ \) -prune \
    -o -type d -exec test -e '{}/config.status' \; -prune \
    -o -type f ! -name '*.pyc' ! -name '*~' ! -name '.*.swp' -print
}

# Not the lt- programs libtool makes when a test first runs one.
build_files() {
  n=$#
  for p in "$@"; do set -- "$@" -path "$p" -o; done
  shift "$n"
  find "$b" \( "$@" -false \) -prune \
    -o -type f ! -name 'lt-*' \( -name '*.o' -o -name '*.a' -o -name '*.so' -o -name '*.so.*' -o -perm -u+x \) -print
  echo "$b/config.status"
}

# "HASH src:PATH" or "HASH build:PATH" for each file named on stdin, sorted
# by name; a file that is gone is hashed as "gone". One that cannot be read
# ends the script: it could be compared with nothing.
hashes() {
  LC_ALL=C sort -u | while IFS= read -r f; do
    if [ ! -e "$f" ]; then
      h=gone
    elif ! h=$(sha256sum < "$f"); then
      echo "$0: cannot read $f" >&2
      exit 2
    fi
    h=${h%% *}
    case $f in
      "$b"/*) printf '%s build:%s\n' "$h" "${f#"$b"/}" ;;
      "$src"/*) printf '%s src:%s\n' "$h" "${f#"$src"/}" ;;
      *) printf '%s %s\n' "$h" "$f" ;;
    esac
  done
}

params=$(cat)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cannot() { echo "$0: cannot $*" >&2; exit 2; }

if [ "$cmd" = record ]; then
  # Listed, then hashed, each step checked: a find that failed part way
  # (a folder it cannot read) would leave the build out of the record, and
  # every later compare would find it unchanged.
  source_files > "$work/list" && build_files "$@" >> "$work/list" || cannot "list the files of $src and $b"
  hashes < "$work/list" > "$work/files" || cannot "hash the files of $src and $b"
  mkdir -p "$state" && mv "$work/files" "$state/identity.files" &&
    printf '%s\n' "$params" > "$state/identity.parameters" || cannot "write the record in $state"
  exit 0
fi

if [ ! -f "$state/identity.parameters" ] || ! grep -q ' build:config.status$' "$state/identity.files" 2>/dev/null; then
  echo "no record in $state"
  exit 1
fi
now=$work
{
  source_files || cannot "list the files of $src"
  sed -n 's/^[^ ]* build:\(.*\)$/\1/p' "$state/identity.files" | while IFS= read -r f; do printf '%s\n' "$b/$f"; done
} > "$now/list"
hashes < "$now/list" > "$now/files" || cannot "hash the files of $src and $b"
LC_ALL=C sort "$state/identity.files" > "$now/then"
LC_ALL=C sort "$now/files" > "$now/now"
# Each name that differs, once: changed, gone or new. (comm prints the
# record's lines flush left, the present's after a tab.)
LC_ALL=C comm -3 "$now/then" "$now/now" | awk '
  { if ($0 ~ /^\t/) { line = substr($0, 2); side = "now" } else { line = $0; side = "then" }
    h = substr(line, 1, index(line, " ") - 1); m = substr(line, index(line, " ") + 1)
    if (!(m in t) && !(m in w)) order[++n] = m
    if (side == "then") t[m] = h; else w[m] = h }
  END { for (i = 1; i <= n; i++) { m = order[i]
          if ((m in t) && (m in w)) print (w[m] == "gone" ? "gone" : "changed") ": " m
          else print ((m in w) ? "new" : "gone") ": " m } }' > "$now/why"
printf '%s\n' "$params" > "$now/parameters"
if ! cmp -s "$state/identity.parameters" "$now/parameters"; then
  diff "$state/identity.parameters" "$now/parameters" | sed -n 's/^< /parameter was: /p; s/^> /parameter now: /p' >> "$now/why"
fi
[ -s "$now/why" ] || exit 0
n=$(wc -l < "$now/why")
head -n 5 "$now/why"
[ "$n" -le 5 ] || echo "and $((n - 5)) more"
exit 1
