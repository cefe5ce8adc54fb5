#!/usr/bin/env bash
# tests/real/postgres.sh — Debian's PostgreSQL server on libursa-pthread,
# plain against LD_PRELOAD in alternating rounds, every run checked.
#
# Every PostgreSQL backend sleeps and is woken through an unnamed,
# process-shared POSIX semaphore in shared memory (sem_init(.., 1, 0),
# sem_wait, sem_post): contended LWLocks, buffer-pin waits, and group
# commit — with fsync=on and synchronous_commit=on a committing backend
# queues for the WAL flush and sleeps on its semaphore until the flusher
# wakes it.
#
# A throwaway cluster (fsync=on, synchronous_commit=on) runs in server
# lifetimes: "plain" (the server as installed) and "ursa" (the same server
# with LD_PRELOAD=libursa-pthread.so). Rounds alternate the order: plain
# ursa, ursa plain, plain ursa, ... Each lifetime re-creates the pgbench
# tables (pgbench -i, then CHECKPOINT) and runs the same list of pgbench
# runs, by default
#   tpcb:8 tpcb:24   TPC-B-like (pgbench default), 8 and 24 clients
#   N:24             -N, simple update (no teller/branch updates)
#   S:8 S:24 S:48    -S, select only, at 4, 12 and 24 times the 2 cores
# each -T URSA_PG_SECONDS. Checked after every run: pgbench exited 0 with no
# failed transactions and a non-zero count, and the balances add up. pgbench
# empties pgbench_history before each run, so the script keeps running
# totals over the lifetime: every transaction adds its delta to one account
# and writes it to the history, so sum(abalance) of the accounts = the sum
# of sum(delta) over the lifetime's runs; TPC-B also adds it to a branch and
# a teller, so sum(bbalance) = sum(tbalance) = that sum over the TPC-B runs
# (-N leaves them); a select-only run writes no history row and changes no
# balance.
#
# Before the timed rounds, one untimed "check" lifetime of the ursa server
# runs with the shim's counters on (URSA_SHIM_STATS=1: an atomic add per
# call, so never in a timed run) to show the semaphore calls went through
# ursa. Every ursa lifetime checks the shim is mapped into the postmaster,
# every plain one that it is not.
#
# Output: per run, each lifetime's tps; then per pgbench run the median tps
# of each side and the median of the per-round ratios ursa/plain with
# [min..max]. The exit status says only whether every check passed; tps
# are figures, never assertions.
#
#   URSA_SHIM=path/to/libursa-pthread.so tests/real/postgres.sh
#   (make shim-postgres does this)
#
# URSA_SHIM_BASE=path/to/another/libursa-pthread.so: compare two builds of
# the shim instead (a change against the commit before it): the "base" side
# replaces "plain" and runs the server with LD_PRELOAD of that library, and
# the ratio is ursa / base.
#
# URSA_PG_SECONDS (default 8) per pgbench run, URSA_PG_ROUNDS (default 3),
# URSA_PG_RUNS (default "tpcb:8 tpcb:24 N:24 S:8 S:24 S:48"; MODE:CLIENTS
# with MODE tpcb, N or S), URSA_PG_SCALE (default 5). URSA_PG_PERF: perf
# events (perf stat -e syntax) counted system-wide during every timed
# pgbench run and printed per transaction after each lifetime's line (the
# client's share is the same on both sides). About 6 minutes with
# the defaults. Needs root (to install the packages when missing, and to run
# the server as the unprivileged user postgres) or to be run as an
# unprivileged user that can run initdb.
set -euo pipefail

shim=${URSA_SHIM:-}
base_shim=${URSA_SHIM_BASE:-}
secs=${URSA_PG_SECONDS:-8}
rounds=${URSA_PG_ROUNDS:-3}
runs=${URSA_PG_RUNS:-"tpcb:8 tpcb:24 N:24 S:8 S:24 S:48"}
scale=${URSA_PG_SCALE:-5}
perf_events=${URSA_PG_PERF:-}
here=$(cd "$(dirname "$0")" && pwd)

die() {
	echo "postgres.sh: $*" >&2
	exit 1
}
# shellcheck source=tests/real/common.sh
. "$here/common.sh"

[ -n "$shim" ] && [ -f "$shim" ] || die "set URSA_SHIM to libursa-pthread.so (got '$shim')"
[ -z "$base_shim" ] || [ -f "$base_shim" ] || die "URSA_SHIM_BASE: no such file '$base_shim'"
other=plain
[ -n "$base_shim" ] && other=base
check_runs URSA_PG_RUNS "$runs" tpcb N S

pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$pgbin" ] || [ ! -x "$pgbin/pgbench" ]; then
	[ "$(id -u)" = 0 ] || die "PostgreSQL missing: apt-get install postgresql postgresql-contrib"
	install_packages postgresql postgresql-contrib
	pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
fi

# The server runs as an unprivileged user, in a private directory that user
# owns (socket there too), on a free loopback port.
work=$(mktemp -d "${TMPDIR:-/tmp}/ursa-pg.XXXXXX")
work=$(cd "$work" && pwd -P) # as /proc/PID/maps will name the shims in it
if [ "$(id -u)" = 0 ]; then
	user=postgres
	id "$user" >/dev/null 2>&1 || die "no user $user (the postgresql package makes it)"
	chown "$user" "$work"
	as_user() { runuser -u "$user" -- "$@"; }
else
	as_user() { "$@"; }
fi
chmod 700 "$work"
copy_shims "$work"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
data="$work/data"

cleanup() {
	as_user "$pgbin/pg_ctl" -D "$data" -m immediate stop >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

echo "== initdb ($pgbin)"
as_user "$pgbin/initdb" -D "$data" -A trust -U postgres --no-sync >"$work/initdb.log" 2>&1 ||
	{ cat "$work/initdb.log"; die "initdb failed"; }

psql() { as_user "$pgbin/psql" -X -q -At -h "$work" -p "$port" -U postgres "$@"; }
pgbench() { as_user "$pgbin/pgbench" -h "$work" -p "$port" -U postgres "$@"; }

sums() {
	psql -d bench -F ' ' -c "select (select sum(abalance) from pgbench_accounts),
		(select sum(bbalance) from pgbench_branches), (select sum(tbalance) from pgbench_tellers),
		(select coalesce(sum(delta), 0) from pgbench_history), (select count(*) from pgbench_history)"
}

# lifetime LABEL SIDE STATS SECS: one server lifetime (SIDE plain, base or
# ursa);
# appends "LABEL RUN TPS" lines to $work/tps.
lifetime() {
	local label=$1 side=$2 stats=$3 t=$4
	local log="$work/$label.log"
	side_env "$side" "$stats"
	as_user "${side_env[@]}" "$pgbin/pg_ctl" -D "$data" -l "$log" -w -t 60 \
		-o "-p $port -k $work -c listen_addresses=127.0.0.1 -c max_connections=$((maxc + 10)) -c shared_buffers=128MB -c fsync=on -c synchronous_commit=on -c max_wal_size=4GB -c checkpoint_timeout=30min" \
		start >/dev/null || { cat "$log"; die "$label: server did not start"; }
	local pid
	pid=$(head -n 1 "$data/postmaster.pid")
	check_mapped "$label" "$side" "$pid"
	psql -c "set client_min_messages = warning" -c "drop database if exists bench" -d postgres
	psql -c "create database bench" -d postgres
	pgbench -i -q -s "$scale" bench >"$work/$label.init" 2>&1 ||
		{ cat "$work/$label.init"; die "$label: pgbench -i failed"; }
	psql -d bench -c checkpoint

	# Running totals of the history's deltas: all runs, TPC-B runs.
	local line="   $label ($side):" r tot_all=0 tot_tpcb=0 perf_lines=
	for r in $runs; do
		local mode=${r%%:*} c=${r#*:} flag=
		case $mode in N) flag=-N ;; S) flag=-S ;; esac
		local out="$work/$label.$mode.$c.out"
		local before after
		before=$(sums)
		local perf_pid=
		if [ -n "$perf_events" ] && [ "$stats" != 1 ]; then
			perf stat -a -x, -e "$perf_events" -o "$out.perf" sleep "$t" &
			perf_pid=$!
		fi
		if ! pgbench $flag -c "$c" -j 2 -T "$t" bench >"$out" 2>&1; then
			cat "$out"
			fail "$label $r: pgbench exited non-zero"
			continue
		fi
		after=$(sums)
		local tps failed ntx acc br tel hist nh
		tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$out")
		failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$out")
		ntx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$out")
		read -r acc br tel hist nh <<<"$after"
		tot_all=$((tot_all + hist))
		[ "$mode" = tpcb ] && tot_tpcb=$((tot_tpcb + hist))
		if [ -z "$tps" ] || [ "${ntx:-0}" = 0 ]; then
			fail "$label $r: no result"
		elif [ "${failed:-0}" != 0 ] || grep -qiE 'abort|error' "$out"; then
			fail "$label $r: $failed failed transactions"
		elif [ "$acc" != "$tot_all" ] || [ "$br" != "$tot_tpcb" ] || [ "$tel" != "$tot_tpcb" ]; then
			fail "$label $r: INCONSISTENT (accounts $acc, history deltas $tot_all; branches $br, tellers $tel, TPC-B deltas $tot_tpcb)"
		elif [ "$mode" = S ] && { [ "$nh" != 0 ] || [ "${before% * *}" != "${after% * *}" ]; }; then
			fail "$label $r: a select-only run changed the data ($before -> $after)"
		elif [ "$mode" != S ] && [ "$nh" -lt "$ntx" ]; then
			fail "$label $r: $nh history rows for $ntx transactions"
		fi
		echo "$label $r ${tps:-0}" >>"$work/tps"
		line+=" $r ${tps:-?}"
		if [ -n "$perf_pid" ]; then
			wait "$perf_pid" || true
			perf_lines+="      $r per transaction:$(awk -F, -v n="${ntx:-0}" \
				'$1 ~ /^[0-9.]+$/ && n > 0 { printf " %s %.2f", $3, $1 / n }' "$out.perf")"$'\n'
		fi
	done
	echo "$line"
	[ -n "$perf_lines" ] && printf '%s' "$perf_lines"
	as_user "$pgbin/pg_ctl" -D "$data" -m fast -w stop >/dev/null || die "$label: stop failed"

	if [ "$stats" = 1 ]; then
		# One report line per server process that made calls.
		local procs waits posts
		read -r procs waits posts < <(grep -h '^ursa-pthread\[' "$log" | awk '
			{ n++; for (i = 3; i <= NF; i++) { split($i, kv, "="); s[kv[1]] += kv[2] } }
			END { printf "%d %d %d\n", n, s["sem_wait"], s["sem_post"] }')
		echo "   $label: sem_wait $waits, sem_post $posts through ursa, over $procs server processes"
		[ "${waits:-0}" -gt 0 ] && [ "${posts:-0}" -gt 0 ] ||
			fail "$label: SHIM NOT USED (sem_wait $waits, sem_post $posts)"
	fi
}

echo "== pgbench, scale $scale, -T $secs, runs: $runs; $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== check lifetime (untimed figures): the ursa server with the shim's counters on"
lifetime check ursa 1 2
: >"$work/tps"
for ((i = 1; i <= rounds; i++)); do
	if ((i % 2)); then order="$other ursa"; else order="ursa $other"; fi
	echo "== round $i: $order"
	for side in $order; do
		lifetime "$side$i" "$side" 0 "$secs"
	done
done

echo
echo "== pgbench tps, $rounds rounds in alternating order; ratio = ursa / $other per round: median [min..max]"
echo "   load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$here/ab_table.py" "$work/tps" "$rounds" "$runs" "$other"
[ "$failures" = 0 ] || die "$failures check(s) FAILED"
echo "== PostgreSQL on libursa-pthread: every run consistent, no errors"
