# Sourced by the tests that run once per kernel family (forced with
# HCOPS_ISA), from the build's tests directory:
#   families       the families this CPU runs, in order of preference
#                  (hcops-info --families); none fails the test at once;
#                  HCOPS_TEST_FAMILIES restricts them
#   ops_families   the families with operators (src/ops/families.def)
#   runs_here F    whether this CPU runs family F
#   has_ops F      whether family F has operators
families=$(../tools/hcops-info --families)
if [ -z "$families" ]; then
  echo "FAIL: hcops-info --families lists no kernel family"
  exit 1
fi
# HCOPS_TEST_FAMILIES="a b" keeps only those (make check-aarch64 runs the
# vector-length agnostic families again at other vector lengths).
# Each of them must run here: a run meant for a family never skips it.
if [ -n "${HCOPS_TEST_FAMILIES:-}" ]; then
  for f in $HCOPS_TEST_FAMILIES; do
    case " $(echo $families) " in
      *" $f "*) ;;
      *) echo "FAIL: HCOPS_TEST_FAMILIES names $f, which this CPU does not run (runs: $(echo $families))"; exit 1 ;;
    esac
  done
  families=$(for f in $families; do case " $HCOPS_TEST_FAMILIES " in *" $f "*) echo "$f" ;; esac; done)
fi
ops_families=$(sed -n 's/^HCOPS_OPS_FAMILY\(_VL\)\{0,1\}(\([a-z0-9_]*\))$/\2/p' "${srcdir:-../../tests}/../src/ops/families.def")
if [ -z "$ops_families" ]; then
  echo "FAIL: no HCOPS_OPS_FAMILY row in ${srcdir:-../../tests}/../src/ops/families.def"
  exit 1
fi
runs_here() { case " $(echo $families) " in *" $1 "*) return 0 ;; esac; return 1; }
has_ops() { case " $(echo $ops_families) " in *" $1 "*) return 0 ;; esac; return 1; }
