import subprocess,sys,os,statistics,collections
# usage: ab2.py "label=ENV..;label2=ENV.." threads iters_list rounds dur prog
V=[x.split('=',1) for x in sys.argv[1].split(';')]; Ts=[int(x) for x in sys.argv[2].split(',')]; its=sys.argv[3].split(','); rounds=int(sys.argv[4]); dur=sys.argv[5]; prog=sys.argv[6]
d=collections.defaultdict(list)
def run(v,T,it):
    lab,envs=v; env=dict(os.environ)
    impl='glibc' if lab=='glibc' else 'ursa'
    for kv in envs.split():
        if '=' in kv: k,x=kv.split('=',1); env[k]=x
    o=subprocess.run([prog,impl,str(T),it,dur],env=env,capture_output=True,text=True).stdout
    return float(o.split('ops/s=')[1].split()[0]), float(o.split('minshare=')[1].split()[0])
allv=[('glibc','')]+V
for r in range(rounds):
    for it in its:
        for T in Ts:
            for v in (allv if r%2==0 else allv[::-1]):
                d[(v[0],T,it)].append(run(v,T,it))
for it in its:
    print('iters',it)
    for T in Ts:
        g=d[('glibc',T,it)]
        row=f' T={T:3d} g={statistics.median(x[0] for x in g)/1e6:6.3f}M ms={statistics.median(x[1] for x in g):.2f} |'
        for v in V:
            rs=[x[0]/y[0] for x,y in zip(d[(v[0],T,it)],g)]
            row+=f' {v[0]} {statistics.median(rs):.2f}[{min(rs):.2f}..{max(rs):.2f}] ms{statistics.median(x[1] for x in d[(v[0],T,it)]):.2f} |'
        print(row)
