#!/usr/bin/env python3
"""bench/polls/ab.py — run labelled commands in alternating order, round
after round (the order reversed every other round), and print for each the
median ops/s, the median ratio to the first command's ops/s in the same
round with its [min..max], and the median of every other key=value the
program printed.

usage: ab.py THREADS ROUNDS SECONDS 'label:command' ...
       (each command gets THREADS SECONDS appended)
"""
import re, statistics as st, subprocess, sys

T, R, S = sys.argv[1], int(sys.argv[2]), sys.argv[3]
specs = [a.split(":", 1) for a in sys.argv[4:]]
runs = {l: [] for l, _ in specs}
for r in range(R):
    for label, cmd in (specs if r % 2 == 0 else specs[::-1]):
        out = subprocess.run(f"{cmd} {T} {S}", shell=True, capture_output=True, text=True).stdout
        runs[label].append({k: float(v) for k, v in re.findall(r"([\w/-]+)=([0-9.]+)", out)})
base = runs[specs[0][0]]
for label, _ in specs:
    rs = runs[label]
    rat = [a["ops/s"] / b["ops/s"] for a, b in zip(rs, base)]
    extra = " ".join(f"{k} {st.median(x[k] for x in rs):.3g}" for k in rs[0] if k not in ("ops/s", "T"))
    print(f"{label:8s} ops/s {st.median(x['ops/s'] for x in rs):9.0f} ratio {st.median(rat):.2f} "
          f"[{min(rat):.2f}..{max(rat):.2f}] {extra}")
