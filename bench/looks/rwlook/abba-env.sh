#!/bin/bash
# abba-env.sh OUT "args" LIB "ENV for B"  (A: no env; taskset -c 0)
out=$1; args=$2; L=$3; envb=$4; mkdir -p $out
cd /work/main
i=0
for s in A B B A; do i=$((i+1))
  if [ $s = B ]; then e="$envb"; else e=""; fi
  env $e LD_LIBRARY_PATH=$L taskset -c 0 build/bench/.libs/ursa-bench --scenario contention $args --csv $out/run$i-$s.csv > $out/run$i-$s.out 2>&1
done
echo done > $out/DONE
