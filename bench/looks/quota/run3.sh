#!/bin/bash
# rw95/rw50 rows under the 1-CPU quota: A = lock spin 2 rounds (as it is), B = 1 round (URSA_LSR=1)
cd /work/main
for where in q; do
 if [ $where = q ]; then echo $$ > /sys/fs/cgroup/cpu/q1/cgroup.procs; else echo $$ > /sys/fs/cgroup/cpu/cgroup.procs; fi
 i=0
 for v in A B B A; do
  i=$((i+1))
  if [ $v = A ]; then e=URSA_LSR=2; else e=URSA_LSR=1; fi
  env $e LD_LIBRARY_PATH=/tmp/m/v/qr1 build/bench/.libs/ursa-bench --scenario contention --workloads rw95,rw50 --threads 16 --reps 3 --csv /tmp/m/cg/lsr-$where-$v-$i.csv > /tmp/m/cg/lsr-$where-$v-$i.txt 2>&1
  echo "$(date +%T) done $where $v $i"
 done
done
