#!/usr/bin/env python3
"""contention_runs.py: several runs of the contention matrix, read together.

  bench/contention_runs.py RUN1.csv RUN2.csv [RUN3.csv ...] [--points]

One run of `ursa-bench --scenario contention` places a point only as well
as the machine holds still, and the 2-vCPU machines of bench/README.md
("Method") change speed under it: single points move by 10-30% between runs
of one binary, and some rows by more. Given the CSVs of runs of the same
binary, this prints for ursa against glibc:

  - per workload, the geometric mean of each run's median ratios, and of
    the per-point median over the runs;
  - the points whose median ratio is under 1.0 in every run (a loss),
    and those under 1.0 in some runs only (not placed);
  - the least-served thread's share against glibc's, per point as the
    median over the runs: above, below (by more than 0.02), within;
  - at 8-32 threads, where the median over the runs is ahead of both
    nsync and absl, and where behind both.

--points adds a table per workload: for every implementation the median
over the runs of the per-run median ratio, with [lowest..highest] run."""
import math
import statistics
import sys

WORK = ["mutex", "rw95", "rw50", "sem", "cond"]
CS = ["empty", "100ns", "1us", "yield"]


def load(path):
    d = {}
    for line in open(path):
        f = line.rstrip("\n").split(",")
        if len(f) == 6 and f[0] == "contention" and f[3] == "calibration-slow-share":
            d["slow"] = float(f[4])
        if len(f) != 6 or f[0] != "contention" or f[3].count(":") != 2:
            continue
        w, cs, m = f[3].split(":")
        d[(w, cs, int(f[2]), f[1], m)] = float(f[4])
    return d


def geomean(v):
    v = [x for x in v if x > 0]
    return math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")


def main():
    paths = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(paths) < 2:
        sys.exit(__doc__)
    runs = [load(p) for p in paths]
    slow = [f"{r.pop('slow'):.0%}" if "slow" in r else "?" for r in runs]
    keys = set(runs[0])
    for r in runs[1:]:
        keys &= set(r)
    points = sorted({(k[0], k[1], k[2]) for k in keys if k[2] > 1},
                    key=lambda p: (WORK.index(p[0]), CS.index(p[1]), p[2]))
    impls = sorted({k[3] for k in keys if k[4] == "ratio"}, key=lambda i: (i != "ursa", i))

    def per_run(p, impl, m):
        k = p + (impl, m)
        return [r[k] for r in runs] if k in keys else None

    def med(p, impl, m):
        v = per_run(p, impl, m)
        return statistics.median(v) if v else None

    print(f"{len(runs)} runs: " + ", ".join(paths))
    print("calibration timings below 0.85 of the fastest (the CPUs' slow phases; "
          "'?': not in the CSV): " + " / ".join(slow))
    print("\ngeometric mean of ursa/glibc over the multi-thread points: each run; "
          "the per-point medians")
    for w in WORK:
        pts = [p for p in points if p[0] == w]
        if not pts:
            continue
        each = [geomean([r[p + ("ursa", "ratio")] for p in pts]) for r in runs]
        print(f"  {w:6} " + " ".join(f"{g:.2f}" for g in each)
              + f"   median points {geomean([med(p, 'ursa', 'ratio') for p in pts]):.2f}")

    always, some = [], []
    for p in points:
        v = per_run(p, "ursa", "ratio")
        under = sum(x < 1.0 for x in v)
        s = f"{p[0]} {p[1]} {p[2]}: " + " / ".join(f"{x:.2f}" for x in v)
        if under == len(v):
            always.append(s)
        elif under:
            some.append(s)
    print(f"\nursa under glibc in every run ({len(always)} of {len(points)} points):")
    for s in always:
        print("  " + s)
    print(f"under glibc in some runs only ({len(some)}):")
    for s in some:
        print("  " + s)

    above, below, within = 0, {}, 0
    for p in points:
        g, u = med(p, "glibc", "share-min"), med(p, "ursa", "share-min")
        if g is None or u is None:
            continue
        if u > g + 0.02:
            above += 1
        elif u < g - 0.02:
            below[p[0]] = below.get(p[0], 0) + 1
        else:
            within += 1
    print(f"\nleast-served share (median over the runs) against glibc's: above at {above}, "
          f"below at {sum(below.values())} {below}, within 0.02 at {within}")

    print("\nat 8-32 threads, the median over the runs against nsync and absl:")
    for w in WORK:
        ahead, behind = [], []
        for p in points:
            if p[0] != w or p[2] < 8:
                continue
            u = med(p, "ursa", "ratio")
            o = [med(p, i, "ratio") for i in ("nsync", "absl")]
            o = [x for x in o if x is not None]
            if not o:
                continue
            if all(u > x for x in o):
                ahead.append(f"{p[1]}/{p[2]}")
            elif all(u < x for x in o):
                behind.append(f"{p[1]}/{p[2]} {u:.2f} vs " + "/".join(f"{x:.2f}" for x in o))
        if ahead or behind:
            print(f"  {w:6} ahead of both at {len(ahead)}: {' '.join(ahead)}")
            print(f"         behind both at {len(behind)}: {'; '.join(behind)}")

    if "--points" in sys.argv:
        for w in WORK:
            pts = [p for p in points if p[0] == w]
            if not pts:
                continue
            print(f"\n**{w}**: median over the runs of each run's median ratio to glibc "
                  "[lowest..highest run]; shares: glibc / ursa\n")
            print("| cs | thr | " + " | ".join(impls) + " | shares |")
            print("|---|---:|" + "---|" * (len(impls) + 1))
            for p in pts:
                cells = []
                for i in impls:
                    v = per_run(p, i, "ratio")
                    cells.append(f"{statistics.median(v):.2f} [{min(v):.2f}..{max(v):.2f}]"
                                 if v else "n/a")
                g, u = med(p, "glibc", "share-min"), med(p, "ursa", "share-min")
                print(f"| {p[1]} | {p[2]} | " + " | ".join(cells) + f" | {g:.2f} / {u:.2f} |")


main()
