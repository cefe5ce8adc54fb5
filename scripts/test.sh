#!/usr/bin/env bash
# The test command: install what is missing, build, run `make check`.
set -euo pipefail
usage() {
	cat <<'USAGE'
Usage: scripts/test.sh [-h|--help]

Installs the missing Debian packages (scripts/deps.sh), builds in build/
(scripts/build.sh) and runs `make check` there; on a failure prints the
end of each failing suite's log and exits 1.
  -h, --help  this text
USAGE
}
case ${1:-} in
-h | --help) usage; exit 0 ;;
'') ;;
*) echo "test.sh: takes no arguments, not '$1' (see --help)" >&2; exit 2 ;;
esac
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/deps.sh"
"$top/scripts/build.sh" build
cd "$top/build"
if ! make -j"$(nproc)" check; then
	# Show the failing suites' logs, then fail.
	for f in $(find tests -name '*.log' ! -name 'test-suite.log'); do
		grep -q -E '^(FAIL|ERROR)' "${f%.log}.trs" 2>/dev/null && { echo "=== $f"; tail -50 "$f"; }
	done
	exit 1
fi
