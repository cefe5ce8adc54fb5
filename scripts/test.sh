#!/usr/bin/env bash
# The test command: install what is missing, build, run `make check`.
set -euo pipefail
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
