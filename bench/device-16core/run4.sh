#!/bin/bash
cd "$(dirname "$0")"
O=$OUT; LDS=(./lib/ld-linux-x86-64.so.2 --library-path ./var/S:./lib)
{ date -u; nproc; cat /proc/loadavg; } > $O/env.txt
for e in "X_LETRUN=16" "X_LETRUN=0" "X_FINE=30 X_BACKOFF=256"; do for T in 8 32; do for cs in 0 4; do
 echo "$e :: $(env URSA_MSTATS=1 $e timeout 20 "${LDS[@]}" ./bin/mx ursa $T $cs 0.3 2>&1 | tr '\n' ' ')" >> $O/stats.txt
done; done; done
echo "stats done $(date -u)" >> $O/env.txt
MX=./bin/mx LDP=./lib/ld-linux-x86-64.so.2 timeout 400 python3 bin/ab.py ./var/A:./lib "main;X_LETRUN=0;X_LETRUN=256;X_FINE=30 X_BACKOFF=256;X_FINE=30 X_BACKOFF=256 X_LETRUN=0;X_FINE=40 X_BACKOFF=64 X_PY=1;X_FINE=20 X_BACKOFF=128 X_LETRUN=0" 4,8,16,32,64 0,2,3,4 2 0.3 > $O/ab2.txt 2>&1
echo "ab done rc=$? $(date -u) $(cat /proc/loadavg)" >> $O/env.txt
