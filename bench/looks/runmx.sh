#!/bin/bash
# runmx.sh "VARIANTS" "THREADS" ITERS SECS ROUNDS [yield]  -> alternating order, prints ops/s per variant
VARS=$1; TS=$2; IT=$3; S=$4; R=$5; Y=$6
for T in $TS; do
 for r in $(seq $R); do
  L=$VARS; if [ $((r%2)) = 0 ]; then L=$(echo $VARS | tr ' ' '\n' | tac | tr '\n' ' '); fi
  for v in $L; do
   if [ "$v" = glibc ] || [ "$v" = nsync ] || [ "$v" = absl ]; then b=/tmp/m/v/base/mx; im=$v; else b=/tmp/m/v/$v/mx; im=ursa; fi
   o=$(env MX_WORK=alu ${Y:+MX_YIELD=1} $b $im $T $IT $S)
   echo "T=$T $v $(echo $o | grep -o 'ops/s=[0-9]*' | cut -d= -f2) $(echo $o | grep -o 'minshare=[0-9.]*')"
  done
 done
done | awk '{k=$1" "$2; a[k]=a[k]" "$3; s[k]=$4} END{for(k in a) print k, a[k], s[k]}' | sort -t= -k2n
