#!/bin/sh
# tests/abi/check-probes.sh — the USDT probes are the ones documented.
#
# Four lists of probe names must agree:
#   listed    lib/trace.h's comment, "Probes (arguments in order):";
#   manual    man/ursa.7's list (\fBname\fP(...));
#   placed    the URSA_TRACE(name, ...) calls in lib/ and kernel/;
#   built     libursa.so's .note.stapsdt notes of provider "ursa" (readelf
#             -n), when configure found <sys/sdt.h>; a library built
#             without it must have none.
# Each probe's argument count in trace.h's list must also be the count
# its note records. A probe placed but not documented, documented but not
# placed, or built with other arguments fails the test and prints the
# difference.
#
# Usage: check-probes.sh [LIBURSA.so]   (run from the build tree by make
# check; srcdir is the source tree, default: this script's ../..)
# Exit: 0 agree, 1 differ, 77 readelf missing, 99 the library was not built.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=${srcdir:+$(cd "$srcdir" && pwd)}
top=${top:-$(cd "$here/../.." && pwd)}
lib=${1:-lib/.libs/libursa.so}
READELF=${READELF:-readelf}

command -v "$READELF" >/dev/null 2>&1 || { echo "SKIP: $READELF missing (apt-get install binutils)"; exit 77; }
. "$here/lib.sh"
abi_setup check-probes

# trace.h: "name(a, b)" entries between "Probes" and the "(_begin:" note,
# as "name count".
sed -n '/^ \* Probes (arguments in order):/,/^ \* (_begin:/p' "$top/lib/trace.h" |
	grep -o '[a-z_][a-z_0-9]*([a-z, ]*)' |
	awk -F'(' '{ args = $2; sub(/\)$/, "", args); n = args == "" ? 0 : split(args, a, ","); print $1, n }' |
	sort -u >"$tmp/listed-args"
cut -d' ' -f1 "$tmp/listed-args" >"$tmp/listed"
sed -n '/^The probes, with their arguments:/,/^\.PP/p' "$top/man/ursa.7" |
	grep -o '^\\fB[a-z_][a-z_0-9]*\\fP(\|, \\fB[a-z_][a-z_0-9]*\\fP(' |
	sed 's/.*\\fB\([a-z_0-9]*\)\\fP(/\1/' | sort -u >"$tmp/manual"
cat "$top"/lib/*.c "$top"/lib/*.h "$top"/kernel/*.c "$top"/kernel/*.h |
	grep -v '^#define URSA_TRACE\|^ \* URSA_TRACE' |
	grep -o 'URSA_TRACE([a-z_][a-z_0-9]*' | sed 's/URSA_TRACE(//' | sort -u >"$tmp/placed"

status=0
differ() { # name-a file-a name-b file-b
	if ! cmp -s "$2" "$4"; then
		echo "check-probes: $1 and $3 differ (< $1, > $3):"
		diff "$2" "$4" | grep '^[<>]'
		status=1
	fi
}
differ "lib/trace.h's list" "$tmp/listed" "man/ursa.7's list" "$tmp/manual"
differ "lib/trace.h's list" "$tmp/listed" "the URSA_TRACE calls" "$tmp/placed"

# The library's notes: "name count" for provider ursa.
"$READELF" -n "$lib" | awk '
	/Provider:/ { prov = $2 }
	/Name:/ && prov == "ursa" { name = $2 }
	/Arguments:/ && prov == "ursa" { print name, NF - 1; prov = "" }
	/Arguments:$/ && prov == "ursa" { print name, 0; prov = "" }' |
	sort -u >"$tmp/built-args"
if grep -q '^#define HAVE_SYS_SDT_H 1' config.h 2>/dev/null; then
	differ "lib/trace.h's list (name, arguments)" "$tmp/listed-args" \
		"$lib's probes (name, arguments)" "$tmp/built-args"
elif [ -s "$tmp/built-args" ]; then
	echo "check-probes: built without <sys/sdt.h>, yet $lib has probes:"
	cat "$tmp/built-args"
	status=1
fi
[ "$status" = 0 ] && echo "check-probes: $(wc -l <"$tmp/listed") probes listed, placed, documented and built alike"
exit $status
