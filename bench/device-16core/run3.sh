#!/bin/bash
cd "$(dirname "$0")"
O=$OUT; LDA=(./lib/ld-linux-x86-64.so.2 --library-path ./var/A:./lib); LDS=(./lib/ld-linux-x86-64.so.2 --library-path ./var/S:./lib)
{ date -u; nproc; grep -m1 "model name" /proc/cpuinfo; cat /proc/loadavg; } > $O/env.txt
# 1. stats at a few points, main's policy and a backoff spin
for e in "X_YIELDS=16" "X_FINE=100 X_BACKOFF=64" "X_YIELDS=0"; do for T in 8 16 64; do for cs in 0 2; do
 echo "$e :: $(env URSA_MSTATS=1 $e timeout 20 "${LDS[@]}" ./bin/mx ursa $T $cs 0.4 2>&1 | tr '\n' ' ')" >> $O/stats.txt
done; done; done
echo "stats done $(date -u)" >> $O/env.txt
# 2. variants A/B with glibc, two rounds, order flipped
V=("glibc" "X_YIELDS=16" "X_YIELDS=0" "X_YIELDS=4" "X_FINE=100 X_BACKOFF=64" "X_FINE=300 X_BACKOFF=16" "X_FINE=30 X_BACKOFF=256" "X_FINE=200" "X_FINE=100 X_BACKOFF=64 X_GATE=1")
for r in 1 2; do
 if [ $r = 1 ]; then idx=$(seq 0 8); else idx=$(seq 8 -1 0); fi
 for T in 4 8 16 32 64; do for cs in 0 1 2; do for i in $idx; do e=${V[$i]}
  if [ "$e" = glibc ]; then res=$(timeout 20 "${LDA[@]}" ./bin/mx glibc $T $cs 0.35 2>&1); else res=$(env $e timeout 20 "${LDA[@]}" ./bin/mx ursa $T $cs 0.35 2>&1); fi
  echo "r$r|$e|$T|$cs|$res" >> $O/ab.txt
 done; done; done
done
echo "ab done $(date -u) $(cat /proc/loadavg)" >> $O/env.txt
# 3. the matrix's mutex points, same run as nsync/absl: main policy, then backoff spin
timeout 100 "${LDA[@]}" ./bin/ursa-bench --scenario contention --workloads mutex --sections empty,1us --threads 64 --reps 3 --duration 0.2 --csv $O/cont-A.csv > $O/cont-A.txt 2>&1
echo "contA rc=$? $(date -u)" >> $O/env.txt
X_FINE=100 X_BACKOFF=64 timeout 100 "${LDA[@]}" ./bin/ursa-bench --scenario contention --workloads mutex --sections empty,1us --threads 64 --reps 3 --duration 0.2 --csv $O/cont-B.csv > $O/cont-B.txt 2>&1
echo "contB rc=$? $(date -u) $(cat /proc/loadavg)" >> $O/env.txt
