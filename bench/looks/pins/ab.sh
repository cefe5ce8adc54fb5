#!/bin/bash
cd /work/main
for x in old2 new2 new3 old3; do
  case $x in old*) L=/tmp/oldlib/b/lib/.libs;; new*) L=build/lib/.libs;; esac
  LD_LIBRARY_PATH=$L build/bench/.libs/ursa-bench --scenario contention --workloads mutex --threads 16 --reps 3 --csv /tmp/pin/$x.csv >/tmp/pin/$x.txt 2>&1
  echo "$x done $(date +%T) $(uptime)"
done
