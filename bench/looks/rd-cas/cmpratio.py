import csv,sys,statistics as st,collections,math
def load(f):
    d={}
    for r in csv.DictReader(open(f)):
        if r['impl']=='ursa' and r['metric'].endswith(':ratio'):
            d[(r['metric'][:-6],int(r['threads']))]=float(r['value'])
    return d
new=[load(f) for f in sys.argv[1].split(',')]; old=[load(f) for f in sys.argv[2].split(',')]
keys=sorted(new[0], key=lambda k:(k[0],k[1]))
byw=collections.defaultdict(list)
for k in keys:
    n=st.median([d[k] for d in new]); o=st.median([d[k] for d in old])
    byw[k[0].split(':')[0]].append(n/o)
    print('%-14s %2d  new %.2f [%s]  old %.2f [%s]  new/old %.2f'%(k[0],k[1],n,' '.join('%.2f'%d[k] for d in new),o,' '.join('%.2f'%d[k] for d in old),n/o))
for w,v in byw.items(): print(w,'geomean new/old of ratio-to-glibc %.3f'%math.exp(sum(map(math.log,v))/len(v)))
