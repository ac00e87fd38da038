# pairs the last 16 host rounds with the 16 traced rounds (sorted by time) and prints, per round, each
# rank's host replay-returned time and kernel entry relative to the round's first, in us
import re,sys,statistics as st
from collections import defaultdict
host=defaultdict(dict); trace=defaultdict(lambda: defaultdict(dict))
for line in open(sys.argv[1], errors='replace'):
    m=re.search(r'HOSTT rank (\d+) M=(\d+) W=(\d+) round (\d+): (.*)',line)
    if m:
        r,M,W,rd=map(int,m.groups()[:4]); host[(M,W)][(r,rd)]=list(map(int,m.group(5).split())); continue
    m=re.search(r'TRACE rank (\d+) M=(\d+) W=(\d+) slot (\d+) kernel (\d+) block (\d+): (.*)',line)
    if m:
        r,M,W,slot,k,b=map(int,m.groups()[:6]); trace[(M,W)][slot][(r,k,b)]=list(map(int,m.group(7).split()))
for key in sorted(trace):
    M,W=key; h=host[key]; t=trace[key]
    last=sorted({rd for (r,rd) in h})[-16:]
    slots=sorted(t, key=lambda s: min(p[0] for (r,k,b),p in t[s].items() if k==0))
    lat=defaultdict(list); rows=[]
    for rd,s in zip(last,slots):
        d=t[s]
        ent={r:min(p[0] for (rr,k,b),p in d.items() if rr==r and k==0) for r in range(W)}
        hl={r:h[(r,rd)][3] for r in range(W)}
        e0=min(ent.values()); h0=min(hl.values())
        rows.append(' '.join(f"{(hl[r]-h0)/1e3:5.2f}/{(ent[r]-e0)/1e3:5.2f}" for r in range(W)))
        for r in range(W): lat[r].append((ent[r]-hl[r])/1e3)
    print(f"== M={M} W={W}: per round, per rank: host replay returned / kernel entry, us after the round's first")
    for x in rows: print('  ',x)
    allv=[v for r in lat for v in lat[r]]; off=st.median(allv)
    print('  entry - replay returned, per rank, relative to the median over all ranks:',
          ' '.join(f"r{r} {st.median(lat[r])-off:+.2f} (spread {max(lat[r])-min(lat[r]):.1f})" for r in range(W)))
