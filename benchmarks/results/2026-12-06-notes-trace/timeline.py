# Reads the TRACE lines of trace.patch (or ../2026-12-06-specialise-experiment/finetrace.patch, four
# more points of the send block) (one per round slot, kernel and block) and prints the
# medians of each point per rank and of the chain's steps. Usage: python3 timeline.py trace-*.txt
# Assumes one receive block per source group (parts = 1), as at W = 4, 1 token.
import re,sys,statistics as st
from collections import defaultdict
rows=defaultdict(dict)  # (M,slot) -> {(rank,kernel,block): [pts]}
for line in open(sys.argv[1]):
    m=re.search(r'TRACE rank (\d+) M=(\d+) W=(\d+) slot (\d+) kernel (\d+) block (\d+): (.*)',line)
    if not m: continue
    r,M,W,slot,k,b=map(int,m.groups()[:6]); pts=list(map(int,m.group(7).split()))
    rows[(M,W,slot)][(r,k,b)]=pts
SEND=['entry','packed (notes+row)','final barrier','release done','m and ids (t0)','routed (barrier)','notes+locations issued','row copied (t0)']
RECV=['entry','count notes (barrier)','slots done','signal seen (t0)','copy done (t0)']
for M in sorted({k[0] for k in rows}):
    W=[k[1] for k in rows if k[0]==M][0]
    keys=[k for k in rows if k[0]==M]
    acc=defaultdict(list)
    chain=defaultdict(list)
    for key in keys:
        d=rows[key]
        t0=min(v[0] for (r,k,b),v in d.items() if k==0)
        # per rank send: median over dest blocks; also self vs peer release
        for r in range(W):
            for i,name in enumerate(SEND):
                vals=[d[(r,0,b)][i]-t0 for b in range(W) if (r,0,b) in d and d[(r,0,b)][i]]
                if vals: acc[('send',r,name)].append(st.median(vals))
            rel_self=[d[(r,0,r)][3]-d[(r,0,r)][2]] if (r,0,r) in d else []
            rel_peer=[d[(r,0,b)][3]-d[(r,0,b)][2] for b in range(W) if b!=r and (r,0,b) in d]
            chain['release self'].extend(rel_self); chain['release peer'].extend(rel_peer)
            chain['entry->packed'].extend(d[(r,0,b)][1]-d[(r,0,b)][0] for b in range(W) if (r,0,b) in d)
            chain['packed->barrier'].extend(d[(r,0,b)][2]-d[(r,0,b)][1] for b in range(W) if (r,0,b) in d)
            for a,bb,name in ((0,4,'entry->m'),(4,5,'m->routed'),(5,6,'routed->notes+locs'),(6,7,'notes->row copied'),(7,1,'row copied->packed')):
                chain[name].extend(d[(r,0,b)][bb]-d[(r,0,b)][a] for b in range(W) if (r,0,b) in d and d[(r,0,b)][a] and d[(r,0,b)][bb])
            rb=[b for (rr,k,b) in d if rr==r and k==1]
            for i,name in enumerate(RECV):
                vals=[d[(r,1,b)][i]-t0 for b in rb if d[(r,1,b)][i]]
                if vals: acc[("recv",r,name)].append(st.median(vals))
            # signal seen by receive block g on rank r vs release by rank g's send block r (G=1, parts=1 assumed)
            for b in rb:
                g=b  # parts=1 at M=1 W=4
                if (g,0,r) in d and d[(r,1,b)][3]:
                    chain['release->seen'].append(d[(r,1,b)][3]-d[(g,0,r)][3])
                if d[(r,1,b)][4] and d[(r,1,b)][3]:
                    chain['seen->copied'].append(d[(r,1,b)][4]-d[(r,1,b)][3])
                if d[(r,1,b)][2] and d[(r,1,b)][1]:
                    chain['notes->slots'].append(d[(r,1,b)][2]-d[(r,1,b)][1])
        starts=sorted(d[(r,0,0)][0]-t0 for r in range(W) if (r,0,0) in d)
        chain['start spread'].append(starts[-1]-starts[0])
        ends=[max(d[(r,1,b)][4] for (rr,k,b) in d if rr==r and k==1 and d[(r,1,b)][4])-t0 for r in range(W)]
        chain['round end (max rank)'].append(max(ends))
    print(f"== M={M} W={W}: median over {len(keys)} rounds, us from the round's earliest send entry; columns ranks")
    for kind,names in (('send',SEND),('recv',RECV)):
        for name in names:
            print(f"{kind} {name:24s}"+''.join(f"{st.median(acc[(kind,r,name)])/1000:8.2f}" if acc[(kind,r,name)] else '       -' for r in range(W)))
    for k,v in chain.items():
        if v: print(f"  {k:22s} median {st.median(v)/1000:6.2f} us  (p10 {sorted(v)[len(v)//10]/1000:.2f}, p90 {sorted(v)[9*len(v)//10]/1000:.2f}, n={len(v)})")
