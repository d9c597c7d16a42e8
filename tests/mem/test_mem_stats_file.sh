#!/bin/sh
# HCOPS_MEM_STATS=<path> under LD_PRELOAD: the report is written at exit to
# the file, %p being the pid of the process that exits (a fork child writes
# its own) and %% a literal %, appended; programs that close stderr at exit
# (sort, through gnulib's close_stdout) keep their report that way. A
# directory that cannot take the file warns once on stderr, and the report
# goes to stderr; a value that is neither 0, 1 nor a path warns too.
set -u
# The programs preloaded here (sort, python) are this machine's: an aarch64
# libhcops_mem (make check-aarch64) does not load into them.
if [ "${HCOPS_TEST_EMULATED:-no}" = yes ]; then
  echo "SKIP: the host's sort and python cannot preload the cross-built library"
  exit 77
fi
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "PASS: $1"; }
ko() { fail=$((fail + 1)); echo "FAIL: $1"; }
lib=${HCOPS_MEM_LIB:?HCOPS_MEM_LIB must name the libhcops_mem.so to test}
python=${PYTHON:-/usr/bin/python3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
clean_env="env -u HCOPS_MEM_POLICY -u HCOPS_MEM_THRESHOLD -u HCOPS_MEM_CACHE -u HCOPS_MEM_STATS -u HCOPS_VERBOSE"

# sort, preloaded: the shell writes its pid, then becomes sort. 3 MB of input
# make sort's buffers large blocks.
seq 400000 | sed 's/$/ some text to sort/' >"$dir/input"
$clean_env HCOPS_MEM_STATS="$dir/sort.%p" sh -c 'echo $$ >"$1/pid"; LD_PRELOAD="$2" exec sort -n "$1/input"' \
  sh "$dir" "$lib" >"$dir/sorted" 2>"$dir/err"
pid=$(cat "$dir/pid")
sort -n "$dir/input" | cmp -s - "$dir/sorted" && ok "sort's output is right" || ko "sort's output differs"
[ ! -s "$dir/err" ] && ok "nothing on stderr" || ko "stderr: $(cat "$dir/err")"
if [ -f "$dir/sort.$pid" ]; then
  ok "the report is in sort.<pid of sort>"
  grep -q "^hcops_mem: [1-9][0-9]* large allocations" "$dir/sort.$pid" && grep -q "^hcops_mem: fallbacks:" "$dir/sort.$pid" &&
    ok "it holds the report, with sort's large blocks" || ko "report: $(cat "$dir/sort.$pid")"
else
  ko "no sort.$pid in $dir: $(ls "$dir")"
fi

# %% is a literal %; without %p, reports are appended.
for i in 1 2; do
  $clean_env HCOPS_MEM_STATS="$dir/all%%.txt" LD_PRELOAD="$lib" ./mem_probe stat:allocations >/dev/null 2>"$dir/err"
done
[ "$(grep -c "large allocations" "$dir/all%.txt" 2>/dev/null)" = 2 ] && [ ! -s "$dir/err" ] &&
  ok "%% is a %, and two runs append two reports" || ko "all%.txt: $(cat "$dir/all%.txt" "$dir/err" 2>&1)"

# A relative path is the starting directory's, and a fork child writes its own pid's file.
(cd "$dir" && $clean_env HCOPS_MEM_STATS="./fork.%p" LD_PRELOAD="$lib" "$python" -c '
import os, sys
a = bytearray(8 << 20)
pid = os.fork()
if pid == 0:
    b = bytearray(4 << 20)
    os.chdir("/")
    print("child", os.getpid())
    sys.exit(0)
os.waitpid(pid, 0)
print("parent", os.getpid())
' >"$dir/forked" 2>"$dir/err")
parent=$(sed -n 's/^parent //p' "$dir/forked") child=$(sed -n 's/^child //p' "$dir/forked")
[ -n "$parent" ] && [ -n "$child" ] && [ -s "$dir/fork.$parent" ] && [ -s "$dir/fork.$child" ] &&
  [ "$(grep -c "large allocations" "$dir/fork.$child")" = 1 ] && [ "$(grep -c "large allocations" "$dir/fork.$parent")" = 1 ] &&
  ok "parent and fork child each write their own file, where the parent started" ||
  ko "fork: $(cat "$dir/forked" "$dir/err"; ls "$dir")"

# A directory that does not exist: one warning, the report on stderr.
$clean_env HCOPS_MEM_STATS="$dir/no/such/dir/x.%p" LD_PRELOAD="$lib" ./mem_probe stat:allocations >/dev/null 2>"$dir/err"
[ "$(grep -c "^hcops: warning: HCOPS_MEM_STATS=" "$dir/err")" = 1 ] && grep -qF "cannot create files in \"$dir/no/such/dir/\"" "$dir/err" &&
  ok "a missing directory warns once, naming it" || ko "missing directory: $(cat "$dir/err")"
grep -q "^hcops_mem: 4 large allocations" "$dir/err" && ok "and the report goes to stderr" ||
  ko "missing directory, report: $(cat "$dir/err")"
[ ! -e "$dir/no" ] && ok "and nothing is created" || ko "created: $(ls -R "$dir/no")"

# Neither 0, 1 nor a path: one warning, no report.
$clean_env HCOPS_MEM_STATS=yes LD_PRELOAD="$lib" ./mem_probe stat:allocations >/dev/null 2>"$dir/err"
[ "$(grep -c "^hcops: warning: HCOPS_MEM_STATS=\"yes\" is not 0, 1 or a path" "$dir/err")" = 1 ] &&
  [ "$(grep -vc "^hcops: warning" "$dir/err")" = 0 ] && ok "HCOPS_MEM_STATS=yes warns once, no report" ||
  ko "HCOPS_MEM_STATS=yes: $(cat "$dir/err")"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
