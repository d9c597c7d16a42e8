#!/bin/sh
# `make dist`'s tarball (what pip, EasyBuild and Spack build from) holds
# every file of the checkout but those below, which serve only a checkout:
# the top Makefile (it drives autotools in build/; the tarball has its
# configure), the AArch64 scripts (make check-aarch64, from the top
# Makefile), CI's and the editor's settings. A header or script left out of
# the automake lists fails here, not in a user's build. Without git (a
# tarball's own tree) there is nothing to compare: skipped.
set -u
. "${srcdir:-../../tests}/tree_lock.sh"  # tree_make: make in the build tree, in turn
top_srcdir=$HCOPS_TEST_TOP_SRCDIR
top_builddir=$HCOPS_TEST_TOP_BUILDDIR
git -C "$top_srcdir" rev-parse --is-inside-work-tree > /dev/null 2>&1 ||
  { echo "SKIP: $top_srcdir is not a git checkout"; exit 77; }
not_distributed='^(Makefile|\.gitignore|\.clang-format|m4/\.keep|build-aux/(check-aarch64|aarch64-root|in-aarch64-root|python3-aarch64|aarch64-torch-layers|torch2-aarch64)\.sh)$'
scratch=$(mktemp -d "${TMPDIR:-/tmp}/hcops-dist.XXXXXX") || exit 1
trap 'rm -rf "$scratch"' EXIT
name=hcops-dist-test-$$
tree_make -s -C "$top_builddir" dist distdir="$name" > "$scratch/dist.log" 2>&1 ||
  { tail -20 "$scratch/dist.log"; echo "FAIL: make dist"; exit 1; }
mv "$top_builddir/$name.tar.gz" "$scratch/"
tar tzf "$scratch/$name.tar.gz" | sed -n "s|^$name/||p" | grep -v '/$' | LC_ALL=C sort > "$scratch/dist"
git -C "$top_srcdir" ls-files | grep -Ev "$not_distributed" | LC_ALL=C sort > "$scratch/git"
LC_ALL=C comm -23 "$scratch/git" "$scratch/dist" > "$scratch/missing"
echo "$(wc -l < "$scratch/dist") files in the tarball, $(wc -l < "$scratch/git") tracked files to hold"
for f in configure Makefile.in pyproject.toml build-aux/hcops_wheel.py; do
  grep -qx "$f" "$scratch/dist" || echo "$f" >> "$scratch/missing"
done
if [ -s "$scratch/missing" ]; then
  echo "FAIL: not in make dist's tarball (add them to an automake list, or to not_distributed here):"
  sed 's/^/  /' "$scratch/missing"
  exit 1
fi
echo "PASS: every tracked file is in the tarball"
