#!/bin/sh
# The fused Adam/AdamW step (tests/torch/test_adam.sh) under PyTorch 2.x,
# against libhcops_torch2.so, in 2.x's order (exp_avg by lerp_: the moments
# agree bit for bit) and with 2.x's version counts. The parameters agree
# within 1e-6 normwise relative (test_adam.py --tolerance), not bit for bit:
# the wheel's sqrt of a float tensor goes through MKL's vector math, which
# is not correctly rounded (679 of 100003 denominators differ from IEEE
# sqrt here), and the kernel's sqrt is.
. "${srcdir:-../../tests}/torch2/torch2_env.sh"
HCOPS_ADAM_ARGS=--tolerance
export HCOPS_ADAM_ARGS
exec sh "${srcdir:-../../tests}/torch/test_adam.sh"
