#!/usr/bin/env bash
# The main job (bench/BUFPOOL.md): installs what is missing, builds, then runs
#   1. the buffer-pool demo at equal concurrency (threads, threads-ursa, ring,
#      16 transactions in flight each on 2 CPUs: 8 x CPUs),
#   2. the contended preset (hot pages locked to commit, as pgbench tpcb),
#      with threads-aio (reads in per-thread io_urings, blocking locks: it
#      deadlocks, and its watchdog says so) and its workaround,
#   3. group commit across 16 processes (bench/ursa-commit),
# in about a minute and a half, printing each table, and writes CSVs and
# PNGs to bench/out/ (bufpool.*, bufpool-contended.*, commit.*, and with
# --sweep bufpool-sweep.*).
set -euo pipefail

usage() {
	cat <<'EOF'
usage: scripts/demo.sh [--quick] [--sweep] [-h|--help] [-- ursa-bufpool options...]
  --quick    shorter runs (about 40 s in all)
  --sweep    also sweep the transactions in flight (CPUs .. 64 x CPUs) and plot
             throughput against p99 latency per engine (about 2 minutes more)
  -h, --help this text
Options after -- go to every ursa-bufpool run (e.g. -- --buffered).
Output: bench/out/*.csv and *.png (URSA_DEMO_OUT to change); builds in build/
(URSA_DEMO_BUILD to change).
EOF
}

orig=("$@") quick=0 sweep=0 extra=()
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1 ;;
	--sweep) sweep=1 ;;
	-h | --help) usage; exit 0 ;;
	--) shift; extra=("$@"); break ;;
	*) echo "demo.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
	esac
	shift
done

top=$(cd "$(dirname "$0")/.." && pwd)

# The demo counts every syscall of the process exactly (a perf counter on the
# raw_syscalls:sys_enter tracepoint) when tracefs is mounted. Where it is not
# (containers), and we are root, mount it in a private mount namespace that
# disappears when the demo exits; otherwise the demo counts only the
# syscalls it makes itself, and says so.
have_tracefs() {
	[ -r /sys/kernel/tracing/events/raw_syscalls/sys_enter/id ] ||
		[ -r /sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id ]
}
if [ -z "${URSA_DEMO_NS:-}" ] && ! have_tracefs && [ "$(id -u)" -eq 0 ] &&
	command -v unshare >/dev/null &&
	unshare -m sh -c 'mount -t tracefs nodev /sys/kernel/tracing' 2>/dev/null; then
	export URSA_DEMO_NS=1
	exec unshare -m bash -c 'mount -t tracefs nodev /sys/kernel/tracing && exec "$@"' \
		bash "$0" ${orig[@]+"${orig[@]}"}
fi

"$top/scripts/deps.sh"
bdir=${URSA_DEMO_BUILD:-build}
case $bdir in /*) ;; *) bdir=$top/$bdir ;; esac
"$top/scripts/build.sh" "$bdir"
out=${URSA_DEMO_OUT:-$top/bench/out}
mkdir -p "$out"
bp=("$bdir/bench/ursa-bufpool" --dir "$out")
if [ $quick = 1 ]; then t=(--quick) ct=(--quick); else t=(--seconds 6); ct=(--seconds 6); fi

echo "== 1/3 equal concurrency: every engine with the same transactions in flight =="
"${bp[@]}" "${t[@]}" --csv "$out/bufpool.csv" ${extra[@]+"${extra[@]}"}

echo
echo "== 2/3 contended: every transaction updates one of 8 hot pages, its lock held to commit =="
"${bp[@]}" "${t[@]}" --preset contended --inflight 16 --engine threads --engine ring \
	--engine threads-aio --engine threads-aio-timed --csv "$out/bufpool-contended.csv" \
	${extra[@]+"${extra[@]}"}

if [ $sweep = 1 ]; then
	echo
	echo "== sweep: throughput against p99 latency, transactions in flight from CPUs to 64 x CPUs =="
	sw=(); [ $quick = 1 ] && sw=(--quick)
	"${bp[@]}" --sweep ${sw[@]+"${sw[@]}"} --csv "$out/bufpool-sweep.csv" ${extra[@]+"${extra[@]}"}
fi

echo
echo "== 3/3 group commit: 16 backend processes, pwrite + fdatasync, the first waiter flushes =="
"$bdir/bench/ursa-commit" "${ct[@]}" --dir "$out" --csv "$out/commit.csv"
