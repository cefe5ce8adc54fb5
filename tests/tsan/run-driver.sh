#!/bin/sh
# Run the plain-C driver (tests/tsan/tsan_driver.c) from the build tree under
# a wall-clock bound: a lost wakeup must fail, never hang `make check`.
# Extra arguments go to the driver (e.g. -s 4 for four times the iterations).
drv=${URSA_TSAN_DRIVER:-tests/tsan/tsan_driver}
[ -x "$drv" ] || { echo "run-driver.sh: $drv not built" >&2; exit 99; }
exec timeout -k 10 "${URSA_SUITE_TIMEOUT:-900}" "$drv" "$@"
