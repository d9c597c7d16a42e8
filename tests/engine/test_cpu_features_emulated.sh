#!/bin/sh
# AArch64 feature detection (getauxval's hwcaps, common/cpu_features.cpp)
# on the CPUs QEMU emulates (make check-aarch64: QEMU_CPU picks the model
# the emulated program sees): what hcops-info lists, and that a family
# whose features the CPU lacks is not run. Not on x86-64, where cpuid's
# features are the machine's own (engine/test_gemm_isa.sh runs every
# family this CPU has).
set -u
[ "${HCOPS_TEST_EMULATED:-no}" = yes ] && [ "$(uname -m)" = x86_64 ] && ../tools/hcops-info >/dev/null 2>&1 ||
  { echo "SKIP: only for the aarch64 build under QEMU (make check-aarch64)"; exit 77; }
../tools/hcops-info | grep -q '^cpu: AArch64' || { echo "SKIP: not an AArch64 build"; exit 77; }
status=0
fail() { echo "FAIL: $*"; status=1; }
features() { QEMU_CPU=$1 ../tools/hcops-info | sed -n 's/^cpu features: //p'; }
has() { case " $1 " in *" $2 "*) return 0 ;; *) return 1 ;; esac; }

# model: features it must list; features it must not
check() {
  got=$(features "$1")
  echo "== QEMU_CPU=$1: $got"
  for f in $2; do has "$got" "$f" || fail "QEMU_CPU=$1: $f not detected"; done
  for f in $3; do ! has "$got" "$f" || fail "QEMU_CPU=$1: $f detected"; done
}
check cortex-a57 "neon" "sve sve2 bf16 sve_bf16 i8mm sme"
check a64fx "neon sve" "sve2 sve_bf16 sme"
check max "neon sve sve2 bf16 sve_bf16 i8mm sme sme_f32f32 sme_b16f32 sme_f64f64" ""
check max,sve=off "neon bf16" "sve sve2 sve_bf16"
check max,sme=off "neon sve sve2 bf16 sve_bf16" "sme sme_f32f32 sme_b16f32 sme_f64f64"

# The families each model runs: those whose row's features it has.
for cpu in cortex-a57 max; do
  fams=$(QEMU_CPU=$cpu ../tools/hcops-info --families | tr '\n' ' ')
  echo "== QEMU_CPU=$cpu: families $fams"
  has "$fams" neon || fail "QEMU_CPU=$cpu: neon not run"
  has "$fams" generic || fail "QEMU_CPU=$cpu: generic not run"
done
# A row runs where the CPU has all of its features, and only there.
fams_of() { QEMU_CPU=$1 ../tools/hcops-info --families | tr '\n' ' '; }
want() { [ "$(fams_of "$1")" = "$2" ] || fail "QEMU_CPU=$1: families $(fams_of "$1"), expected $2"; }
want max "sme sve_bf16 sve neon generic "
want max,sme=off "sve_bf16 sve neon generic "
want a64fx "sve neon generic "
want max,sve=off "neon generic "
exit $status
