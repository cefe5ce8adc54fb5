#!/usr/bin/env python3
# cmp.py "A1.csv A2.csv" "B1.csv B2.csv": per contention point, ursa/glibc (each run) and the least-served share (ursa, glibc in brackets) and the worst thread p99 wait, A runs against B runs
import sys, csv, statistics as st
def load(fs):
    d={}
    for f in fs.split():
        for r in csv.DictReader(open(f)):
            if r['scenario']!='contention' or ':' not in r['metric']: continue
            w,cs,m=r['metric'].split(':')
            d.setdefault((w,cs,int(r['threads']),r['impl'],m),[]).append(float(r['value']))
    return d
A=load(sys.argv[1]); B=load(sys.argv[2])
def g(d,k): v=d.get(k); return v if v else None
print("%-5s %-6s %3s | %-17s %-17s | %-22s %-22s | %-14s %s"%("wl","cs","T","ratio old","ratio new","share old (glibc)","share new (glibc)","p99w old","p99w new"))
for w in ["mutex","rw95","rw50","sem","cond"]:
  for cs in ["empty","100ns","1us","yield"]:
    for T in [1,2,4,8,16,32]:
      ro=g(A,(w,cs,T,'ursa','ratio')); rn=g(B,(w,cs,T,'ursa','ratio'))
      if not ro or not rn: continue
      so=g(A,(w,cs,T,'ursa','share-min')); sn=g(B,(w,cs,T,'ursa','share-min'))
      go=g(A,(w,cs,T,'glibc','share-min')); gn=g(B,(w,cs,T,'glibc','share-min'))
      po=g(A,(w,cs,T,'ursa','p99-wait-worst')); pn=g(B,(w,cs,T,'ursa','p99-wait-worst'))
      f=lambda v:"/".join("%.2f"%x for x in v)
      fp=lambda v:"/".join(("%.1fms"%(x/1e3) if x>=1e3 else "%.0fus"%x) for x in v) if v else "-"
      print("%-5s %-6s %3d | %-17s %-17s | %-9s (%-9s) %-9s (%-9s) | %-14s %s"%(w,cs,T,f(ro),f(rn),f(so),f(go),f(sn),f(gn),fp(po),fp(pn)))
