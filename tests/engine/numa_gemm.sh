#!/bin/sh
# Runs test_numa_gemm once per machine of tests/topologies, with one thread
# per compute domain of that machine.
set -u
. "${srcdir:-../../tests}/engine/topologies.sh"
on_each_topology ./test_numa_gemm
