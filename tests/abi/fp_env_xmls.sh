# Sourced by the floating-point environment tests (abi/test_fp_env.sh,
# mem/test_mem_fp_env.sh, mpi/test_mpi_fp_env.sh): the HWLOC_XMLFILE values
# their programs run under. hwloc's XML loader raises FE_DIVBYZERO and
# FE_INVALID whenever the variable is set, usable or not.
#   fp_good: unset, this machine's XML (written by lstopo now), and
#            tests/topologies' machines; the libraries must print nothing;
#   fp_bad:  a missing file, a directory, a file that is not XML, and (not
#            as root, who reads anything) an unreadable XML; each library
#            must say once that it cannot use it, both through libxml2
#            (libhwloc-plugins), which falls back to this machine, and
#            through hwloc's own minimal parser (HWLOC_LIBXML_IMPORT=0, as
#            where the plugins are not installed), which fails the load.
fp_tmp=$(mktemp -d)
trap 'rm -rf "$fp_tmp"' EXIT
if ! lstopo-no-graphics --of xml "$fp_tmp/this-machine.xml" 2>/dev/null; then
  echo "FAIL: lstopo-no-graphics (Debian package hwloc) cannot write this machine's XML"
  exit 1
fi
printf 'this is not XML\n' >"$fp_tmp/not-xml.xml"
mkdir "$fp_tmp/a directory"
fp_good="unset $fp_tmp/this-machine.xml"
for f in "${HCOPS_TOPOLOGY_DIR:-${srcdir:-..}/topologies}"/*.xml; do
  [ -f "$f" ] && fp_good="$fp_good $f"
done
# Values with a space are kept in a newline-separated list.
fp_bad="$fp_tmp/missing.xml
$fp_tmp/a directory
$fp_tmp/not-xml.xml"
if [ "$(id -u)" != 0 ]; then
  cp "$fp_tmp/this-machine.xml" "$fp_tmp/unreadable.xml"
  chmod 000 "$fp_tmp/unreadable.xml"
  fp_bad="$fp_bad
$fp_tmp/unreadable.xml"
fi

# fp_run VALUE COMMAND...: COMMAND (a program or a function) with
# HWLOC_XMLFILE=VALUE exported, or without the variable for "unset".
fp_run() (
  if [ "$1" = unset ]; then unset HWLOC_XMLFILE; else HWLOC_XMLFILE=$1 && export HWLOC_XMLFILE; fi
  shift
  "$@"
)

# fp_warnings FILE: how many lines of FILE say HWLOC_XMLFILE cannot be used.
# Where the library's hwloc reads XML with libxml2 (fp_libxml=yes, and no
# HWLOC_LIBXML_IMPORT=0), hwloc falls back to this machine and so must the
# warning; its minimal parser fails the load on a file it cannot parse,
# and the library falls back to one domain.
fp_warnings() {
  if [ "$fp_libxml" = yes ] && [ "${HWLOC_LIBXML_IMPORT:-1}" != 0 ]; then
    fp_end="using this machine's topology"
  else
    fp_end="(using this machine's topology|assuming one NUMA domain of this process's CPUs)"
  fi
  grep -Ec "^hcops: warning: HWLOC_XMLFILE=\".*\" cannot be used \(.*\); $fp_end\$" "$1"
}

# fp_check_all PROGRAM...: PROGRAM under every value; it must exit 0 with
# " 0 failed" last, print nothing on stderr under a usable value, and
# exactly the one warning under an unusable one. fp_failed=1 on a failure.
fp_failed=0
fp_libxml=no
fp_check_one() {
  fp_kind=$1 fp_v=$2
  shift 2
  fp_run "$fp_v" "$@" </dev/null >"$fp_tmp/out" 2>"$fp_tmp/err"
  fp_rc=$?
  if [ $fp_rc != 0 ] || ! tail -n 1 "$fp_tmp/out" | grep -q ' 0 failed$'; then
    echo "FAIL: $*, ${HWLOC_LIBXML_IMPORT:+HWLOC_LIBXML_IMPORT=$HWLOC_LIBXML_IMPORT }HWLOC_XMLFILE=$fp_v: exit $fp_rc"
    grep -hv '^ok: ' "$fp_tmp/out" "$fp_tmp/err" | head -20
    fp_failed=1
    return
  fi
  fp_n=$(fp_warnings "$fp_tmp/err")
  fp_others=$(grep -vc "^hcops: warning: HWLOC_XMLFILE=" "$fp_tmp/err")
  if [ "$fp_kind" = good ] && [ -s "$fp_tmp/err" ]; then
    echo "FAIL: $*, ${HWLOC_LIBXML_IMPORT:+HWLOC_LIBXML_IMPORT=$HWLOC_LIBXML_IMPORT }HWLOC_XMLFILE=$fp_v: printed on stderr:"
    head -5 "$fp_tmp/err"
    fp_failed=1
  elif [ "$fp_kind" = bad ] && { [ "$fp_n" != 1 ] || [ "$fp_others" != 0 ]; }; then
    echo "FAIL: $*, ${HWLOC_LIBXML_IMPORT:+HWLOC_LIBXML_IMPORT=$HWLOC_LIBXML_IMPORT }HWLOC_XMLFILE=$fp_v: $fp_n warnings that it cannot be used (want 1), $fp_others other lines:"
    head -5 "$fp_tmp/err"
    fp_failed=1
  else
    echo "PASS: $*, ${HWLOC_LIBXML_IMPORT:+HWLOC_LIBXML_IMPORT=$HWLOC_LIBXML_IMPORT }HWLOC_XMLFILE=$fp_v: $(tail -n 1 "$fp_tmp/out") $(cat "$fp_tmp/err")"
  fi
}
# fp_probe_libxml PROGRAM...: fp_libxml=yes when the hwloc that PROGRAM
# loads (in its first GEMM) has the libxml2 plugin (libhwloc-plugins).
fp_probe_libxml() {
  fp_libxml=no
  (unset HWLOC_XMLFILE; HWLOC_PLUGINS_VERBOSE=1 "$@" </dev/null 2>&1 >/dev/null) |
    grep -q "hwloc_xml_libxml' ready" && fp_libxml=yes
  echo "NOTE: $*: hwloc reads XML with libxml2: $fp_libxml"
}
fp_check_all() {
  fp_probe_libxml "$@"
  for fp_v in $fp_good; do fp_check_one good "$fp_v" "$@"; done
  while IFS= read -r fp_v; do
    fp_check_one bad "$fp_v" "$@"
    (HWLOC_LIBXML_IMPORT=0 && export HWLOC_LIBXML_IMPORT && fp_check_one bad "$fp_v" "$@" && exit $fp_failed) || fp_failed=1
  done <<EOF
$fp_bad
EOF
}
