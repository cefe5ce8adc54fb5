#!/bin/sh
# tests/abi/check-symbols.sh — libursa exports exactly what it declares.
#
# Three lists must agree:
#   exported  the dynamic symbols libursa.so defines (nm -D), each in a
#             version node of lib/ursa.map (name@@URSA_x.y);
#   map       the names listed in lib/ursa.map (no wildcards);
#   declared  the functions declared URSA_API in include/.
# An export without a declaration, a declaration without an export, a
# map line for nothing, an unversioned export or a name outside ursa_*
# fails the test and prints the difference.
#
# Usage: check-symbols.sh [LIBURSA.so]   (run from the build tree by make
# check; srcdir is the source tree, default: this script's ../..)
# Exit: 0 agree, 1 differ, 77 nm or perl missing, 99 the library was not built.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=${srcdir:+$(cd "$srcdir" && pwd)}
top=${top:-$(cd "$here/../.." && pwd)}
lib=${1:-lib/.libs/libursa.so}
map=$top/lib/ursa.map
NM=${NM:-nm}

command -v "$NM" >/dev/null 2>&1 || { echo "SKIP: $NM missing (apt-get install binutils)"; exit 77; }
command -v perl >/dev/null 2>&1 || { echo "SKIP: perl missing"; exit 77; }
. "$here/lib.sh"
abi_setup check-symbols

# Every defined dynamic symbol except the version nodes' own (type A).
"$NM" -D --defined-only "$lib" | awk '$2 != "A" { print $3 }' | sort >"$tmp/raw"
sed 's/@.*//' "$tmp/raw" | sort -u >"$tmp/exported"
# The map without its comments; its names: the "name;" lines of the
# global: parts (not the local: *; line).
perl -0777 -pe 's{/\*.*?\*/}{ }gs' "$map" >"$tmp/map.txt"
sed -n 's/^[[:space:]]*\([A-Za-z_][A-Za-z0-9_]*\)[[:space:]]*;[[:space:]]*$/\1/p' "$tmp/map.txt" | sort -u >"$tmp/map"
# Functions declared URSA_API: the identifier before the first "(" of each
# URSA_API declaration (which may span lines).
headers=$(ls "$top"/include/*.h "$top"/include/ursa/*.h 2>/dev/null)
# (perl: comments and preprocessor lines out, then one declaration a line.)
cat $headers | perl -0777 -ne 's{/\*.*?\*/}{ }gs; s{^[ \t]*#.*$}{}mg; s{\s+}{ }g;
	print "$1\n" while /URSA_API\b[^;{(]*?\b([A-Za-z_]\w*)\s*\(/g' | sort -u >"$tmp/declared"

fail=0
report() { # title file
	[ -s "$2" ] || return 0
	echo "FAIL: $1:"
	sed 's/^/  /' "$2"
	fail=1
}
comm -23 "$tmp/exported" "$tmp/declared" >"$tmp/d"; report "exported by $lib but declared nowhere in include/" "$tmp/d"
comm -13 "$tmp/exported" "$tmp/declared" >"$tmp/d"; report "declared URSA_API in include/ but not exported (add it to lib/ursa.map's newest node)" "$tmp/d"
comm -13 "$tmp/exported" "$tmp/map" >"$tmp/d"; report "listed in lib/ursa.map but not in the library" "$tmp/d"
comm -23 "$tmp/exported" "$tmp/map" >"$tmp/d"; report "exported but not listed in lib/ursa.map" "$tmp/d"
grep -v '@@URSA_[0-9][0-9.]*$' "$tmp/raw" >"$tmp/d"; report "exports without a URSA_x.y version node" "$tmp/d"
grep -v '^ursa_' "$tmp/exported" >"$tmp/d"; report "exports outside the ursa_ prefix" "$tmp/d"
grep '[*?]' "$tmp/map.txt" | grep -v '^[[:space:]]*\(local:\)\{0,1\}[[:space:]]*\*;[[:space:]]*$' >"$tmp/d"; report "wildcards in lib/ursa.map (list every name)" "$tmp/d"
# configure takes its version from <ursa/common.h>; after a bump there,
# autoreconf, or the package and the headers disagree.
pv=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' config.h 2>/dev/null)
hv=$(sed -n 's/^#define URSA_VERSION_STRING "\(.*\)"$/\1/p' "$top/include/ursa/common.h")
if [ -n "$pv" ] && [ "$pv" != "$hv" ]; then
	echo "FAIL: configure's version $pv is not URSA_VERSION_STRING $hv (rerun autoreconf -fi)"
	fail=1
fi

n=$(wc -l <"$tmp/exported")
[ $fail -eq 0 ] && echo "check-symbols: $n exports = lib/ursa.map = URSA_API declarations in include/"
exit $fail
