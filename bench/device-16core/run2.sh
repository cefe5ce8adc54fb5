#!/bin/bash
# Mutex spin variants A (main) B C D on 16 cores: empty and 1us sections, threads 1..64.
cd "$(dirname "$0")"
O=/tmp/devout2; rm -rf "$O"; mkdir -p "$O"
trap 'tar czf "${OUT:-/tmp}/all2.tgz" -C "$O" .' EXIT
{ date -u; nproc; cat /proc/loadavg; } > "$O/env.txt"
for V in A B C D; do
	timeout 100 ./lib/ld-linux-x86-64.so.2 --library-path ./var/$V:./lib ./bin/ursa-bench --scenario contention \
		--workloads mutex --sections empty,1us --threads 64 --reps 3 --duration 0.2 \
		--csv "$O/cont-$V.csv" > "$O/cont-$V.txt" 2>&1
	echo "$V rc=$? $(date -u) $(cat /proc/loadavg)" >> "$O/env.txt"
done
