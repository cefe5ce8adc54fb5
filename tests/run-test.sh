#!/bin/sh
# Test driver wrapper: every Criterion binary runs under a per-test timeout
# (Criterion's --timeout) and a whole-binary wall-clock bound, so a lost
# wakeup shows up as a failure, never as a hung `make check`.
per_test=${URSA_TEST_TIMEOUT:-60}
whole=${URSA_SUITE_TIMEOUT:-600}
exec timeout -k 10 "$whole" "$@" --timeout "$per_test" -j"${URSA_TEST_JOBS:-2}" --short-filename
