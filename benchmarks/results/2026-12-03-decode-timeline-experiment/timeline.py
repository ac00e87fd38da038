"""Timeline of a decode round from the trace lines of trace.patch (globaltimer ns, all ranks on one GPU).

usage: python3 timeline.py run2-trace-a7555c7.txt
Prints, per rank, the median over the traced rounds of each point in us from the earliest
dispatchSend entry of the round, and the signal latency: from a source block's signal store to
the receiving block's wait returning (receivers already waiting), and from a receive kernel's
entry to its wait returning (signals already there).
"""
import re
import statistics as st
import sys
from collections import defaultdict

POINTS = {  # name: (kernel, point, over blocks)
    "send entry": (0, 0, min), "send routed": (0, 1, max), "send copied": (0, 2, max), "send barrier": (0, 4, max),
    "send fenced": (0, 5, max), "send signalled": (0, 6, max), "send end": (0, 7, max),
    "recv entry": (1, 0, min), "recv waited": (1, 1, max), "recv barrier": (1, 2, max), "recv scattered": (1, 3, max),
    "recv end": (1, 4, max),
    "csend entry": (2, 0, min), "csend waited": (2, 1, max), "csend copied": (2, 2, max), "csend end": (2, 4, max),
    "crecv entry": (3, 0, min), "crecv waited": (3, 1, max), "crecv reduced": (3, 2, max), "crecv end": (3, 4, max),
}
rounds = defaultdict(dict)
world = 0
for line in open(sys.argv[1]):
    m = re.search(r"TRACE rank (\d+) M=\d+ W=(\d+) slot (\d+) kernel (\d+) block (\d+): (.*)", line)
    if m:
        r, world, s, k, b = map(int, m.groups()[:5])
        rounds[s][(r, k, b)] = list(map(int, m.group(6).split()))
table = defaultdict(lambda: defaultdict(list))
latency = []  # signal store -> wait returned, for receivers already waiting
met = []  # receive kernel entry -> wait returned, for signals there before the receiver started
for d in rounds.values():
    ref = min(v[0] for (r, k, b), v in d.items() if k == 0)
    for r in range(world):
        for name, (k, p, f) in POINTS.items():
            xs = [v[p] for (rr, kk, b), v in d.items() if rr == r and kk == k and v[p]]
            if xs:
                table[name][r].append((f(xs) - ref) / 1000)
        for g in range(world):
            send, recv = d.get((g, 0, r)), d.get((r, 1, g))
            if send and recv and send[6] and recv[1]:
                if recv[0] < send[6]:
                    latency.append((recv[1] - send[6]) / 1000)
                else:
                    met.append((recv[1] - recv[0]) / 1000)
print(f"{len(rounds)} rounds; median us from the round's earliest dispatchSend entry; columns: ranks 0..{world - 1}")
for name in POINTS:
    print(f"{name:15s}", " ".join(f"{st.median(table[name][r]):7.2f}" if table[name][r] else "      -"
                                  for r in range(world)))
if latency:
    print(f"signal store -> a waiting receiver's wait returned: median {st.median(latency):.2f} us ({len(latency)} waits)")
if met:
    print(f"receive kernel entry -> wait returned, signal already there: median {st.median(met):.2f} us ({len(met)} waits)")
