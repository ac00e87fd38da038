# mean of dispatch/combine slowest-rank medians per variant group (label without trailing digits), deepseek-v3, graph
import json,glob,os,re,sys,statistics as st
from collections import defaultdict
vals=defaultdict(list)
for f in sorted(glob.glob(sys.argv[1]+'/ab-*-w*.json')):
    name,w=os.path.basename(f)[3:-5].rsplit('-',1)
    grp=re.sub(r'\d+$','',name)
    for line in open(f):
        if not line.startswith('{'): continue
        o=json.loads(line)
        if 'dispatchMedianUs' not in o or o.get('preset')!='deepseek-v3' or o.get('launch')!='graph' or o.get('group')!=1: continue
        vals[(grp,w,o['tokens'])].append(o)
groups=sys.argv[2].split(',')
print("| W | tokens | " + " | ".join(f"{g} dispatch | {g} combine" for g in groups) + " |")
for w in ('w4','w2'):
  for M in (1,8,32,128):
    cells=[]
    for g in groups:
        v=vals[(g,w,M)]
        if not v: cells+=['-','-']; continue
        cells.append(f"{st.mean(o['dispatchMedianUs'] for o in v):.1f} ({', '.join('%.1f'%o['dispatchMedianUs'] for o in v)})")
        cells.append(f"{st.mean(o['combineMedianUs'] for o in v):.1f} ({', '.join('%.1f'%o['combineMedianUs'] for o in v)})")
    print(f"| {w[1:]} | {M} | "+" | ".join(cells)+" |")
