# ABI: libursa.so exports exactly the names of lib/ursa.map, and those are
# exactly the URSA_API declarations of include/.
TESTS += tests/abi/check-symbols.sh
EXTRA_DIST += tests/abi/check-symbols.sh
