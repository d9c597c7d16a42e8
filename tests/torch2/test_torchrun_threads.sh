#!/bin/sh
# torchrun under hcops-run: hcops-run sets OMP_NUM_THREADS to the rank's
# compute cores, and torchrun, which gives each worker one thread only
# where OMP_NUM_THREADS is unset, would leave every worker all of them (N
# workers, N times the cores). The start-up hook gives each of torchrun's
# LOCAL_WORLD_SIZE workers its share of hcops-run's threads
# (python/startup/sitecustomize.py); an OMP_NUM_THREADS the user set is
# kept (the workers' threads as under torchrun alone: torch 2.15 caps them
# at the CPUs); a worker says its share under HCOPS_VERBOSE.
. "${srcdir:-../../tests}/time_limits.sh"
. "${srcdir:-../../tests}/torch2/torch2_env.sh"
unset LD_PRELOAD OMP_NUM_THREADS HCOPS_RUN_OMP_NUM_THREADS MASTER_ADDR MASTER_PORT RANK WORLD_SIZE LOCAL_RANK \
  LOCAL_WORLD_SIZE TORCHELASTIC_RUN_ID HCOPS_VERBOSE
run=${HCOPS_TEST_TOP_BUILDDIR:?}/tools/hcops-run
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
status=0
fail() { echo "FAIL: $*"; status=1; }
cat >"$tmp/worker.py" <<'PY'
import os, torch
print(f"worker {os.environ['LOCAL_RANK']}: {torch.get_num_threads()} threads", flush=True)
PY
cores=$("$run" --dry-run true | sed -n 's/.*OMP_NUM_THREADS=\([0-9]*\).*/\1/p')
echo "hcops-run's OMP_NUM_THREADS here: $cores"
if [ "${cores:-0}" -lt 2 ]; then
  echo "SKIP: hcops-run gives this machine $cores thread(s): no share to check"
  exit 77
fi
share=$((cores / 2))
# torchrun [--stock] [ENV...]: two workers of torchrun under hcops-run (or
# alone); their lines.
torchrun() {
  launcher=$run
  [ "$1" = --stock ] && { launcher=; shift; }
  env "$@" timeout -k 10 "$(time_limit 300)" $launcher "$PYTHON" -m torch.distributed.run --standalone \
    --nproc_per_node 2 "$tmp/worker.py" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc = 0 ] || { tail -20 "$tmp/err"; fail "torchrun $* exited $rc"; }
  sort "$tmp/out"
}
got=$(torchrun HCOPS_VERBOSE=1)
echo "$got"
want=$(printf 'worker 0: %s threads\nworker 1: %s threads' "$share" "$share")
[ "$got" = "$want" ] || fail "hcops-run's $cores threads not shared: '$got', expected '$want'"
said=$(grep -c "^hcops: torchrun worker [01] of 2 under hcops-run: $share of hcops-run's $cores threads$" "$tmp/err")
[ "$said" = 2 ] || fail "the workers said their share $said times, not twice: $(grep '^hcops' "$tmp/err")"
# A user's value other than the share (one more), so that keeping it is told
# apart from sharing (each torchrun here imports torch three times).
n=$((share + 1))
got=$(torchrun OMP_NUM_THREADS=$n)
want=$(torchrun --stock OMP_NUM_THREADS=$n)
echo "OMP_NUM_THREADS=$n set by the user: $got; torchrun alone: $want" | tr '\n' ' '; echo
[ "$got" = "$want" ] || fail "the user's OMP_NUM_THREADS=$n not kept: '$got', torchrun alone '$want'"
[ $status = 0 ] && echo "PASS: torchrun's workers share hcops-run's threads"
exit $status
