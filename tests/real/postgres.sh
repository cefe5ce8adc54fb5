#!/usr/bin/env bash
# tests/real/postgres.sh — Debian's PostgreSQL server on libursa-pthread.
#
# Every PostgreSQL backend sleeps and is woken through an unnamed,
# process-shared POSIX semaphore in shared memory (sem_init(.., 1, 0),
# sem_wait, sem_post): contended LWLocks, group commit, buffer-pin waits.
# This runs pgbench against a throwaway cluster twice — the server plain,
# then with LD_PRELOAD=libursa-pthread.so — each time checking consistency
# afterwards (sum of account balances = sum of branch balances = sum of
# teller balances = sum of history deltas; no failed or aborted
# transactions), and prints tps and latency side by side with the number of
# semaphore waits and posts that went through ursa (the shim's per-process
# reports, URSA_SHIM_STATS=1, summed from the server log).
#
#   URSA_SHIM=path/to/libursa-pthread.so tests/real/postgres.sh
#   (make shim-postgres does this)
#
# URSA_PG_SECONDS (default 20) per pgbench run, URSA_PG_CLIENTS (default 16:
# more than cores), URSA_PG_SCALE (default 5). Needs root (to install the
# packages when missing, and to run the server as the unprivileged user
# postgres) or to be run as an unprivileged user that can run initdb.
set -euo pipefail

shim=${URSA_SHIM:-}
secs=${URSA_PG_SECONDS:-20}
clients=${URSA_PG_CLIENTS:-16}
scale=${URSA_PG_SCALE:-5}

die() {
	echo "postgres.sh: $*" >&2
	exit 1
}

[ -n "$shim" ] && [ -f "$shim" ] || die "set URSA_SHIM to libursa-pthread.so (got '$shim')"

pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$pgbin" ] || [ ! -x "$pgbin/pgbench" ]; then
	[ "$(id -u)" = 0 ] || die "PostgreSQL missing: apt-get install postgresql postgresql-contrib"
	echo "== installing PostgreSQL"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -q postgresql postgresql-contrib >/dev/null ||
		{ apt-get update -q >/dev/null && apt-get install -y -q postgresql postgresql-contrib >/dev/null; } ||
		die "could not install postgresql"
	pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
fi

# The server runs as an unprivileged user, in a private directory that user
# owns (socket there too), on a free loopback port.
work=$(mktemp -d "${TMPDIR:-/tmp}/ursa-pg.XXXXXX")
if [ "$(id -u)" = 0 ]; then
	user=postgres
	id "$user" >/dev/null 2>&1 || die "no user $user (the postgresql package makes it)"
	chown "$user" "$work"
	as_user() { runuser -u "$user" -- "$@"; }
else
	as_user() { "$@"; }
fi
chmod 700 "$work"
# A copy the server's user can surely read, whatever the build tree's modes.
cp "$shim" "$work/libursa-pthread.so"
chmod 755 "$work/libursa-pthread.so"
shim="$work/libursa-pthread.so"

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

# run LABEL PRELOAD: one server lifetime; sets the result line in $work/LABEL.
run() {
	local label=$1 preload=$2
	local log="$work/$label.log"
	local env=(env)
	[ -n "$preload" ] && env+=(LD_PRELOAD="$preload" URSA_SHIM_STATS=1)
	echo "== $label: start the server${preload:+ with LD_PRELOAD=libursa-pthread.so}"
	as_user "${env[@]}" "$pgbin/pg_ctl" -D "$data" -l "$log" -w -t 60 \
		-o "-p $port -k $work -c listen_addresses=127.0.0.1 -c max_connections=$((clients + 10)) -c shared_buffers=64MB -c fsync=off" \
		start >/dev/null || { cat "$log"; die "$label: server did not start"; }
	local pid
	pid=$(head -n 1 "$data/postmaster.pid")
	if [ -n "$preload" ]; then
		grep -q libursa-pthread "/proc/$pid/maps" || die "$label: the shim is not mapped into the postmaster"
	elif grep -q libursa-pthread "/proc/$pid/maps"; then
		die "$label: the shim is mapped into the baseline server"
	fi
	psql -c "set client_min_messages = warning" -c "drop database if exists bench" -d postgres
	psql -c "create database bench" -d postgres
	echo "== $label: pgbench -i -s $scale"
	as_user "$pgbin/pgbench" -i -q -s "$scale" -h "$work" -p "$port" -U postgres bench \
		>"$work/$label.init" 2>&1 || { cat "$work/$label.init"; die "$label: pgbench -i failed"; }
	echo "== $label: pgbench -c $clients -j 2 -T $secs"
	as_user "$pgbin/pgbench" -c "$clients" -j 2 -T "$secs" -h "$work" -p "$port" -U postgres bench \
		>"$work/$label.out" 2>&1 || { cat "$work/$label.out"; die "$label: pgbench failed"; }
	local sums
	sums=$(psql -d bench -F ' ' -c "select (select sum(abalance) from pgbench_accounts),
		(select sum(bbalance) from pgbench_branches), (select sum(tbalance) from pgbench_tellers),
		(select coalesce(sum(delta), 0) from pgbench_history), (select count(*) from pgbench_history)")
	as_user "$pgbin/pg_ctl" -D "$data" -m fast -w stop >/dev/null || die "$label: stop failed"

	local tps lat failed
	tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$work/$label.out")
	lat=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' "$work/$label.out")
	failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$work/$label.out")
	read -r acc br tel hist ntx <<<"$sums"
	local verdict=ok
	if [ "$acc" != "$br" ] || [ "$acc" != "$tel" ] || [ "$acc" != "$hist" ]; then
		verdict="INCONSISTENT (accounts $acc branches $br tellers $tel history $hist)"
	elif [ "${failed:-0}" != 0 ] || grep -qiE 'abort|error' "$work/$label.out"; then
		verdict="ERRORS (failed $failed)"
	elif [ -z "$tps" ] || [ "$ntx" = 0 ]; then
		verdict="NO RESULT"
	fi
	local waits=- posts=- procs=-
	if [ -n "$preload" ]; then
		# One report line per server process that made calls.
		read -r procs waits posts < <(grep -h '^ursa-pthread\[' "$log" | awk '
			{ n++; for (i = 3; i <= NF; i++) { split($i, kv, "="); s[kv[1]] += kv[2] } }
			END { printf "%d %d %d\n", n, s["sem_wait"], s["sem_post"] }')
		[ "${waits:-0}" -gt 0 ] && [ "${posts:-0}" -gt 0 ] ||
			verdict="SHIM NOT USED (sem_wait $waits, sem_post $posts)"
	fi
	printf '%-9s %10s %12s %10s %10s %10s %8s  %s\n' "$label" "$tps" "$lat" "$ntx" \
		"$waits" "$posts" "$procs" "$verdict" >"$work/$label.row"
	echo "   $label: tps $tps, latency $lat ms, $ntx transactions, balances $acc/$br/$tel/$hist: $verdict"
	[ "$verdict" = ok ]
}

status=0
run baseline "" || status=1
run ursa "$shim" || status=1

echo
echo "pgbench -c $clients -j 2 -T $secs, scale $scale, $(nproc) cores; sem waits/posts summed over the server's processes:"
printf '%-9s %10s %12s %10s %10s %10s %8s  %s\n' server tps latency_ms xacts sem_wait sem_post procs result
cat "$work/baseline.row" "$work/ursa.row"
[ "$status" = 0 ] || die "FAILED"
echo "== PostgreSQL on libursa-pthread: consistent, no errors"
