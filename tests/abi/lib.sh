# tests/abi/lib.sh — sourced by the ABI checks (check-symbols.sh,
# check-probes.sh) after they set $lib. abi_setup NAME: $lib must be a
# built shared libursa (exit 77 when configured --disable-shared, 99 when
# it was not built); $tmp becomes a scratch directory removed on exit.
abi_setup() {
	if [ ! -f "$lib" ]; then
		[ -f lib/libursa.la ] && grep -q "^dlname=''" lib/libursa.la &&
			{ echo "SKIP: no shared libursa (configured --disable-shared)"; exit 77; }
		echo "$1: $lib not built" >&2
		exit 99
	fi
	tmp=$(mktemp -d) || exit 99
	trap 'rm -rf "$tmp"' EXIT
}
