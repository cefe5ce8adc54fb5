# usage: compare.py ops|ratio NEW1.csv,NEW2.csv OLD1.csv,OLD2.csv
# Per point of the contention matrix, ursa's ops/s (ops) or its ratio to
# glibc (ratio) in each run, the median over the runs, and new/old; then
# the geometric mean of new/old per workload.
import csv, sys, statistics as st, collections, math
what = sys.argv[1]
suffix = ':ops' if what == 'ops' else ':ratio'
def load(f):
    d = {}
    for r in csv.DictReader(open(f)):
        if r['impl'] == 'ursa' and r['metric'].endswith(suffix):
            d[(r['metric'][:-len(suffix)], int(r['threads']))] = float(r['value'])
    return d
new = [load(f) for f in sys.argv[2].split(',')]
old = [load(f) for f in sys.argv[3].split(',')]
fmt = (lambda v: '%.2fM' % (v / 1e6)) if what == 'ops' else (lambda v: '%.2f' % v)
byw = collections.defaultdict(list)
for k in sorted(new[0]):
    n = st.median([d[k] for d in new]); o = st.median([d[k] for d in old])
    byw[k[0].split(':')[0]].append(n / o)
    print('%-14s %2d  %s new %s  old %s  new/old %.2f' % (k[0], k[1], what,
          ' '.join(fmt(d[k]) for d in new), ' '.join(fmt(d[k]) for d in old), n / o))
for w, v in byw.items():
    print(w, 'geometric mean of new/old (%s) %.3f' % (what, math.exp(sum(map(math.log, v)) / len(v))))
