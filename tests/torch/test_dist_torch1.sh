#!/bin/sh
# The torch.distributed backend "hcops" built for Debian's PyTorch 1.13
# (hcops_c10d_torch1.so, a c10d::ProcessGroup) against gloo:
# tests/torch2/test_dist.sh with Debian's python3.
HCOPS_DIST_TORCH1=1
export HCOPS_DIST_TORCH1
exec sh "${srcdir:-../../tests}/torch2/test_dist.sh"
