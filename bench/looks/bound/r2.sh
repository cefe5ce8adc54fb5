#!/bin/bash
# r2.sh "variants" "threads" iters secs rounds [yield] [cpus]; variant: cur | oK | tB | oKtB  (X_ONE=K, X_TB=B us)
KS=$1; TS=$2; IT=$3; S=$4; R=$5; Y=$6; C=${7:-0}
for T in $TS; do for r in $(seq $R); do
 L="glibc $KS"; if [ $((r%2)) = 0 ]; then L=$(echo $L | tr ' ' '\n' | tac | tr '\n' ' '); fi
 for k in $L; do
  E=""; o=$(echo $k | grep -o 'o[0-9]*' | tr -d o); t=$(echo $k | grep -o 't[0-9]*' | tr -d t)
  [ -n "$o" ] && E="$E X_ONE=$o"; [ -n "$t" ] && E="$E X_TB=$t"
  if [ $k = glibc ]; then B="/tmp/m/v/base/mx glibc"; else B="/tmp/m/v/x1/mx ursa"; fi
  out=$(env $E MX_WORK=alu ${Y:+MX_YIELD=1} taskset -c $C $B $T $IT $S)
  echo "T=$T $k $(echo $out | grep -o 'ops/s=[0-9]*' | cut -d= -f2) $(echo $out | grep -o 'minshare=[0-9.]*' | cut -d= -f2)"
 done; done; done | awk '{k=$1" "$2; a[k]=a[k]" "$3; s[k]=s[k]" "$4} END{for(k in a) print k, "ops:", a[k], " share:", s[k]}' | sort -t= -k2n
