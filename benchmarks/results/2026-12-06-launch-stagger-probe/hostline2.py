# Pairs the last 16 host rounds with the 16 traced rounds (sorted by time) and prints, per round, each
# rank's host replay-returned time and kernel entry relative to the round's first, in us.
# Usage: hostline2.py LINES (the lines of a run with the trace and -Dmoecomm.bench.hostTimes=true)
import sys,statistics as st
from collections import defaultdict
from hostline import read
host,trace=read(sys.argv[1])
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
