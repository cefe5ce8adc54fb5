#!/bin/bash
cd /work/main
for x in cold1 cnew1 cnew2 cold2; do
  case $x in cold*) L=/tmp/oldlib/b/lib/.libs;; cnew*) L=build/lib/.libs;; esac
  LD_LIBRARY_PATH=$L build/bench/.libs/ursa-bench --scenario contention --workloads cond,sem --threads 16 --reps 3 --csv /tmp/pin/$x.csv >/tmp/pin/$x.txt 2>&1
  echo "$x done $(date +%T) $(uptime)"
done
