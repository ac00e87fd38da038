#!/usr/bin/env python3
"""Ours against pplx-kernels from one device session: our A/B runs (scripts/gpu-ab.sh) beside
pplx-kernels timed by scripts/gpu-pplx-baseline.sh, median us, means of the runs.

    python3 scripts/pplx-table.py DIR [--group ours] [--preset deepseek-v3] [--timing host-graph]

DIR holds the session's ab-<label>-w<W>.json files (a group's runs: its label with trailing digits,
as scripts/ab-table.py groups them) and its pplx-baseline*.json files. The first table sets both
libraries' slowest rank per sample against each other, rank 0's median in brackets; --timing picks
pplx-kernels' way of timing and with it ours: host-graph (each half replayed from a CUDA graph
after a host barrier) against our graph lines, host-plain (each half launched from the host, one
kernel) against our whole lines (dispatch and combine each one call launched from the host),
stream (its own loop) against our graph lines. A line under it counts the pairs of cell and
operation where ours is lower (by the means of the runs, slowest rank and rank 0), the smallest
margin, and the pairs where every run of ours is below every run of pplx-kernels. A line above it
says where each library's processes ran (the results' "mode") and warns where they ran otherwise
for a world size. The second table gives pplx-kernels' own loop (stream) for reference. Only lines
whose outputs were checked ("verified": true) count.
"""
import argparse
import glob
import importlib.util
import os
import statistics
from collections import defaultdict

_spec = importlib.util.spec_from_file_location('ab_table', os.path.join(os.path.dirname(__file__), 'ab-table.py'))
ab_table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ab_table)


# the launch mode of our lines set against each way pplx-kernels is timed
OUR_LAUNCH = {'host-graph': 'graph', 'host-plain': 'whole', 'stream': 'graph'}


def load_pplx(directory):
    """{(timing, world, tokens): [line, ...]} from the directory's pplx-baseline*.json."""
    runs = defaultdict(list)
    for path in sorted(glob.glob(os.path.join(directory, 'pplx-baseline*.json'))):
        for o in ab_table.json_lines(path):
            if o.get('verified') is True:
                runs[(o['timing'], o['world'], o['tokens'])].append(o)
    return runs


def mean(values):
    return statistics.mean(values) if values else None


def pair(slowest, rank0):
    if slowest is None:
        return '-'
    return '%.1f (%.1f)' % (slowest, rank0) if rank0 is not None else '%.1f' % slowest


def ours(results, op):
    return pair(mean([o[f'{op}MedianUs'] for o in results]),
                mean([o[f'rank0{op.capitalize()}MedianUs'] for o in results if o.get(f'rank0{op.capitalize()}MedianUs')]))


def theirs(lines, op):
    return pair(mean([o[op]['slowestMedianUs'] for o in lines]), mean([o[op]['rank0MedianUs'] for o in lines]))


def verdict(cells, mine, pplx, timing):
    """One line: in how many cells and operations ours is lower, the smallest margin, and where every
    run of ours lies below every run of pplx-kernels (slowest rank)."""
    compared = lower = lower0 = apart = 0
    smallest = None
    for w, t in cells:
        got, lines = mine.get((w, t), []), pplx.get((timing, w, t), [])
        if not got or not lines:
            continue
        for op in ('dispatch', 'combine'):
            ours_runs = [o[f'{op}MedianUs'] for o in got]
            theirs_runs = [o[op]['slowestMedianUs'] for o in lines]
            margin = mean(theirs_runs) - mean(ours_runs)
            compared += 1
            lower += margin > 0
            lower0 += (mean([o[op]['rank0MedianUs'] for o in lines])
                       > mean([o.get(f'rank0{op.capitalize()}MedianUs') or float('inf') for o in got]))
            apart += max(ours_runs) < min(theirs_runs)
            if smallest is None or margin < smallest[0]:
                smallest = (margin, w, t, op)
    if not compared:
        return 'no cell has results of both libraries'
    margin, w, t, op = smallest
    where = f'W = {w}, {t} token{"s" if t != 1 else ""}, {op}'
    return (f'ours lower in {lower} of {compared} (cell, operation) pairs by the slowest rank, {lower0} of '
            f'{compared} by rank 0; smallest margin {margin:.1f} us ({where}); every run of ours below every '
            f'run of pplx-kernels in {apart} of {compared}')


def placement(mine, pplx, timing):
    """Where the processes ran, per world size ("mode" of the lines compared), and a warning for a W
    where the two libraries ran otherwise: their figures would not be of one setup."""
    modes = defaultdict(lambda: (set(), set()))
    for (w, _), got in mine.items():
        modes[w][0].update(o.get('mode', '?') for o in got)
    for (way, w, _), lines in pplx.items():
        if way == timing:
            modes[w][1].update(o.get('mode', '?') for o in lines)
    out = []
    for w in sorted(modes, reverse=True):
        ours_m, theirs_m = modes[w]
        if ours_m == theirs_m or not ours_m or not theirs_m:
            out.append(f'W = {w}: ' + '; '.join(sorted(ours_m | theirs_m)))
        else:
            out.append(f'W = {w}: WARNING, placed otherwise: ours {"; ".join(sorted(ours_m))}, '
                       f'pplx-kernels {"; ".join(sorted(theirs_m))}')
    return 'where the processes ran: ' + '. '.join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('directory')
    parser.add_argument('--group', default='ours', help="our runs' label without its digits")
    parser.add_argument('--preset', default='deepseek-v3')
    parser.add_argument('--timing', default='host-graph', choices=['host-graph', 'host-plain', 'stream'])
    args = parser.parse_args()
    launch = OUR_LAUNCH[args.timing]
    mine = {(w, t): r for (g, w, t), r in ab_table.load(args.directory, args.preset, launch).items() if g == args.group}
    pplx = load_pplx(args.directory)
    cells = sorted({(w, t) for w, t in mine} | {(w, t) for _, w, t in pplx}, key=lambda c: (-c[0], c[1]))
    if not cells:
        raise SystemExit(f'no results in {args.directory}')
    print(f'slowest rank (rank 0), pplx-kernels timed {args.timing}, ours launched {launch}')
    print(placement(mine, pplx, args.timing))
    print()
    print('| W | tokens | ours dispatch | pplx dispatch | ours combine | pplx combine |')
    print('|---|---|---|---|---|---|')
    for w, t in cells:
        got, lines = mine.get((w, t), []), pplx.get((args.timing, w, t), [])
        print(f'| {w} | {t} | {ours(got, "dispatch")} | {theirs(lines, "dispatch")} '
              f'| {ours(got, "combine")} | {theirs(lines, "combine")} |')
    print()
    print(verdict(cells, mine, pplx, args.timing))
    print()
    print("pplx-kernels' own loop (stream): slowest rank (rank 0)")
    print()
    print('| W | tokens | dispatch | combine |')
    print('|---|---|---|---|')
    for w, t in cells:
        lines = pplx.get(('stream', w, t), [])
        print(f'| {w} | {t} | {theirs(lines, "dispatch")} | {theirs(lines, "combine")} |')


if __name__ == '__main__':
    main()
