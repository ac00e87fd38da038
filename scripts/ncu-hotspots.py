#!/usr/bin/env python3
# Reads the CSV of `ncu --page source --print-source sass --csv` and prints the SASS instructions
# of the first kernel profiled with the most warp stall samples (used by scripts/gpu-latency-probe.sh
# investigations). A report of several launches has one table per launch, each after its own header
# row: only the first table is read (read on, the same hot line came out once per launch).
import csv,sys
rows=list(csv.reader(open(sys.argv[1])))
def is_header(r):
    return any('Warp Stall Sampling (All' in c for c in r) and any(c=='Source' for c in r)
h=next((i for i,r in enumerate(rows) if is_header(r)), None)
if h is None:
    print("no header; first rows:"); [print(r[:8]) for r in rows[:8]]; sys.exit()
hdr=rows[h]; si=hdr.index('Source'); wi=[i for i,c in enumerate(hdr) if 'Warp Stall Sampling (All' in c][0]
data=[]
for r in rows[h+1:]:
    if is_header(r):
        break  # the next launch's table
    try: data.append((float(r[wi] or 0), r[0], r[si]))
    except: pass
tot=sum(d[0] for d in data) or 1
print("total samples", tot, "instructions", len(data))
try:
    for w, a, s in sorted(data, reverse=True)[:30]:
        print("%5.1f%% %s %s" % (100 * w / tot, a, s))
except BrokenPipeError:  # a reader such as head stopped early
    pass
