#!/bin/sh
# torch2-aarch64.sh DIR: PyTorch 2.x's aarch64 wheel from the Python package
# index, with numpy, expecttest and setuptools, installed into the folder DIR for the
# arm64 python3 of the root that aarch64-root.sh makes (Debian 12's
# CPython 3.11): `make check-aarch64` puts DIR on the PYTHONPATH of a venv
# of that python (BUILD/python3-torch2, aarch64-torch-layers.sh), cross-builds
# libhcops_torch2.so against the wheel's headers and libraries, and runs
# the torch 2.x suites there under QEMU.
#
# The wheels are fetched and unpacked by this machine's pip (pip install
# --target --platform: nothing runs under QEMU, no pip in the root), into
# pip's cache the first time (~170 MB: torch 146 MB, numpy 16 MB, sympy and
# the small pure-Python packages).
#
# Which torch: the index's aarch64 wheels up to 2.10 are CPU builds (Arm
# Compute Library inside, OpenBLAS as a library of their own, which a
# preloaded libhcops.so therefore reaches too); from 2.11 on they are CUDA
# builds that need several GB of nvidia-* wheels, some of which the index
# does not have for aarch64 (torch 2.15.0 asks for nvidia-nccl-cu13 2.30.7
# and nvidia-cuda-cupti 13.2.86: neither has an aarch64 wheel there), so
# they cannot be installed from it. HCOPS_TORCH2_AARCH64_SPEC overrides.
#
# Prints DIR on success. Present and complete (DIR/.hcops-torch2-spec names
# the spec): nothing to do. Without the index: one line on stderr, nothing
# half-made left, exit 1.
set -eu
dir=${1:?usage: torch2-aarch64.sh DIR}
spec=${HCOPS_TORCH2_AARCH64_SPEC:-torch==2.10.0}
python_version=3.11  # Debian 12's python3 in the arm64 root
# Beside torch: what the suites import, and setuptools, which a venv has
# and torch.compile needs (torch.utils.cpp_extension imports it; torch
# asks for it only from Python 3.12 on).
extras="numpy expecttest setuptools"
stamp="$dir/.hcops-torch2-spec"
say() { echo "hcops: torch 2.x for aarch64: $*" >&2; }

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$spec $python_version $extras" ] && [ -d "$dir/torch/lib" ]; then
  echo "$dir"
  exit 0
fi

# This machine's pip: one of a python3 >= 3.8 (pip's --target with
# --platform), the torch 2.x venv's first (made by `make all`).
pip=
for p in "${TORCH2_PYTHON:-}" build/torch2-venv/bin/python python3 /usr/bin/python3; do
  [ -n "$p" ] || continue
  command -v "$p" >/dev/null 2>&1 || continue
  if "$p" -m pip --version >/dev/null 2>&1; then
    pip="$p -m pip"
    break
  fi
done
[ -n "$pip" ] || { say "no python3 with pip on this machine; skipped"; exit 1; }

# The platform tags Debian 12's glibc 2.36 accepts, as pip would compute
# them on that machine.
platforms="--platform manylinux2014_aarch64"
for v in 17 24 26 27 28 31 34 35 36; do platforms="$platforms --platform manylinux_2_${v}_aarch64"; done

new="$dir.new"
log="$dir.log"
rm -rf "$new"
mkdir -p "$(dirname "$dir")"
say "installing $spec, $extras for CPython $python_version into $dir (first time: ~170 MB from the package index)"
# pip evaluates the requirements' markers for this machine, not for the
# --platform given: torch's own dependencies marked for x86-64 (its CUDA
# wheels) would come too. So torch comes alone, then what its metadata
# asks for on aarch64: the requirements without an extra and without a
# platform_machine marker (on aarch64 those are x86-64's alone).
# shellcheck disable=SC2086  # $pip and $platforms are word lists
pip_target() {
  $pip install --disable-pip-version-check --progress-bar off --no-compile --target "$new" --upgrade \
    --only-binary=:all: $platforms --python-version "$python_version" --implementation cp "$@" >>"$log" 2>&1
}
failed() {
  why=$(grep -E '^ERROR|Could not|No matching|Network' "$log" | head -1)
  say "pip install $1 failed: ${why:-see $log}; skipped"
  rm -rf "$new"
  exit 1
}
: >"$log"
pip_target --no-deps "$spec" || failed "$spec"
requires=$(sed -n 's/^Requires-Dist: //p' "$new"/torch-*.dist-info/METADATA | grep -v -e 'extra ==' -e platform_machine | tr '\n' '|')
old_ifs=$IFS
IFS='|'
# shellcheck disable=SC2086  # split at | only: a requirement keeps its spaces
set -- $requires$(echo $extras | tr ' ' '|')
IFS=$old_ifs
pip_target "$@" || failed "torch's requirements ($*)"
if [ ! -f "$new/torch/lib/libtorch_cpu.so" ] || [ ! -f "$new/torch/include/torch/library.h" ]; then
  say "$spec installed no libtorch_cpu.so and headers in $new (see $log); skipped"
  rm -rf "$new"
  exit 1
fi
rm -rf "$dir"
mv "$new" "$dir"
echo "$spec $python_version $extras" >"$stamp"
echo "$dir"
