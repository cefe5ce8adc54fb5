#!/bin/bash
# bench/looks/semcommit.sh ROUNDS SECONDS [ursa-commit options, e.g. --no-sync]
# ursa-commit --engine sem (a pthread mutex for the list, a sem_t per
# backend, 16 processes) plainly (P), under LD_PRELOAD of a base shim (B)
# and of a new one (N), in the order P B N, N B P, P B N, ...; prints the
# medians [min..max] of each and the per-round ratios N/B.
#   BIN=build/bench/ursa-commit BASE=/path/to/base/libursa-pthread.so \
#   NEW=build/lib/shim/.libs/libursa-pthread.so OUT=/tmp/gc TAG=ns \
#   bench/looks/semcommit.sh 4 5 --no-sync
R=$1; S=$2; shift 2
BIN=${BIN:-build/bench/ursa-commit}
OUT=${OUT:-/tmp/gc}
mkdir -p "$OUT"
for k in $(seq 1 "$R"); do
	if ((k % 2)); then order="P B N"; else order="N B P"; fi
	for o in $order; do
		case $o in P) pre= ;; B) pre=$BASE ;; N) pre=$NEW ;; esac
		LD_PRELOAD=$pre "$BIN" --engine sem --seconds "$S" --rounds 1 --warmup 0.5 \
			--dir "$OUT" --csv "$OUT/$o-$k$TAG.csv" "$@" >/dev/null 2>&1
		grep -q 'consistent,1' "$OUT/$o-$k$TAG.csv" || echo "NOT CONSISTENT: $OUT/$o-$k$TAG.csv"
	done
done
python3 - "$R" "$TAG" "$OUT" <<'PY'
import sys, csv, statistics as st
R, tag, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def get(lbl, k):
    d = {}
    for r in csv.reader(open(f"{out}/{lbl}-{k}{tag}.csv")):
        if len(r) >= 5 and r[1] == 'sem':
            try: d[r[3]] = float(r[4])
            except ValueError: pass
    return d
ms = ['commits_per_s', 'ctx_switches_per_commit', 'cpu_per_commit', 'p99_latency']
for lbl in 'PBN':
    rows = [get(lbl, k) for k in range(1, R + 1)]
    print(lbl, '  '.join(f"{m}={st.median([r[m] for r in rows]):.3g}"
                         f"[{min(r[m] for r in rows):.3g}..{max(r[m] for r in rows):.3g}]" for m in ms))
for m in ms:
    rat = [get('N', k)[m] / get('B', k)[m] for k in range(1, R + 1)]
    print(f"N/B {m}: {st.median(rat):.3f} [{min(rat):.3f}..{max(rat):.3f}]")
PY
