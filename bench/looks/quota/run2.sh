#!/bin/bash
# quota 1 CPU: A = the library as it is, B = the same with the lock spin off (URSA_NOSPIN)
cd /work/main
echo $$ > /sys/fs/cgroup/cpu/q1/cgroup.procs
i=0
for v in A B B A; do
  i=$((i+1))
  if [ $v = A ]; then e=; else e=URSA_NOSPIN=1; fi
  env $e LD_LIBRARY_PATH=/tmp/m/v/qns build/bench/.libs/ursa-bench --scenario contention --workloads mutex,rw95,rw50 --threads 16 --reps 3 --csv /tmp/m/cg/ns-$v-$i.csv > /tmp/m/cg/ns-$v-$i.txt 2>&1
  echo "$(date +%T) done $v $i"
done
