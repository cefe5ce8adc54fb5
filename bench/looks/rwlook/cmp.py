import csv, sys, collections, statistics
# cmp.py A1.csv,A2.csv B1.csv,B2.csv
def load(f):
    d={}
    for r in csv.DictReader(open(f)):
        if r['impl'] in ('-',): continue
        d[(r['impl'], int(r['threads']), r['metric'])]=float(r['value'])
    return d
A=[load(f) for f in sys.argv[1].split(',')]; B=[load(f) for f in sys.argv[2].split(',')]
keys=sorted({(k[2].rsplit(':',1)[0], k[1]) for k in A[0] if k[0]=='ursa' and k[2].endswith(':ratio')})
print(f"{'point':<18} {'A ratio':>13} {'B ratio':>13} | {'A share':>11} {'B share':>11} {'glibc share':>11}")
for wl,t in keys:
    ra=[d[('ursa',t,wl+':ratio')] for d in A]; rb=[d[('ursa',t,wl+':ratio')] for d in B]
    sa=[d[('ursa',t,wl+':share-min')] for d in A]; sb=[d[('ursa',t,wl+':share-min')] for d in B]
    sg=[d[('glibc',t,wl+':share-min')] for d in A+B]
    f=lambda v: '/'.join(f'{x:.2f}' for x in v)
    flag = ' <' if max(sb) < min(sg)-0.02 else ''
    print(f"{wl+' '+str(t):<18} {f(ra):>13} {f(rb):>13} | {f(sa):>11} {f(sb):>11} {min(sg):.2f}-{max(sg):.2f}{flag}")
