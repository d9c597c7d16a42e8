#!/bin/sh
# Sets up the virtual environment in which HCOps builds and tests its
# PyTorch 2.x library (libhcops_torch2.so): `build-aux/torch2-venv.sh DIR`
# makes DIR a venv with the torch wheel of the Python package index (the
# default Linux wheel: a CUDA build with its nvidia-* wheels, ~5 GB
# installed, ~3.5 GB downloaded once into pip's cache; it runs on the CPU),
# numpy, expecttest (which PyTorch's own test helpers import) and auditwheel
# (`make wheel` checks the wheel it makes with `auditwheel show`). Prints
# DIR/bin/python on success. Where the index cannot be reached, or the
# install fails, it says so in one line on stderr, leaves no half-made
# environment, and exits 1: the build then goes on without the 2.x library.
#
# HCOPS_TORCH2_SPEC: the torch requirement (default: the version this
# project was last measured with). HCOPS_VENV_PYTHON: the interpreter the
# venv is made from (default: the first python3 >= 3.10 with venv and
# ensurepip, not Debian's system one, whose venv needs python3-venv).
set -eu
dir=${1:?usage: torch2-venv.sh DIR}
spec=${HCOPS_TORCH2_SPEC:-torch==2.15.0}
stamp="$dir/.hcops-torch2-spec"

say() { echo "hcops: torch 2.x environment: $*" >&2; }

if [ -x "$dir/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$spec" ] &&
   "$dir/bin/python" -c 'import torch, numpy, expecttest' >/dev/null 2>&1; then
  # An environment made before auditwheel was on the list gets it added.
  "$dir/bin/python" -c 'import auditwheel' >/dev/null 2>&1 ||
    "$dir/bin/python" -m pip install -q --disable-pip-version-check auditwheel >/dev/null 2>&1 ||
    say "pip install auditwheel failed: make wheel (which checks its wheel with it) will stop, saying so"
  echo "$dir/bin/python"
  exit 0
fi

python=${HCOPS_VENV_PYTHON:-}
if [ -z "$python" ]; then
  for p in python3.13 python3.12 python3.11 python3.10 python3 /usr/bin/python3; do
    command -v "$p" >/dev/null 2>&1 || continue
    if "$p" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 10))' >/dev/null 2>&1; then
      python=$p
      break
    fi
  done
fi
if [ -z "$python" ]; then
  say "no python3 >= 3.10 with the venv and ensurepip modules (apt-get install python3-venv); skipped"
  exit 1
fi

# A directory this script did not make (no stamp) is someone's: left alone.
if [ -e "$dir" ] && [ ! -f "$stamp" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
  say "$dir exists and was not made by this script; not touched (name another directory, or TORCH2_PYTHON=its python); skipped"
  exit 1
fi
# Made beside it and moved into place only when it works: a failed attempt
# (no network) leaves the previous environment as it was.
new="$dir.new"
rm -rf "$new"
log="$dir.log"
if ! "$python" -m venv "$new" >"$log" 2>&1; then
  say "$python -m venv $new failed (see $log); skipped"
  rm -rf "$new"
  exit 1
fi
say "installing $spec, numpy, expecttest, auditwheel with pip into $dir (first time: ~3.5 GB from the package index)"
if ! "$new/bin/python" -m pip install --disable-pip-version-check --progress-bar off \
     "$spec" numpy expecttest auditwheel >>"$log" 2>&1; then
  why=$(grep -E '^ERROR|Could not|No matching|Network' "$log" | head -1)
  say "pip install $spec failed: ${why:-see $log}; skipped"
  rm -rf "$new"
  exit 1
fi
if ! "$new/bin/python" -c 'import torch, numpy, expecttest, auditwheel' >>"$log" 2>&1; then
  say "torch does not import in $new (see $log); skipped"
  rm -rf "$new"
  exit 1
fi
# Into place; the venv's scripts (pip, activate) name its directory: renamed too.
rm -rf "$dir"
mv "$new" "$dir"
grep -rlF "$new" "$dir/bin" 2>/dev/null | while read -r f; do sed -i "s|$new|$dir|g" "$f"; done
echo "$spec" >"$stamp"
echo "$dir/bin/python"
