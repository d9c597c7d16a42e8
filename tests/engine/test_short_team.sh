#!/bin/sh
# test_short_team under a thread limit that gives every OpenMP team one
# thread while HCOps plans for two.
exec env OMP_THREAD_LIMIT=1 HCOPS_NUM_THREADS=2 ./test_short_team
