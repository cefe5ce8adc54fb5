import subprocess,sys,os,statistics,collections
lib=sys.argv[1]; V=sys.argv[2].split(';'); Ts=[int(x) for x in sys.argv[3].split(',')]; css=[int(x) for x in sys.argv[4].split(',')]; rounds=int(sys.argv[5]); dur=sys.argv[6] if len(sys.argv)>6 else '0.25'
mx=os.environ.get('MX','/tmp/mx/mx'); ld=os.environ.get('LDP','')
d=collections.defaultdict(list)
def run(e,T,cs):
    env=dict(os.environ); env['LD_LIBRARY_PATH']=lib
    impl='glibc' if e=='glibc' else 'ursa'
    if e not in ('glibc','main'):
        for kv in e.split(): k,v=kv.split('='); env[k]=v
    cmd=([ld,'--library-path',lib] if ld else [])+[mx,impl,str(T),str(cs),dur]
    o=subprocess.run(cmd,env=env,capture_output=True,text=True).stdout
    return float(o.split('ops/s=')[1].split()[0]), float(o.split('minshare=')[1].split()[0])
allv=['glibc']+V
for r in range(rounds):
    for cs in css:
        for T in Ts:
            for e in (allv if r%2==0 else allv[::-1]):
                d[(e,T,cs)].append(run(e,T,cs))
for cs in css:
    print('cs',cs)
    for T in Ts:
        g=d[('glibc',T,cs)]
        row=f' T={T:3d} g={statistics.median(x[0] for x in g)/1e6:6.2f}M ms={statistics.median(x[1] for x in g):.2f} |'
        for e in V:
            rs=[x[0]/y[0] for x,y in zip(d[(e,T,cs)],g)]
            row+=f' {statistics.median(rs):.2f}({min(rs):.2f}) ms{statistics.median(x[1] for x in d[(e,T,cs)]):.2f} |'
        print(row)
for i,e in enumerate(V): print(i,e)
