#!/bin/sh
exec env HCOPS_VERBOSE=1 HCOPS_NUM_THREADS=2 ./test_threads
