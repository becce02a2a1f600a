#!/bin/sh
# Runs the operator (bin/manager, or $OPERATOR_BINARY) with its arguments in a memory cgroup
# limited to $MEMORY_LIMIT (default 300M), as in a container with that memory limit: the kernel
# enforces the limit, and the operator's --memory-limit-ratio reads it. For the benchmark:
#
#   BENCH_MANAGER=$PWD/hack/memory-cgroup.sh BENCH_CLUSTERS=10000 make bench
#
# Needs root and a memory cgroup hierarchy it may write: cgroup v1, or v2 with the memory
# controller enabled for the current cgroup's children. The cgroup
# ($MEMORY_CGROUP, default clusterstack-operator) is created below the caller's.
set -eu
limit=${MEMORY_LIMIT:-300M}
name=${MEMORY_CGROUP:-clusterstack-operator}
bin=${OPERATOR_BINARY:-$(dirname "$0")/../bin/manager}
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
	dir=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)/$name
	mkdir -p "$dir"
	echo "$limit" >"$dir/memory.max"
else
	dir=/sys/fs/cgroup/memory$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup)/$name
	mkdir -p "$dir"
	echo "$limit" >"$dir/memory.limit_in_bytes"
fi
echo $$ >"$dir/cgroup.procs"
exec "$bin" "$@"
