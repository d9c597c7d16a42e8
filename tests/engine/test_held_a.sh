#!/bin/sh
# Runs test_held_a on this machine's team, then once per machine of
# tests/topologies with one thread per compute domain: the products then run
# in one part per domain, and each part's units must read the held panels
# where their own packing would have put them.
set -u
. "${srcdir:-../../tests}/engine/topologies.sh"
status=0
./test_held_a || status=1
on_each_topology ./test_held_a || status=1
exit $status
