"""Prints a decode dispatch's timeline from the TRACE lines of trace.patch (one per rank, kernel,
block and round: %globaltimer at fixed points), per rank the median over rounds of the median over
blocks 0..7, in us from the round's earliest dispatch send entry:

    python3 timeline.py trace-bdfd882.txt

Dispatch recv's points 4-7 are those of ../2026-12-06-scatter-trace-experiment/trace.patch (inside
the ordered scatter); a trace without them prints none.
"""
import re,sys,statistics as st
from collections import defaultdict
# data[(M,W)][slot][rank][kernel][block] = points
data=defaultdict(lambda: defaultdict(lambda: defaultdict(lambda: defaultdict(dict))))
for line in open(sys.argv[1]):
    m=re.search(r'TRACE rank (\d+) M=(\d+) W=(\d+) slot (\d+) kernel (\d+) block (\d+): (.*)',line)
    if not m: continue
    r,M,W,slot,k,b=map(int,m.groups()[:6]); pts=list(map(int,m.group(7).split()))
    data[(M,W)][slot][r][k][b]=pts
names0=['send entry','m known','ids staged (barrier)','routed (thread 0)','recorded (barrier)','row copied (thread 0)','final barrier','release store done']
names1=['recv entry','own wait returned','waits (barrier)','scattered','pass 1 done (thread 0)','pass 1 barrier','pass 2 done (thread 0)','pass 2 barrier']
for key in sorted(data):
    M,W=key
    print(f"== M={M} W={W}: median over rounds, us from the round's earliest send entry; blocks: median of blocks 0..7 (dest/group); columns ranks")
    rows=defaultdict(lambda: defaultdict(list))
    for slot,ranks in data[key].items():
        e=min(min(v[0] for v in ranks[r][0].values()) for r in ranks if 0 in ranks[r])
        for r in ranks:
            for k,names in ((0,names0),(1,names1)):
                if k not in ranks[r]: continue
                for p,nm in enumerate(names):
                    vals=[v[p] for v in ranks[r][k].values() if v[p]!=0]
                    if vals: rows[(k,p,nm)][r].append((st.median(vals)-e)/1000)
    W_=W
    for (k,p,nm) in sorted(rows):
        print(f"{nm:28s}"+"".join(f"{st.median(rows[(k,p,nm)][r]):8.2f}" if rows[(k,p,nm)][r] else "       -" for r in range(W_)))
