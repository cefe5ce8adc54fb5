# shellcheck shell=bash
# tests/real/common.sh — sourced by postgres.sh, mariadb.sh and
# mariadb-mtr.sh: what their A/B rounds share. The caller defines die()
# and sets shim (and base_shim, maybe empty) before calling these.

# install_packages PKG...: apt-get install, once more after an update if
# that fails. A server package would start its own server from its init
# script: policy-rc.d keeps them from starting anything meanwhile (only if
# the machine has none; removed after).
install_packages() {
	echo "== installing $*"
	export DEBIAN_FRONTEND=noninteractive
	local policy='' ok=1
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		policy=/usr/sbin/policy-rc.d
	fi
	apt-get install -y -q "$@" >/dev/null ||
		{ apt-get update -q >/dev/null && apt-get install -y -q "$@" >/dev/null; } || ok=0
	[ -z "$policy" ] || rm -f "$policy"
	[ "$ok" = 1 ] || die "could not install $*"
}

# check_runs NAME RUNS MODE...: every MODE:CLIENTS of RUNS names a MODE and
# a client count; sets maxc, the largest count.
check_runs() {
	local name=$1 list=$2 r m c
	shift 2
	maxc=0
	for r in $list; do
		m=${r%%:*} c=${r#*:}
		[[ " $* " == *" $m "* ]] || die "$name: unknown mode '$m' in '$r' ($*)"
		[[ $c =~ ^[1-9][0-9]*$ ]] || die "$name: bad client count in '$r'"
		[ "$c" -gt "$maxc" ] && maxc=$c
	done
	return 0
}

# copy_shims DIR: copies of the shim (and the base shim) that any server
# user can read, whatever the build tree's modes; shim and base_shim then
# name them (as /proc/PID/maps will).
copy_shims() {
	local dir=$1
	cp "$shim" "$dir/libursa-pthread.so"
	chmod 755 "$dir/libursa-pthread.so"
	shim="$dir/libursa-pthread.so"
	if [ -n "${base_shim:-}" ]; then
		mkdir "$dir/base"
		cp "$base_shim" "$dir/base/libursa-pthread.so"
		chmod 755 "$dir/base" "$dir/base/libursa-pthread.so"
		base_shim="$dir/base/libursa-pthread.so"
	fi
}

# side_env SIDE STATS: sets the array side_env to the env(1) command line
# that starts a server of SIDE (plain, base or ursa), with the shim's
# counters on if STATS is 1.
side_env() {
	side_env=(env)
	[ "$1" = ursa ] && side_env+=(LD_PRELOAD="$shim")
	[ "$1" = base ] && side_env+=(LD_PRELOAD="$base_shim")
	[ "$2" = 1 ] && side_env+=(URSA_SHIM_STATS=1)
	return 0
}

# check_mapped LABEL SIDE PID: the server process PID has the shim of its
# side mapped, and a plain one has none.
check_mapped() {
	local label=$1 side=$2 pid=$3
	if [ "$side" = ursa ]; then
		grep -qF "$shim" "/proc/$pid/maps" || die "$label: the shim is not mapped into the server"
	elif [ "$side" = base ]; then
		grep -qF "$base_shim" "/proc/$pid/maps" || die "$label: the base shim is not mapped into the server"
	elif grep -q libursa-pthread "/proc/$pid/maps"; then
		die "$label: the shim is mapped into the plain server"
	fi
}

failures=0
fail() {
	echo "   FAILED: $*"
	failures=$((failures + 1))
}
