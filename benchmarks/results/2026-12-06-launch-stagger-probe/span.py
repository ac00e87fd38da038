# Per (M, W), medians over the traced rounds: the kernels' span (earliest send entry to the latest
# trace point of any rank), the spread of the ranks' first entries, the last entry to that end, and
# the send blocks' release store (final barrier to release done).
# Usage: span.py LINES (a run with the trace)
import sys,statistics as st
from collections import defaultdict
from hostline import read
_,trace=read(sys.argv[1])
for key in sorted(trace):
    M,W=key; res=defaultdict(list)
    for d in trace[key].values():
        first=min(v[0] for (r,k,b),v in d.items() if k==0)
        end=max(max(x for x in v if x) for v in d.values())
        entries=sorted(min(v[0] for (rr,k,b),v in d.items() if rr==r and k==0) for r in range(W))
        res['span'].append((end-first)/1e3)
        res['entries spread'].append((entries[-1]-entries[0])/1e3)
        res['last entry to end'].append((end-entries[-1])/1e3)
        res['release'].extend((v[3]-v[2])/1e3 for (r,k,b),v in d.items() if k==0 and v[2] and v[3])
    print(f"M={M} W={W}: "+', '.join(f"{n} {st.median(v):.2f}" for n,v in res.items())+" us")
