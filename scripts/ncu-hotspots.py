#!/usr/bin/env python3
# Reads the CSV of `ncu --page source --print-source sass --csv` (plain or .gz) and prints, for the
# first kernel profiled, the SASS instructions with the most warp stall samples (used by
# scripts/gpu-latency-probe.sh investigations). A report of several launches has one table per
# launch, each after its own header row: only the first table is read (read on, the same hot line
# came out once per launch).
#
#   scripts/ncu-hotspots.py SOURCE.csv[.gz]             the 30 lines with the most stall samples
#   scripts/ncu-hotspots.py --executed SOURCE.csv[.gz]  every instruction the launch executed, in
#       address order, with its warp instructions executed and stall samples, then the executed
#       warp instructions by opcode: where a path's instructions go
import csv, gzip, sys

executed_mode = sys.argv[1] == '--executed'
path = sys.argv[2] if executed_mode else sys.argv[1]
opener = gzip.open if path.endswith('.gz') else open
with opener(path, 'rt') as f:
    rows = list(csv.reader(f))


def is_header(r):
    return any('Warp Stall Sampling (All' in c for c in r) and any(c == 'Source' for c in r)


h = next((i for i, r in enumerate(rows) if is_header(r)), None)
if h is None:
    print("no header; first rows:")
    [print(r[:8]) for r in rows[:8]]
    sys.exit()
hdr = rows[h]
si = hdr.index('Source')
wi = [i for i, c in enumerate(hdr) if 'Warp Stall Sampling (All' in c][0]
ei = hdr.index('Instructions Executed') if 'Instructions Executed' in hdr else None
table = []
for r in rows[h + 1:]:
    if is_header(r):
        break  # the next launch's table
    if len(r) >= len(hdr):  # not a kernel-name row
        table.append(r)


def number(cell):
    try:
        return float(cell or 0)
    except ValueError:
        return 0.0


try:
    if executed_mode:
        if ei is None:
            print("no 'Instructions Executed' column; columns:", hdr)
            sys.exit()
        total = sum(number(r[ei]) for r in table)
        print("warp instructions executed", int(total), "of", len(table), "instructions in the code")
        ops = {}
        for r in table:
            n = number(r[ei])
            if n > 0:
                print("%8d %5d %s %s" % (n, number(r[wi]), r[0], r[si]))
                words = [w for w in r[si].split() if not w.startswith('@')] or ['?']  # past a predicate
                op = words[0].split('.')[0]
                ops[op] = ops.get(op, 0) + n
        print("== by opcode")
        for op, n in sorted(ops.items(), key=lambda x: -x[1]):
            print("%8d %5.1f%% %s" % (n, 100 * n / (total or 1), op))
    else:
        data = [(number(r[wi]), r[0], r[si]) for r in table]
        tot = sum(d[0] for d in data) or 1
        print("total samples", tot, "instructions", len(data))
        for w, a, s in sorted(data, reverse=True)[:30]:
            print("%5.1f%% %s %s" % (100 * w / tot, a, s))
except BrokenPipeError:  # a reader such as head stopped early
    pass
