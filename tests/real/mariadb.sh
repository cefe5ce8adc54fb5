#!/usr/bin/env bash
# tests/real/mariadb.sh — Debian's MariaDB server on libursa-pthread, plain
# against LD_PRELOAD in alternating rounds, every run checked.
#
# mariadbd is a threaded server (a thread per connection): its server layer
# and much of InnoDB lock pthread mutexes (buf_pool.mutex, lock_sys's
# wait_mutex, the table cache...), InnoDB puts a transaction that waits for
# a row lock to sleep on a pthread condition variable, and group commit
# (innodb_flush_log_at_trx_commit=1: every commit waits for its log write
# and fsync) wakes the waiting committers through condition variables.
# About 200 mutex acquisitions per read-write transaction go through the
# shim.
#
# A throwaway server (datadir, socket and no TCP in a private directory)
# runs in lifetimes: "plain" (as installed) and "ursa" (LD_PRELOAD of the
# shim). Rounds alternate the order: plain ursa, ursa plain, ... Each
# lifetime re-creates the tables and runs the same list of sysbench runs,
# by default
#   rw:16    oltp_read_write, 16 clients (8 per core)
#   ps:32    oltp_point_select, 32 clients (read only)
#   upd:32   oltp_update_non_index, 32 clients (a commit, so a log fsync,
#            per statement: group commit)
#   xfer:32  tests/real/xfer.lua, 32 clients moving money between 16 hot
#            accounts (most transactions wait for a row lock)
# each --time URSA_MDB_SECONDS. Checked after every run: sysbench exited 0
# with a non-zero count; no error was ignored but InnoDB's deadlock (1213,
# which oltp_read_write may meet under glibc too; counted and shown); every
# sbtest table still holds its rows (read-write deletes and re-inserts a row
# in one transaction); the transfers' invariants hold over the lifetime:
# sum(bal) = 0, sum(ops) = 2 x the transfers committed. At the end of each
# lifetime CHECK TABLE must say OK for every table. A lost wake-up in a row
# lock wait would end as error 1205 (lock wait timeout, 50 s), which fails
# the run.
#
# Before the timed rounds, one untimed "check" lifetime of the ursa server
# runs with the shim's counters on (URSA_SHIM_STATS=1) to show the calls go
# through ursa. Every ursa lifetime checks that the shim is mapped into the
# server, every plain one that it is not.
#
# Output: per run, each lifetime's tps; then per run the median tps of
# each side and the median of the per-round ratios ursa/plain with
# [min..max]. The exit status says only whether every check passed; tps
# are figures, never assertions.
#
#   URSA_SHIM=path/to/libursa-pthread.so tests/real/mariadb.sh
#   (make shim-mariadb does this)
#
# URSA_SHIM_BASE=path/to/another/libursa-pthread.so: compare two builds of
# the shim instead; the ratio is then ursa / base.
# URSA_MDB_SECONDS (default 8), URSA_MDB_ROUNDS (default 3), URSA_MDB_RUNS
# (default "rw:16 ps:32 upd:32 xfer:32"; MODE:CLIENTS, MODE rw, ps, upd or
# xfer), URSA_MDB_ROWS (rows per sbtest table, 4 tables; default 50000),
# URSA_MDB_SERVER_OPTS (more mariadbd options, e.g.
# "--thread-handling=pool-of-threads": MariaDB's thread pool, whose
# workers sleep on condvars between requests).
# About 6 minutes with the defaults. Needs root (to install mariadb-server
# and sysbench when missing, and to run the server as the user mysql).
set -euo pipefail

shim=${URSA_SHIM:-}
base_shim=${URSA_SHIM_BASE:-}
secs=${URSA_MDB_SECONDS:-8}
rounds=${URSA_MDB_ROUNDS:-3}
runs=${URSA_MDB_RUNS:-"rw:16 ps:32 upd:32 xfer:32"}
rows=${URSA_MDB_ROWS:-50000}
read -ra server_opts <<<"${URSA_MDB_SERVER_OPTS:-}"
here=$(cd "$(dirname "$0")" && pwd)

die() {
	echo "mariadb.sh: $*" >&2
	exit 1
}
# shellcheck source=tests/real/common.sh
. "$here/common.sh"

[ -n "$shim" ] && [ -f "$shim" ] || die "set URSA_SHIM to libursa-pthread.so (got '$shim')"
[ -z "$base_shim" ] || [ -f "$base_shim" ] || die "URSA_SHIM_BASE: no such file '$base_shim'"
[ "$(id -u)" = 0 ] || die "run as root (the server runs as the user mysql)"
other=plain
[ -n "$base_shim" ] && other=base
check_runs URSA_MDB_RUNS "$runs" rw ps upd xfer
[[ $rows =~ ^[1-9][0-9]*$ ]] || die "URSA_MDB_ROWS: bad row count '$rows'"

if ! [ -x /usr/sbin/mariadbd ] || ! command -v sysbench >/dev/null || ! command -v mariadb-install-db >/dev/null; then
	install_packages mariadb-server sysbench
fi
id mysql >/dev/null 2>&1 || die "no user mysql (the mariadb-server package makes it)"

work=$(mktemp -d "${TMPDIR:-/tmp}/ursa-mdb.XXXXXX")
work=$(cd "$work" && pwd -P) # as /proc/PID/maps will name the shims in it
chmod 711 "$work"
copy_shims "$work"
mkdir "$work/srv"
chown mysql "$work/srv"
chmod 700 "$work/srv"
data="$work/srv/data" sock="$work/srv/sock" pidf="$work/srv/pid"

server_pid=
stop_server() {
	[ -n "$server_pid" ] || return 0
	kill "$server_pid" 2>/dev/null || true
	local i
	for ((i = 0; i < 600; i++)); do
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$server_pid" 2>/dev/null; then
		kill -9 "$server_pid" 2>/dev/null || true
		server_pid=
		return 1
	fi
	server_pid=
}
cleanup() {
	stop_server || true
	rm -rf "$work"
}
trap cleanup EXIT

echo "== mariadb-install-db ($(/usr/sbin/mariadbd --version | cut -d' ' -f4))"
runuser -u mysql -- mariadb-install-db --no-defaults --datadir="$data" \
	--auth-root-authentication-method=normal --skip-test-db >"$work/install.log" 2>&1 ||
	{ cat "$work/install.log"; die "mariadb-install-db failed"; }

sql() { mariadb --no-defaults -S "$sock" -u root -N -B "$@"; }
sb() { sysbench --db-driver=mysql --mysql-socket="$sock" --mysql-user=root --mysql-db=sbtest "$@"; }

# lifetime LABEL SIDE STATS SECS: one server lifetime (SIDE plain, base or
# ursa); appends "LABEL RUN TPS" lines to $work/tps.
lifetime() {
	local label=$1 side=$2 stats=$3 t=$4
	local log="$work/$label.err"
	side_env "$side" "$stats"
	rm -f "$sock" "$pidf"
	"${side_env[@]}" runuser -u mysql -- /usr/sbin/mariadbd --no-defaults --datadir="$data" \
		--socket="$sock" --skip-networking --pid-file="$pidf" --log-error="$log" \
		--skip-log-bin --max-connections=$((maxc + 10)) --innodb-buffer-pool-size=512M \
		--innodb-log-file-size=512M --innodb-flush-log-at-trx-commit=1 "${server_opts[@]}" >>"$log" 2>&1 &
	server_pid=$!
	local i
	for ((i = 0; i < 300; i++)); do
		[ -S "$sock" ] && sql -e 'select 1' >/dev/null 2>&1 && break
		kill -0 "$server_pid" 2>/dev/null || { cat "$log"; die "$label: the server exited"; }
		sleep 0.2
	done
	sql -e 'select 1' >/dev/null 2>&1 || { cat "$log"; die "$label: the server did not start"; }
	# runuser forks the server: name the server itself.
	local pid
	pid=$(cat "$pidf")
	server_pid=$pid
	check_mapped "$label" "$side" "$pid"
	sql -e "drop database if exists sbtest; create database sbtest"
	sb --tables=4 --table-size="$rows" oltp_read_write prepare >"$work/$label.prep" 2>&1 ||
		{ cat "$work/$label.prep"; die "$label: sysbench prepare failed"; }
	sb "$here/xfer.lua" prepare >>"$work/$label.prep" 2>&1 ||
		{ cat "$work/$label.prep"; die "$label: xfer prepare failed"; }

	local line="   $label ($side):" r xfers=0
	for r in $runs; do
		local mode=${r%%:*} c=${r#*:} test=(--tables=4 --table-size="$rows") ignore=1213
		case $mode in
		rw) test+=(oltp_read_write) ;;
		ps) test+=(oltp_point_select) ;;
		upd) test+=(oltp_update_non_index) ;;
		xfer) test=("$here/xfer.lua") ignore=none ;;
		esac
		local out="$work/$label.$mode.$c.out"
		if ! sb --threads="$c" --time="$t" --mysql-ignore-errors="$ignore" "${test[@]}" run >"$out" 2>&1; then
			tail -n 20 "$out"
			fail "$label $r: sysbench exited non-zero"
			continue
		fi
		local tps ntx ign
		tps=$(sed -n 's/^ *transactions: *[0-9]* *(\([0-9.]*\) per sec.)/\1/p' "$out")
		ntx=$(sed -n 's/^ *transactions: *\([0-9]*\) .*/\1/p' "$out")
		ign=$(sed -n 's/^ *ignored errors: *\([0-9]*\) .*/\1/p' "$out")
		if [ -z "$tps" ] || [ "${ntx:-0}" = 0 ]; then
			fail "$label $r: no result"
		elif grep -qiE 'fatal|error:' "$out"; then
			fail "$label $r: errors in sysbench's output"
		fi
		[ "$mode" = xfer ] && xfers=$((xfers + ${ntx:-0}))
		local n bal ops
		n=$(sql sbtest -e "select sum(c) from (select count(*) c from sbtest1 union all
			select count(*) from sbtest2 union all select count(*) from sbtest3 union all
			select count(*) from sbtest4) t")
		[ "$n" = $((4 * rows)) ] || fail "$label $r: the sbtest tables hold $n rows, not $((4 * rows))"
		read -r bal ops < <(sql sbtest -e "select sum(bal), sum(ops) from acct")
		if [ "$bal" != 0 ] || [ "$ops" != $((2 * xfers)) ]; then
			fail "$label $r: INCONSISTENT transfers (sum(bal) $bal, sum(ops) $ops for $xfers transfers)"
		fi
		echo "$label $r ${tps:-0}" >>"$work/tps"
		line+=" $r ${tps:-?}"
		[ "${ign:-0}" != 0 ] && line+=" (${ign} deadlocks)"
	done
	echo "$line"
	local bad
	bad=$(sql sbtest -e "check table sbtest1, sbtest2, sbtest3, sbtest4, acct" |
		awk -F'\t' '$3 == "status" && $4 != "OK"')
	[ -z "$bad" ] || fail "$label: CHECK TABLE: $bad"
	stop_server || fail "$label: the server did not stop within 60 s"
	if [ "$stats" = 1 ]; then
		local counts
		counts=$(grep -h '^ursa-pthread\[' "$log" | tail -n 1 || true)
		echo "   $label: ${counts:-no shim report}"
		echo "$counts" | grep -qE 'mutex_lock=[1-9]' && echo "$counts" | grep -qE 'cond_(timed)?wait=[1-9]' ||
			fail "$label: SHIM NOT USED ($counts)"
	fi
}

echo "== sysbench, 4 tables x $rows rows and 16 hot accounts, --time $secs, runs: $runs; $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
[ "${#server_opts[@]}" = 0 ] || echo "== mariadbd ${server_opts[*]}"
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
echo "== sysbench tps, $rounds rounds in alternating order; ratio = ursa / $other per round: median [min..max]"
echo "   load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$here/ab_table.py" "$work/tps" "$rounds" "$runs" "$other"
[ "$failures" = 0 ] || die "$failures check(s) FAILED"
echo "== MariaDB on libursa-pthread: every run consistent, no errors"
