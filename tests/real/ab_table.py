#!/usr/bin/env python3
"""tests/real/ab_table.py — the summary table of tests/real/postgres.sh and
tests/real/mariadb.sh.

    ab_table.py TPS_FILE ROUNDS "RUN RUN ..." OTHER

TPS_FILE holds "LABEL RUN TPS" lines, LABEL a side (OTHER or ursa) followed
by its round number. Prints, per run, the median tps of each side and the
median of the per-round ratios ursa / OTHER with [min..max], then each
round's ratio. Figures only: the exit status is 0 whatever they say.
"""
import statistics
import sys

path, rounds, runs, other = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4]
tps = {}
for line in open(path):
    label, run, v = line.split()
    side, rnd = label.rstrip("0123456789"), int(label[len(label.rstrip("0123456789")):])
    tps[(side, rnd, run)] = float(v)
print(f"   {'run':<8} {other + ' tps':>10} {'ursa tps':>10}  {'ursa/' + other:<24} rounds")
for run in runs:
    p = [tps.get((other, i, run)) for i in range(1, rounds + 1)]
    u = [tps.get(("ursa", i, run)) for i in range(1, rounds + 1)]
    ok = [(a, b) for a, b in zip(p, u) if a and b]
    if not ok:
        print(f"   {run:<8} no result")
        continue
    r = [b / a for a, b in ok]
    med = statistics.median
    per = " ".join(f"{x:.2f}" for x in r)
    print(f"   {run:<8} {med([a for a, _ in ok]):>10.0f} {med([b for _, b in ok]):>10.0f}  "
          f"{med(r):.2f}x [{min(r):.2f}..{max(r):.2f}]{'':<8} {per}")
