# bench/looks/rw95-1us/idle.py FILE — idle periods of the CPUs in a
# `perf record -a -e sched:sched_switch,sched:sched_wakeup` trace
# (perf script -F comm,tid,cpu,time,event,trace[,ip,sym]): how many, how
# long in all, median / p90 / max; with call chains, what the task that
# went to sleep was doing and which wake ended the idle period. Scratch.
import re,collections,sys
evs=open(sys.argv[1]).read().split('\n\n')
idle_start={}; durs=[]; reasons=collections.Counter(); reasons_t=collections.Counter(); wakers=collections.Counter(); wakers_t=collections.Counter()
last_wakeup_stack={}
for ev in evs:
    lines=ev.strip().split('\n')
    if not lines or not lines[0].strip(): continue
    h=lines[0]
    m=re.match(r'\s*(.+?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)',h)
    if not m: continue
    comm,tid,cpu,t,e,tr=m.groups(); cpu=int(cpu); t=float(t)
    syms=[l.split()[1] for l in lines[1:] if len(l.split())>1]
    us='/'.join([s for s in syms if any(k in s for k in ('rdlock','wrlock','unlock','block','spin','wake_w','wake_','step','yield'))][:3])
    if e=='sched:sched_switch':
        mm=re.search(r'prev_state=(\S+) ==> next_comm=(.+?) next_pid=(\d+)',tr)
        if not mm: continue
        st,nc,np=mm.groups()
        if nc.startswith('swapper'):
            idle_start[cpu]=(t,us)
        elif 'prev_comm=swapper' in tr and cpu in idle_start:
            t0,why=idle_start.pop(cpu); d=(t-t0)*1e6; durs.append(d); reasons[why]+=1; reasons_t[why]+=d
            w=last_wakeup_stack.get(np,'?'); wakers[w]+=1; wakers_t[w]+=d
    elif e=='sched:sched_wakeup':
        mm=re.search(r' pid=(\d+)',tr)
        if mm: last_wakeup_stack[mm.group(1)]=us
durs.sort(); n=len(durs)
print("idle periods",n,"total ms %.1f"%(sum(durs)/1e3),"median us %.1f p90 %.1f max %.1f"%(durs[n//2],durs[int(n*.9)],durs[-1]))
print("went idle after:"); [print("  %5d %8.0fus %s"%(reasons[k],reasons_t[k],k)) for k in sorted(reasons,key=lambda k:-reasons_t[k])[:8]]
print("ended by wakeup from:"); [print("  %5d %8.0fus %s"%(wakers[k],wakers_t[k],k)) for k in sorted(wakers,key=lambda k:-wakers_t[k])[:8]]
