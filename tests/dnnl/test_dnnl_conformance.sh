#!/bin/sh
# test_dnnl_conformance (matmul and inner-product problems through oneDNN's
# C API against f64 references, dnnl/test_dnnl_conformance.c) in every
# setting of issue 16, all with one seed (DNNL_CONF_SEED, else the time;
# printed, and the way to replay a failure):
#   1. stock, 1 and 2 OpenMP threads: proves the references and the bounds;
#      no hcops_verbose line can appear;
#   2. LD_PRELOAD=libhcops.so HCOPS_DNNL=0: pure forwarding: no hcops exec
#      line at all, and every result equal to stock's bit for bit;
#   3. LD_PRELOAD=libhcops.so HCOPS_VERBOSE=1 with HCOPS_ISA forced to each
#      kernel family this CPU runs (hcops-info --families), 1 and 2 threads:
#      every problem within bounds, an hcops_verbose exec line for each
#      execution of a must-claim problem and none for the others, a
#      fallback line with its reason for each must-forward matmul and inner
#      product (some reasons checked by name), and the
#      must-forward results equal to stock's (same threads) bit for bit.
# Outputs are kept in dnnl_conf.<setting>.out for inspection.
set -u
prog=./test_dnnl_conformance
lib=${HCOPS_LIB:?HCOPS_LIB names the libhcops.so under test}
seed=${DNNL_CONF_SEED:-$(date +%s)}
random=${DNNL_CONF_RANDOM:-60}
echo "seed $seed (DNNL_CONF_SEED=$seed replays this run)"
. "${srcdir:-../../tests}/families.sh"
. "${srcdir:-../../tests}/time_limits.sh"
limit=$(time_limit 180)
status=0

# run LABEL EXPECT ENV...: one run of the program; its output in
# dnnl_conf.LABEL.out, its failing lines shown.
run() {
  label=$1 expect=$2
  shift 2
  out=dnnl_conf.$label.out
  echo "== $label: $*"
  if timeout "$limit" env "$@" "$prog" --seed="$seed" --random="$random" --expect="$expect" >"$out" 2>dnnl_conf.$label.err; then
    tail -n 1 "$out"
  else
    echo "FAIL ($label):"
    grep -v ' ok ' "$out" | grep -v '^seed ' | head -n 40
    tail -n 3 dnnl_conf.$label.err
    status=1
  fi
}

# same_digests A B KIND: the problems of marks KIND ("forward", or "all")
# have the same digests in runs A and B.
same_digests() {
  a=dnnl_conf.$1.out b=dnnl_conf.$2.out
  pick='$2 == "ok" || $2 == "FAIL" { if (kind == "all" || $5 == kind) print $1, $6 }'
  awk -v kind="$3" "$pick" "$a" >dnnl_conf.digests.a
  awk -v kind="$3" "$pick" "$b" >dnnl_conf.digests.b
  if [ ! -s dnnl_conf.digests.a ] || ! cmp -s dnnl_conf.digests.a dnnl_conf.digests.b; then
    echo "FAIL: $2's results of the $3 problems differ from $1's (bit for bit):"
    diff dnnl_conf.digests.a dnnl_conf.digests.b | head -n 20
    status=1
  fi
}

for threads in 1 2; do
  run stock.t$threads none OMP_NUM_THREADS=$threads
done
run nodnnl.t2 none OMP_NUM_THREADS=2 HCOPS_DNNL=0 LD_PRELOAD="$lib"
same_digests stock.t2 nodnnl.t2 all
for isa in $families; do
  for threads in 1 2; do
    run "$isa.t$threads" claims OMP_NUM_THREADS=$threads HCOPS_ISA=$isa HCOPS_VERBOSE=1 LD_PRELOAD="$lib"
    same_digests "stock.t$threads" "$isa.t$threads" forward
  done
done
# Where the real library has no bf16 matmul (AArch64) the bf16 problems are
# skipped, in every run alike: a preloaded run that skips more has broken
# the real library's primitive descriptors.
no_bf16=$(grep -c 'skipped: the real libdnnl has no bf16 matmul' dnnl_conf.stock.t1.out)
for out in dnnl_conf.*.t[12].out; do
  n=$(grep -c 'skipped: the real libdnnl has no bf16 matmul' "$out")
  [ "$n" = "$no_bf16" ] || { echo "FAIL: $out: $n problems skipped for want of bf16, stock $no_bf16"; status=1; }
done
# The reasons HCOps gives for what it leaves to libdnnl (HCOPS_VERBOSE's
# fallback lines), for must-forward problems of the fixed list.
first=$(echo $families | cut -d' ' -f1)
for pair in mm_u8s8_f32_src_zp:datatype mm_s8s8_s32:datatype mm_bf16_weights_any_blocked:format_blocked \
  mm_f32_oscale_per_n:output_scales_mask mm_f32_binary_add:post_op_binary mm_f32_tanh:eltwise_alg \
  mm_f32_relu_then_sum:post_op_order mm_f32_relu_then_gelu_erf:post_op_order ip_fwd_inference_u8s8_s32:datatype \
  ip_fwd_inference_f32_tanh:eltwise_alg; do
  name=${pair%%:*} why=${pair#*:}
  if grep -q "^$name .* skipped: the real libdnnl has no bf16 matmul on this CPU" "dnnl_conf.$first.t1.out"; then
    echo "NOTE: $name: not made, the real libdnnl has no bf16 matmul on this CPU"
  elif ! grep -q "^$name .* declined: $why\( \|\$\)" "dnnl_conf.$first.t1.out"; then
    echo "FAIL: $name: not declined for '$why': $(grep "^$name " "dnnl_conf.$first.t1.out")"
    status=1
  fi
done
[ $status = 0 ] && echo "all settings passed (seed $seed)"
exit $status
