# Sourced by the wheel tests (test_wheel.sh, test_pip_source.sh) after
# torch2/torch2_env.sh: a fresh venv that sees the PyTorch 2.x venv's
# packages (torch from the cache already installed there, no download), and
# what an install of the hcops wheel into it must do. Sets status, fail(),
# top_builddir, scratch (resolved: hcops-run, $ORIGIN and /proc/self/maps
# report resolved paths; removed at exit) and torch_version (the torch the
# build is for).
set -u
status=0
fail() { echo "FAIL: $*"; status=1; }
top_builddir=$HCOPS_TEST_TOP_BUILDDIR
scratch=$(cd "$(mktemp -d "${TMPDIR:-/tmp}/hcops-wheel.XXXXXX")" && pwd -P) || exit 1
trap 'rm -rf "$scratch"' EXIT
torch_version=$("$HCOPS_TORCH2_PYTHON" -c 'import torch; print(torch.__version__.split("+")[0])')
#
# make_venv DIR: the venv, made by the interpreter the 2.x venv was made from,
# without pip of its own: `DIR/bin/python -m pip` is the 2.x venv's pip (a
# fresh venv's bundled setuptools would shadow the one torch requires), run
# by DIR's python, so it installs into DIR. A .pth file lists the 2.x venv's
# site-packages after DIR's own.
make_venv() {
  base=$("$HCOPS_TORCH2_PYTHON" -c 'import sys; print(sys._base_executable)') &&
    "$base" -m venv --without-pip "$1" || { fail "python -m venv $1"; return 1; }
  torch_site=$("$HCOPS_TORCH2_PYTHON" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  site=$("$1/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  echo "$torch_site" > "$site/zz-hcops-test-torch2-venv.pth"
}

# tree DIR: every path under DIR, sorted (before/after comparisons).
tree() { (cd "$1" && find . | LC_ALL=C sort); }

# check_installed VENV TORCH_VERSION: the commands on the venv's PATH; a DiT
# step under the installed hcops-run in which the dispatcher's GEMMs ran in
# HCOps, from the libraries inside the venv's hcops package (the engine
# once); a torch other than the one built for gets one warning line and
# stock PyTorch.
check_installed() {
  venv=$1 torch_version=$2
  # As a user runs it: none of the test environment's library choices.
  unset HCOPS_TORCH_LIB HCOPS_LIB HCOPS_MEM_LIB HCOPS_C10D_LIB HCOPS_VERBOSE HCOPS_OPS
  pkg=$("$venv/bin/python" -c 'import os, hcops; print(os.path.dirname(hcops.__file__))' 2>"$scratch/import.err") ||
    { fail "import hcops in the venv: $(cat "$scratch/import.err")"; return 1; }
  case $pkg in "$venv"/*) ;; *) fail "hcops imported from $pkg, not from the venv $venv" ;; esac
  for c in hcops-run hcops-info hcops-prof; do
    [ -x "$venv/bin/$c" ] || fail "no $c on the venv's PATH ($venv/bin)"
  done
  "$venv/bin/hcops-info" > "$scratch/info.out" 2>&1 && grep -q '^kernel family:' "$scratch/info.out" ||
    fail "hcops-info: $(head -5 "$scratch/info.out")"
  "$venv/bin/hcops-prof" --help > "$scratch/prof.out" 2>&1 || fail "hcops-prof --help: $(tail -3 "$scratch/prof.out")"

  echo "== a DiT step under $venv/bin/hcops-run"
  cat > "$scratch/step.py" <<'EOF'
import json, os, runpy, sys
dit = sys.argv[1]
sys.path.insert(0, os.path.dirname(dit))  # its dit_config, as when run as a script
sys.argv = [dit, "--model", "tiny", "--batch", "2", "--steps", "1", "--warmup", "1", "--threads", "2", "--json"]
try:
    runpy.run_path(dit, run_name="__main__")
finally:
    import hcops.torch
    maps = sorted({l.split()[-1] for l in open("/proc/self/maps") if "libhcops" in l})
    print(json.dumps({"library": hcops.torch.library, "maps": maps}))
EOF
  HCOPS_VERBOSE=1 "$venv/bin/hcops-run" "$venv/bin/python" "$scratch/step.py" \
    "$HCOPS_TEST_TOP_SRCDIR/perf/dit/dit.py" > "$scratch/step.out" 2> "$scratch/step.err" ||
    { fail "the DiT step under hcops-run: $(grep -v hcops_verbose "$scratch/step.err" | tail -5)"; return 1; }
  grep '"losses"' "$scratch/step.out" | grep -vq 'NaN' || fail "the DiT step reported no finite loss"
  n=$(grep -c 'hcops_verbose,exec,aten::.*api=aten' "$scratch/step.err")
  [ "$n" -gt 0 ] || fail "no dispatcher GEMM ran in HCOps"
  tail -1 "$scratch/step.out" > "$scratch/step.json"
  "$venv/bin/python" - "$scratch/step.json" "$pkg" > "$scratch/step.check" 2>&1 <<'EOF' || fail "$(cat "$scratch/step.check")"
import json, os, sys
out, pkg = json.load(open(sys.argv[1])), sys.argv[2]
lib = os.path.join(pkg, "lib")
bad = [m for m in out["maps"] if os.path.dirname(m) != lib]
assert not bad, f"HCOps libraries mapped from outside {lib}: {bad}"
names = sorted(os.path.basename(m) for m in out["maps"])
assert "libhcops.so.0" in names and "libhcops_torch2.so" in names, f"mapped: {names}"
assert os.path.dirname(out["library"]) == lib, f"hcops.torch loaded {out['library']}"
print("mapped:", " ".join(names))
EOF
  echo "$n dispatcher GEMM calls in HCOps; $(cat "$scratch/step.check")"

  echo "== a torch other than $torch_version"
  mkdir -p "$scratch/other/torch"
  printf '__version__ = "2.0.0"\n\n\nclass _Ops:\n    pass\n\n\nops = _Ops()\n' > "$scratch/other/torch/__init__.py"
  PYTHONPATH="$scratch/other" "$venv/bin/hcops-run" "$venv/bin/python" -c 'import torch; print("ran on", torch.__version__)' \
    > "$scratch/other.out" 2> "$scratch/other.err" || fail "a script under another torch failed: $(tail -3 "$scratch/other.err")"
  grep -q '^ran on 2.0.0$' "$scratch/other.out" || fail "the script under another torch did not run: $(cat "$scratch/other.out")"
  [ "$(grep -c . "$scratch/other.err")" = 1 ] && grep -q "^hcops: warning: .*torch 2\.0\.0" "$scratch/other.err" &&
    grep -q "torch $torch_version" "$scratch/other.err" ||
    fail "another torch: not one warning line naming both versions: $(cat "$scratch/other.err")"
  cat "$scratch/other.err"
}
