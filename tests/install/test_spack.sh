#!/bin/sh
# packaging/spack: HCOps' Spack package repository (Spack 1.x layout,
# package API v2). Everywhere: the repository's layout (repo.yaml's
# namespace is its folder's name, the package's folder holds package.py
# whose class is the package's name) and package.py is valid Python with
# the variants the user guide documents. Where a `spack` is on PATH (or
# $SPACK names one): `spack repo add` takes the repository in a throw-away
# user configuration, `spack info hcops` lists the variants, and `spack
# spec` concretizes hcops with and without them. Spack is neither packaged
# by Debian 12 nor on the package index: without one, that part is skipped,
# saying so (exit 77 after the checks that ran).
set -u
status=0
fail() { echo "FAIL: $*"; status=1; }
repo=$HCOPS_TEST_TOP_SRCDIR/packaging/spack/spack_repo/hcops
pkg=$repo/packages/hcops/package.py

echo "== $repo"
grep -q '^  namespace: hcops$' "$repo/repo.yaml" || fail "repo.yaml's namespace is not hcops (its folder's name)"
grep -q '^  api: v2\.[0-9]*$' "$repo/repo.yaml" || fail "repo.yaml names no package API v2"
[ -f "$pkg" ] || fail "no $pkg"
python3 - "$pkg" <<'PY' || fail "package.py"
import ast, sys
tree = ast.parse(open(sys.argv[1]).read())
classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
assert [c.name for c in classes] == ["Hcops"], f"classes: {[c.name for c in classes]}"
calls = [n for n in ast.walk(classes[0]) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
variants = sorted(c.args[0].value for c in calls if c.func.id == "variant")
assert variants == ["dnnl", "mpi", "torch"], f"variants: {variants}"
methods = {n.name for n in classes[0].body if isinstance(n, ast.FunctionDef)}
assert "configure_args" in methods, methods
print("package.py: class Hcops, variants", ", ".join(variants))
PY

spack=${SPACK:-$(command -v spack || true)}
if [ -z "$spack" ]; then
  [ $status = 0 ] || exit $status
  echo "SKIP: no spack on PATH (Debian 12 and the package index have none; SPACK=/path/to/spack/bin/spack runs the rest)"
  exit 77
fi
scope=$(mktemp -d "${TMPDIR:-/tmp}/hcops-spack.XXXXXX") || exit 1
trap 'rm -rf "$scope"' EXIT
# The user scope and caches are the throw-away folder's: the user's own
# Spack configuration is neither read nor changed.
SPACK_USER_CONFIG_PATH=$scope/config SPACK_USER_CACHE_PATH=$scope/cache
export SPACK_USER_CONFIG_PATH SPACK_USER_CACHE_PATH
echo "== $("$spack" --version)"
"$spack" repo add --scope user "$repo" > "$scope/add.log" 2>&1 || fail "spack repo add: $(tail -3 "$scope/add.log")"
"$spack" info hcops > "$scope/info.log" 2>&1 || fail "spack info hcops: $(tail -5 "$scope/info.log")"
for v in mpi dnnl torch; do grep -q "^ *$v\b" "$scope/info.log" || fail "spack info lists no variant $v"; done
for s in 'hcops' 'hcops~mpi~dnnl' 'hcops+torch'; do
  "$spack" spec "$s" > "$scope/spec.log" 2>&1 || fail "spack spec $s: $(tail -5 "$scope/spec.log")"
done
[ $status = 0 ] && echo "PASS: spack takes the repository and concretizes hcops"
exit $status
