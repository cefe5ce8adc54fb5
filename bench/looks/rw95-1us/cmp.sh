#!/bin/bash
# bench/looks/rw95-1us/cmp.sh "VARIANTS" "ARGS;ARGS..." ROUNDS — runs
# /tmp/rw (bench/rwphase/rw.c) for each variant (glibc, or a directory
# /tmp/NAME holding a libursa.so.0 built from a copy of lib/) per round,
# the order reversed every other round; prints each argument set's median
# ops/s and least-served share per variant. Scratch.
# cmp.sh "variants" "argsets" rounds : alternating order; prints ops/s per variant per argset
vars=($1); IFS=';' read -ra sets <<< "$2"; R=${3:-2}
for a in "${sets[@]}"; do
  for r in $(seq $R); do
    if (( r % 2 )); then order="${vars[@]}"; else order=$(printf '%s\n' "${vars[@]}" | tac | tr '\n' ' '); fi
    for v in $order; do
      if [ $v = glibc ]; then o=$(LD_LIBRARY_PATH=/tmp/base /tmp/rw glibc $a); else o=$(LD_LIBRARY_PATH=/tmp/$v /tmp/rw ursa $a); fi
      echo "$a|$v|$(echo $o | sed 's/.*ops.s=\([0-9]*\) minshare=\(.*\)/\1 \2/')"
    done
  done
done | python3 -c '
import sys,collections,statistics
d=collections.defaultdict(list)
for l in sys.stdin:
    a,v,x=l.strip().split("|"); o,s=x.split(); d[(a,v)].append((int(o),float(s)))
sets=[]; vs=[]
for (a,v) in d:
    if a not in sets: sets.append(a)
    if v not in vs: vs.append(v)
for a in sets:
    print(a.ljust(14), "  ".join("%s %6.0fk %.2f" % (v, statistics.median(o for o,s in d[(a,v)])/1e3, statistics.median(s for o,s in d[(a,v)])) for v in vs))
'
