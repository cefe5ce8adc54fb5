import csv,sys,statistics as st,collections,math
def load(f):
    d={}
    for r in csv.DictReader(open(f)):
        if r['impl']=='ursa' and r['metric'].endswith(':ops'):
            d[(r['metric'][:-4],int(r['threads']))]=float(r['value'])
    return d
# usage: cmpabs.py NEW1.csv,NEW2.csv OLD1.csv,OLD2.csv: ursa ops/s per point, new/old
new=[load(f) for f in sys.argv[1].split(',')]; old=[load(f) for f in sys.argv[2].split(',')]
keys=sorted(new[0], key=lambda k:(k[0],k[1]))
byw=collections.defaultdict(list)
for k in keys:
    n=st.median([d[k] for d in new]); o=st.median([d[k] for d in old])
    byw[k[0].split(':')[0]].append(n/o)
    print('%-14s %2d  ursa ops new %s  old %s  new/old %.2f'%(k[0],k[1],' '.join('%.2fM'%(d[k]/1e6) for d in new),' '.join('%.2fM'%(d[k]/1e6) for d in old),n/o))
for w,v in byw.items(): print(w,'geomean ursa ops new/old %.3f'%math.exp(sum(map(math.log,v))/len(v)))
