#!/usr/bin/env bash
# The main job: the buffer-pool demo (bench/BUFPOOL.md).
# Installs what is missing, builds, runs the three engines with defaults
# (about a minute), prints the comparison, and writes bench/out/bufpool.csv
# and bench/out/bufpool.png (gnuplot).
# Usage: scripts/demo.sh [ursa-bufpool options...]   e.g. --quick, --engine ring
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/deps.sh"
"$top/scripts/build.sh" build
out=${URSA_DEMO_OUT:-$top/bench/out}
mkdir -p "$out"
run=("$top/build/bench/ursa-bufpool" --dir "$out" --csv "$out/bufpool.csv" "$@")

# The demo counts every syscall of the process exactly (a perf counter on the
# raw_syscalls:sys_enter tracepoint) when tracefs is mounted. Where it is not
# (containers), and we are root, mount it in a private mount namespace that
# disappears when the demo exits; otherwise the demo counts only the
# syscalls it makes itself, and says so.
have_tracefs() {
	[ -r /sys/kernel/tracing/events/raw_syscalls/sys_enter/id ] ||
		[ -r /sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id ]
}
if ! have_tracefs && [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null &&
	unshare -m sh -c 'mount -t tracefs nodev /sys/kernel/tracing' 2>/dev/null; then
	exec unshare -m sh -c 'mount -t tracefs nodev /sys/kernel/tracing && exec "$@"' sh "${run[@]}"
fi
exec "${run[@]}"
