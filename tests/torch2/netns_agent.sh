#!/bin/sh
# Open MPI's launch agent for the namespaces of netns_pair.sh (--mca
# plm_rsh_agent): starts the orted command in the network namespace named
# as its host, as ssh would on a node. Each "node" gets a temporary folder of
# its own: both have the same host name, and two Open MPI daemons (and PMIx
# servers) of one host name sharing /tmp made about one launch in 25 hang.
host=${1:?host}
shift
tmp=${TMPDIR:-/tmp}/hcops-netns-$host
mkdir -p "$tmp"
exec ip netns exec "$host" env TMPDIR="$tmp" /bin/sh -c "$*"
