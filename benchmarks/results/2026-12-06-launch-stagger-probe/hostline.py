# Reads HOSTT lines (host wall clock per round: barrier returned, aligned, start event recorded,
# replay returned) and, when present, TRACE lines (kernel %globaltimer points), and prints the
# spread of each point across the ranks per round and each rank's delays. Usage: hostline.py LINES
import re,sys,statistics as st
from collections import defaultdict

def read(path):
    """(host, trace): host[(M,W)][(rank,round)] = 4 times; trace[(M,W)][slot][(rank,kernel,block)] = points."""
    host=defaultdict(dict)
    trace=defaultdict(lambda: defaultdict(dict))
    for line in open(path, errors='replace'):
        m=re.search(r'HOSTT rank (\d+) M=(\d+) W=(\d+) round (\d+): (.*)',line)
        if m:
            r,M,W,rd=map(int,m.groups()[:4]); host[(M,W)][(r,rd)]=list(map(int,m.group(5).split())); continue
        m=re.search(r'TRACE rank (\d+) M=(\d+) W=(\d+) slot (\d+) kernel (\d+) block (\d+): (.*)',line)
        if m:
            r,M,W,slot,k,b=map(int,m.groups()[:6]); trace[(M,W)][slot][(r,k,b)]=list(map(int,m.group(7).split()))
    return host,trace

def q(v,p): v=sorted(v); return v[min(len(v)-1,int(p*len(v)))]

def main():
    host,trace=read(sys.argv[1])
    for key in sorted(host):
        M,W=key; h=host[key]
        rounds=sorted({rd for (r,rd) in h if all((rr,rd) in h for rr in range(W))})
        names=['barrier returned','aligned','event recorded','replay returned']
        print(f"== M={M} W={W}: {len(rounds)} rounds; spread across ranks (max-min), us: median (p10, p90)")
        for i,n in enumerate(names):
            sp=[(max(h[(r,rd)][i] for r in range(W))-min(h[(r,rd)][i] for r in range(W)))/1e3 for rd in rounds]
            print(f"  {n:18s} {st.median(sp):6.2f} ({q(sp,.1):5.2f}, {q(sp,.9):5.2f})")
        for r in range(W):
            d=[[ (h[(r,rd)][i+1]-h[(r,rd)][i])/1e3 for rd in rounds] for i in range(3)]
            first=[ (h[(r,rd)][0]-min(h[(rr,rd)][0] for rr in range(W)))/1e3 for rd in rounds]
            print(f"  rank {r}: barrier return after first {st.median(first):5.2f}; align {st.median(d[0]):5.2f}, record {st.median(d[1]):5.2f}, replay call {st.median(d[2]):5.2f}")
        t=trace.get(key)
        if not t: continue
        spreads=defaultdict(list); lat=defaultdict(list)
        for slot,d in t.items():
            ent={}
            for r in range(W):
                v=[p[0] for (rr,k,b),p in d.items() if rr==r and k==0 and p[0]]
                if v: ent[r]=min(v)
            if len(ent)<W: continue
            # the host round of each rank: the latest whose event was recorded before the entry
            hr={}
            for r in range(W):
                cands=[(h[(r,rd)][2],rd) for rd in rounds if h[(r,rd)][2] < ent[r] and ent[r]-h[(r,rd)][2] < 500000]
                if cands: hr[r]=max(cands)[1]
            if len(hr)<W: continue
            spreads['kernel entry'].append((max(ent.values())-min(ent.values()))/1e3)
            for r in range(W):
                lat[('replay returned -> entry',r)].append((ent[r]-h[(r,hr[r])][3])/1e3)
                lat[('event recorded -> entry',r)].append((ent[r]-h[(r,hr[r])][2])/1e3)
                lat[('barrier returned -> entry',r)].append((ent[r]-h[(r,hr[r])][0])/1e3)
        for n,v in spreads.items():
            print(f"  trace: {n} spread {st.median(v):6.2f} ({q(v,.1):5.2f}, {q(v,.9):5.2f}) over {len(v)} rounds")
        for (n,r),v in sorted(lat.items()):
            print(f"  trace: rank {r} {n:26s} {st.median(v):7.2f} ({q(v,.1):6.2f}, {q(v,.9):6.2f})")

if __name__ == '__main__':
    main()
