#!/bin/bash
# quota runs: A = URSA_TEST_CPUS=1 (what the cgroup limit gives), B = 2 (affinity only)
cd /work/main
echo $$ > /sys/fs/cgroup/cpu/q1/cgroup.procs
i=0
for v in A B B A; do
  i=$((i+1))
  if [ $v = A ]; then c=1; else c=2; fi
  URSA_TEST_CPUS=$c LD_LIBRARY_PATH=build/lib/.libs build/bench/.libs/ursa-bench --scenario contention --threads 16 --reps 3 --csv /tmp/m/cg/q1-$v-$i.csv > /tmp/m/cg/q1-$v-$i.txt 2>&1
  echo "$(date +%T) done $v $i"
done
