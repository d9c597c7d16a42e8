#!/bin/sh
# Fetches (benchdnn_fetch.sh) and builds (benchdnn.mk) oneDNN's benchdnn in
# DIR, for the test_benchdnn_*.py tests, and writes DIR/status, which they
# read: "ok PROGRAM INPUTS", "skip WHY" or "fail WHY". Never fails itself, so
# that make check goes on to report the tests' SKIP or FAIL with the reason.
# Both stay in DIR across runs: a second run fetches nothing and compiles only
# what changed. MAKE (with the caller's jobserver) runs the compile.
#
#   MAKE=make sh benchdnn_build.sh DIR HERE    (HERE: tests/external of the sources)
set -u
dir=${1:?usage: benchdnn_build.sh DIR HERE}
here=${2:?usage: benchdnn_build.sh DIR HERE}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
rm -f "$dir/status"

tree=$(sh "$here/benchdnn_fetch.sh" "$dir" 2>"$dir/fetch.err")
rc=$?
if [ $rc = 77 ]; then
  echo "skip $(head -1 "$dir/fetch.err")" > "$dir/status"
  cat "$dir/fetch.err" >&2
  exit 0
elif [ $rc != 0 ] || [ -z "$tree" ]; then
  echo "fail fetching the oneDNN source: $(head -1 "$dir/fetch.err")" > "$dir/status"
  cat "$dir/fetch.err" >&2
  exit 0
fi

out=$dir/build-$(basename "$tree")
start=$(date +%s)
if ${MAKE:-make} -f "$here/benchdnn.mk" TREE="$tree" OUT="$out" HERE="$here" > "$dir/build.log" 2>&1; then
  took=$(($(date +%s) - start))
  # The log says how long the last build took (0 s: all cached).
  echo "benchdnn: built in $took s" >> "$dir/build.log"
  echo "ok $out/benchdnn $tree/tests/benchdnn/inputs" > "$dir/status"
else
  echo "fail compiling benchdnn (see $dir/build.log)" > "$dir/status"
  tail -20 "$dir/build.log" >&2
fi
exit 0
