# ABI: libursa.so exports exactly the names of lib/ursa.map, and those are
# exactly the URSA_API declarations of include/.
TESTS += tests/abi/check-symbols.sh
EXTRA_DIST += tests/abi/check-symbols.sh tests/abi/lib.sh

# USDT probes: the ones lib/trace.h and man/ursa.7 list are the ones the
# code places and the library carries, with the listed arguments.
TESTS += tests/abi/check-probes.sh
EXTRA_DIST += tests/abi/check-probes.sh
