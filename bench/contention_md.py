#!/usr/bin/env python3
"""contention_md.py: the contention matrix of an ursa-bench CSV as Markdown.

  bench/contention_md.py bench/out/contention.csv [--fairness] [--summary]

For each workload a table: rows = critical section x threads, columns =
glibc's ops/s and, for every other implementation, the median ratio to glibc
over the rounds with [min..max]. --fairness adds, per implementation, the
least-served thread's share / mean and the p99 wait to acquire.
--summary prints only the geometric mean of the ratios per workload."""
import collections, math, sys

WORK = ["mutex", "rw95", "rw50", "sem", "cond"]
CS = ["empty", "100ns", "1us", "yield"]
IMPLS = ["glibc", "ursa", "nsync", "ck", "absl"]


def fmt_ops(v):
    return f"{v / 1e6:.2f}M" if v >= 1e6 else f"{v / 1e3:.1f}k" if v >= 1e3 else f"{v:.0f}"


def fmt_us(v):
    if v >= 1000:
        return f"{v / 1000:.0f}ms"
    return f"{v:.2f}us" if v < 1 else f"{v:.1f}us" if v < 100 else f"{v:.0f}us"


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    fair = "--fairness" in sys.argv
    summary = "--summary" in sys.argv
    if len(args) != 1:
        sys.exit(__doc__)
    d = {}
    threads = set()
    impls = []
    load = None
    outside = 0.0
    shared = False
    for line in open(args[0]):
        f = line.rstrip("\n").split(",")
        if len(f) != 6 or f[0] != "contention":
            continue
        if f[3] == "load-average-1min":
            load = f[4]
            continue
        if f[3] == "outside-ns":
            outside = float(f[4])
            continue
        if f[3] == "work-shared":
            shared = f[4] == "1"
            continue
        if f[1] == "-":
            continue  # another run-wide row (calibration-slow-share)
        w, cs, m = f[3].split(":")
        t = int(f[2])
        threads.add(t)
        if f[1] not in impls:
            impls.append(f[1])
        d[(w, cs, t, f[1], m)] = float(f[4])
    impls = [i for i in IMPLS if i in impls] + [i for i in impls if i not in IMPLS]
    others = impls[1:]
    threads = sorted(threads)
    works = [w for w in WORK if any(k[0] == w for k in d)]
    if load:
        print(f"(1-minute load average at the start: {load})\n")
    if shared:
        print("(the sections' work: read-modify-writes of 8 cache lines of protected data: --work shared)\n")
    if outside > 0:
        print(f"(every thread does {outside:.0f} ns of work outside the lock after every operation)\n")
    if summary:
        print("| workload | " + " | ".join(others) + " |")
        print("|---|" + "---|" * len(others))
        for w in works:
            cells = []
            for i in others:
                r = [d[(w, cs, t, i, "ratio")] for cs in CS for t in threads
                     if (w, cs, t, i, "ratio") in d and d[(w, cs, t, i, "ratio")] > 0]
                cells.append(f"{math.exp(sum(map(math.log, r)) / len(r)):.2f}x [{min(r):.2f}]" if r else "n/a")
            print(f"| {w} | " + " | ".join(cells) + " |")
        return
    for w in works:
        print(f"\n**{w}** — glibc ops/s; others: median ratio to glibc [min..max]\n")
        print("| cs | thr | glibc | " + " | ".join(i + (" (spins)" if i == "ck" else "") for i in others) + " |")
        print("|---|---:|---:|" + "---|" * len(others))
        for cs in CS:
            for t in threads:
                if (w, cs, t, "glibc", "ops") not in d:
                    continue
                cells = []
                for i in others:
                    k = (w, cs, t, i)
                    if k + ("ratio",) in d:
                        cells.append(f"{d[k + ('ratio',)]:.2f} [{d[k + ('ratio-min',)]:.2f}..{d[k + ('ratio-max',)]:.2f}]")
                    else:
                        cells.append("n/a")
                print(f"| {cs} | {t} | {fmt_ops(d[(w, cs, t, 'glibc', 'ops')])} | " + " | ".join(cells) + " |")
        if fair:
            print(f"\n*{w} fairness* — least-served thread's share / mean; p99 wait to acquire, "
                  "all samples / the worst thread's own\n")
            print("| cs | thr | " + " | ".join(impls) + " |")
            print("|---|---:|" + "---|" * len(impls))
            for cs in CS:
                for t in threads:
                    if (w, cs, t, "glibc", "ops") not in d:
                        continue
                    cells = []
                    for i in impls:
                        k = (w, cs, t, i)
                        if k + ("share-min",) in d:
                            worst = d.get(k + ("p99-wait-worst",))
                            cells.append(f"{d[k + ('share-min',)]:.2f} / {fmt_us(d[k + ('p99-wait',)])}"
                                         + (f" / {fmt_us(worst)}" if worst is not None else ""))
                        else:
                            cells.append("n/a")
                    print(f"| {cs} | {t} | " + " | ".join(cells) + " |")


main()
