#!/bin/bash
# One device run: the bufpool loop count and the mutex/rwlock contention
# matrix on a 16-core machine. Self-contained: our own loader and libraries.
cd "$(dirname "$0")"
O=/tmp/devout; rm -rf "$O"; mkdir -p "$O"
trap 'tar czf "${OUT:-/tmp}/all.tgz" -C "$O" .' EXIT
LD=(./lib/ld-linux-x86-64.so.2 --library-path ./lib)
{ date -u; uname -a; nproc; grep -m1 "model name" /proc/cpuinfo; free -g; df -h .; cat /proc/loadavg; } > "$O/env.txt" 2>&1
D=$PWD/bpdata; mkdir -p "$D"
io=()
if ! timeout 60 "${LD[@]}" ./bin/ursa-bufpool --dir "$D" --engine ring --seconds 0.5 --rounds 1 --warmup 0.1 > "$O/probe.txt" 2>&1; then
	io=(--buffered); echo "O_DIRECT probe failed; --buffered" >> "$O/env.txt"
	timeout 60 "${LD[@]}" ./bin/ursa-bufpool --dir "$D" --buffered --engine ring --seconds 0.5 --rounds 1 --warmup 0.1 > "$O/probe2.txt" 2>&1 || echo "ring failed buffered too: rc=$?" >> "$O/env.txt"
fi
for pt in "contended 16" "default 128" "contended 128" "default 512"; do
	set -- $pt
	for e in threads ring1 ring2 ring4 ring8 ring16 threads; do
		case $e in threads) a=(--engine threads) ;; *) a=(--engine ring --loops ${e#ring}) ;; esac
		timeout 40 "${LD[@]}" ./bin/ursa-bufpool --dir "$D" "${io[@]}" --preset $1 --inflight $2 "${a[@]}" \
			--seconds 2 --rounds 1 --warmup 0.3 --csv "$O/bp-$1-$2-$e-$RANDOM.csv" >> "$O/bp.txt" 2>&1
	done
done
echo "bufpool done $(date -u)" >> "$O/env.txt"
timeout 240 "${LD[@]}" ./bin/ursa-bench --scenario contention --workloads mutex,rw95 --sections empty,1us \
	--threads 64 --reps 3 --csv "$O/cont.csv" > "$O/cont.txt" 2>&1
echo "contention rc=$? $(date -u)" >> "$O/env.txt"
cat /proc/loadavg >> "$O/env.txt"
