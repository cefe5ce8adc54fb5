#!/bin/bash
# runrw.sh "VARIANTS" "THREADS" WPCT ITER SECS ROUNDS
VARS=$1; TS=$2; W=$3; IT=$4; S=$5; R=$6
for T in $TS; do
 for r in $(seq $R); do
  L=$VARS; if [ $((r%2)) = 0 ]; then L=$(echo $VARS | tr ' ' '\n' | tac | tr '\n' ' '); fi
  for v in $L; do
   if [ "$v" = glibc ] || [ "$v" = nsync ]; then b=/tmp/m/v/base/rw; im=$v; else b=/tmp/m/v/$v/rw; im=ursa; fi
   o=$($b $im $T $W $S $IT)
   echo "T=$T $v $(echo $o | grep -o 'ops/s=[0-9]*' | cut -d= -f2) $(echo $o | grep -o 'minshare=[0-9.]*')"
  done
 done
done | awk '{k=$1" "$2; a[k]=a[k]" "$3; s[k]=$4} END{for(k in a) print k, a[k], s[k]}' | sort -t= -k2n
