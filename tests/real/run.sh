#!/usr/bin/env bash
# tests/real/run.sh — real Debian programs on libursa-pthread.
#
# Each program runs twice on the same input, plainly and with
# LD_PRELOAD=libursa-pthread.so (URSA_SHIM_STATS=1, so the shim reports its
# calls at exit), and the two outputs must be byte-identical; compressors
# must also round-trip to the input. The shim's report must show it handled
# the program's locks (and, for the condvar program, its waits). Prints a
# table of wall times with and without the shim.
#
#   URSA_SHIM=path/to/libursa-pthread.so tests/real/run.sh
#   (make shim-real does this; make stress includes it)
#
# URSA_REAL_MB (default 256) sizes the generated input; URSA_REAL_ITEMS
# (default 100000) the condvar program's work; URSA_REAL_REPS (default 3)
# how many times each pair runs (fastest kept). Installs pigz and zstd with
# apt-get when missing and running as root.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
shim=${URSA_SHIM:-}
mb=${URSA_REAL_MB:-256}
items=${URSA_REAL_ITEMS:-100000}
py=/usr/bin/python3

die() {
	echo "run.sh: $*" >&2
	exit 1
}

[ -n "$shim" ] && [ -f "$shim" ] || die "set URSA_SHIM to libursa-pthread.so (got '$shim')"
shim=$(readlink -f "$shim")

need() { # command package
	command -v "$1" >/dev/null 2>&1 && return
	[ "$(id -u)" = 0 ] || die "$1 missing: apt-get install $2"
	echo "== installing $2"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >/dev/null ||
		{ apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >/dev/null; } ||
		die "could not install $2"
}
need pigz pigz
need zstd zstd
[ -x "$py" ] || need python3 python3

work=$(mktemp -d "${TMPDIR:-/tmp}/ursa-real.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "== generating ${mb} MB of deterministic input"
"$py" "$here/gen.py" "$mb" >"$work/input"

now() { date +%s.%N; }
fail=0
rows=()

# check NAME STATS-PATTERN CMD...: runs CMD plainly and with the shim,
# alternately, URSA_REAL_REPS times (default 3; the machine may be shared,
# so the table keeps each side's fastest run); compares the outputs of the
# first pair and looks for STATS-PATTERN in the shim's report.
reps=${URSA_REAL_REPS:-3}
check() {
	local name=$1 want=$2
	shift 2
	local best_plain=999999 best_shim=999999 t0 t1 t2 i
	for ((i = 0; i < reps; i++)); do
		t0=$(now)
		"$@" >"$work/$name.plain" 2>"$work/$name.plain.err" || {
			cat "$work/$name.plain.err" >&2
			die "$name failed without the shim"
		}
		t1=$(now)
		env LD_PRELOAD="$shim" URSA_SHIM_STATS=1 "$@" >"$work/$name.shim" \
			2>"$work/$name.shim.err" || {
			cat "$work/$name.shim.err" >&2
			die "$name failed with the shim"
		}
		t2=$(now)
		best_plain=$(echo "if ($t1 - $t0 < $best_plain) $t1 - $t0 else $best_plain" | bc)
		best_shim=$(echo "if ($t2 - $t1 < $best_shim) $t2 - $t1 else $best_shim" | bc)
		cmp -s "$work/$name.plain" "$work/$name.shim" || break
	done
	local stats
	stats=$(grep -h '^ursa-pthread\[' "$work/$name.shim.err" | head -n 1 || true)
	local verdict=ok
	if ! cmp -s "$work/$name.plain" "$work/$name.shim"; then
		verdict="OUTPUT DIFFERS"
	elif ! grep -Eq "$want" <<<"$stats"; then
		verdict="SHIM NOT USED (want /$want/)"
	fi
	[ "$verdict" = ok ] || fail=1
	rows+=("$(printf '%-32s %9.2f %9.2f %6.2f  %s' "$name" "$best_plain" "$best_shim" \
		"$(echo "$best_shim / $best_plain" | bc -l)" "$verdict")")
	echo "   $name: ${stats:-<no report from the shim>}"
}

command -v bc >/dev/null 2>&1 || need bc bc

locks='mutex_lock=[1-9]'
echo "== running (plain, then LD_PRELOAD=$shim)"
check "pigz -p2 compress" "$locks" pigz -n -p 2 -c "$work/input"
cp "$work/pigz -p2 compress.plain" "$work/input.gz"
check "pigz -p2 decompress" "$locks" pigz -d -p 2 -c "$work/input.gz"
cmp -s "$work/pigz -p2 decompress.shim" "$work/input" || { echo "pigz round trip differs"; fail=1; }

check "zstd -T2 compress" "$locks" zstd -q -T2 -c "$work/input"
cp "$work/zstd -T2 compress.plain" "$work/input.zst"
check "zstd -T2 decompress" "$locks" zstd -q -T2 -d -c "$work/input.zst"
cmp -s "$work/zstd -T2 decompress.shim" "$work/input" || { echo "zstd round trip differs"; fail=1; }

check "python3 condqueue.py (condvars)" 'cond_(timed)?wait=[1-9]' "$py" "$here/condqueue.py" "$items"

echo
echo "wall seconds, fastest of $reps alternating runs:"
printf '%-32s %9s %9s %6s  %s\n' program plain_s shim_s ratio result
printf '%s\n' "${rows[@]}"
[ "$fail" = 0 ] || die "FAILED"
echo "== all real-program checks passed"
