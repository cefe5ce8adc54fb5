#!/usr/bin/env bash
# tests/real/mariadb-mtr.sh — MariaDB's own test suite with the server on
# libursa-pthread.
#
# mariadb-test-run (Debian's mariadb-test package) starts its servers with
# LD_PRELOAD of the shim (--mysqld-env), so every mutex, condvar and rwlock
# of the server under test is ursa's: its tests of locking, killing,
# flushing, deadlock detection, purge and crash recovery check the server's
# results. A test that fails with the shim is run again on the plain server:
# one that fails there too is this machine's (a test that needs something
# missing here), not the shim's, and is listed apart. The script fails if
# any test fails with the shim alone, or if the shim was not loaded.
#
#   URSA_SHIM=path/to/libursa-pthread.so tests/real/mariadb-mtr.sh
#   (make shim-mariadb-mtr does this)
#
# URSA_MTR_SUITES (default "main innodb"), URSA_MTR_DO_TEST (a --do-test
# pattern to run only some of them; default all), URSA_MTR_PARALLEL (default
# 4). About 14 minutes with the defaults on 2 cores. Needs root (to install
# mariadb-test when missing; the test servers run as root).
set -euo pipefail

shim=${URSA_SHIM:-}
suites=${URSA_MTR_SUITES:-main innodb}
do_test=${URSA_MTR_DO_TEST:-}
par=${URSA_MTR_PARALLEL:-4}

die() {
	echo "mariadb-mtr.sh: $*" >&2
	exit 1
}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/real/common.sh
. "$here/common.sh"

[ -n "$shim" ] && [ -f "$shim" ] || die "set URSA_SHIM to libursa-pthread.so (got '$shim')"
[ "$(id -u)" = 0 ] || die "run as root"
[[ $par =~ ^[1-9][0-9]*$ ]] || die "URSA_MTR_PARALLEL: bad count '$par'"
mtr=/usr/share/mysql/mysql-test/mariadb-test-run
if [ ! -x "$mtr" ]; then
	install_packages mariadb-test
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ursa-mtr.XXXXXX")
work=$(cd "$work" && pwd -P)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
copy_shims "$work"

# run NAME PRELOAD ARGS...: one mariadb-test-run; its log in $work/NAME.log.
run() {
	local name=$1 pre=$2
	shift 2
	local env=()
	[ -n "$pre" ] && env=(--mysqld-env=LD_PRELOAD="$pre" --mysqld-env=URSA_SHIM_STATS=1)
	(cd "$(dirname "$mtr")" && perl "$mtr" --user=root --force --max-test-fail=0 \
		--parallel="$par" --testcase-timeout=5 --vardir="$work/var-$name" "${env[@]}" "$@") \
		>"$work/$name.log" 2>&1 || true
	grep -E '^Completed|^Failed|were skipped' "$work/$name.log" | sed 's/^/   /' || true
}

# failed LOG: the names of the tests that failed in a log, one a line.
failed() {
	sed -n 's/^\([a-z_0-9]*\.[^ ]*\) .*\[ fail \].*/\1/p' "$1" | sed 's/ .*//' | sort -u
}

args=(--suite="${suites// /,}")
[ -n "$do_test" ] && args+=(--do-test="$do_test")
echo "== MariaDB's tests, the servers on the shim: ${args[*]}; $(nproc) cores"
run shim "$shim" "${args[@]}"
grep -q "ursa-pthread\[" -r "$work/var-shim" --include='mysqld*.err' ||
	die "no server reported the shim's counters: the shim was not loaded"
passed=$(grep -c '\[ pass \]' "$work/shim.log" || true)
failed "$work/shim.log" >"$work/failed"
[ "${passed:-0}" -gt 0 ] || [ -s "$work/failed" ] || { tail -n 30 "$work/shim.log"; die "no test ran"; }
echo "   $passed test runs passed with the shim"

shim_only=()
if [ -s "$work/failed" ]; then
	mapfile -t f <"$work/failed"
	echo "== ${#f[@]} failed with the shim; again on the plain server: ${f[*]}"
	run plain "" "${f[@]}"
	mapfile -t again < <(failed "$work/plain.log")
	for t in "${f[@]}"; do
		if printf '%s\n' "${again[@]}" | grep -qxF "$t"; then
			echo "   $t: fails on the plain server too (this machine's, not the shim's)"
		else
			shim_only+=("$t")
			echo "   $t: FAILS ONLY WITH THE SHIM"
			grep -A30 "^$t .*\[ fail \]" "$work/shim.log" | head -40 || true
		fi
	done
fi
[ "${#shim_only[@]}" = 0 ] || die "${#shim_only[@]} test(s) failed with the shim alone: ${shim_only[*]}"
echo "== MariaDB's tests on libursa-pthread: no failure of the shim's"
