#!/usr/bin/env python3
"""Tables of an A/B call's results (scripts/gpu-ab.sh): for each variant group, world and token
count, the mean of the runs' slowest-rank medians of dispatch and combine, each run in brackets.

    python3 scripts/ab-table.py DIR base,new [--preset deepseek-v3] [--launch graph] [--rank0] [--halves]

DIR holds the call's ab-<label>-w<W>.json files (gpu-ab.sh's ab.tgz, unpacked). A label's runs are
grouped by the label without its trailing digits (base, base2, base3: group base). Token counts and
worlds are those the groups' files hold (worlds largest first). --rank0 adds rank 0's medians (the method of
pplx-kernels' own benchmark) as two more columns per group; --halves gives the four halves (dispatch
send and recv, combine send and recv) instead of the two operations: plain launches time them apart,
a graph replay does not. Prints a Markdown table.
"""
import argparse
import glob
import json
import os
import re
import statistics
from collections import defaultdict


def json_lines(path):
    """The JSON objects of a results file, one per line (other lines, such as logs, skipped)."""
    with open(path) as f:
        return [json.loads(line) for line in f if line.startswith('{')]


def load(directory, preset, launch):
    """{(group, world, tokens): [result, ...]} from the phase files of the directory."""
    runs = defaultdict(list)
    for path in sorted(glob.glob(os.path.join(directory, 'ab-*-w*.json'))):
        label, world = os.path.basename(path)[len('ab-'):-len('.json')].rsplit('-', 1)
        group = re.sub(r'\d+$', '', label)
        for o in json_lines(path):
            if o.get('dispatchMedianUs') is None or o.get('preset') != preset or o.get('launch') != launch:
                continue
            if o.get('group') != 1:
                continue
            runs[(group, int(world[1:]), o['tokens'])].append(o)
    return runs


def cell(results, key):
    values = [o[key] for o in results if o.get(key) is not None]
    if not values:
        return '-'
    return '%.1f (%s)' % (statistics.mean(values), ', '.join('%.1f' % v for v in values))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('directory')
    parser.add_argument('groups', help='variant groups, comma-separated (base,new)')
    parser.add_argument('--preset', default='deepseek-v3')
    parser.add_argument('--launch', default='graph', choices=['graph', 'plain'])
    parser.add_argument('--rank0', action='store_true', help="rank 0's medians too")
    parser.add_argument('--halves', action='store_true', help='the four halves instead of the two operations')
    args = parser.parse_args()
    groups = args.groups.split(',')
    runs = load(args.directory, args.preset, args.launch)
    if not runs:
        raise SystemExit(f'no {args.preset} {args.launch} results in {args.directory}/ab-*-w*.json')
    columns = [('dispatch', 'dispatchMedianUs'), ('combine', 'combineMedianUs')]
    if args.halves:
        columns = [(f'{op} {half}', f'{op}{half.capitalize()}MedianUs')
                   for op in ('dispatch', 'combine') for half in ('send', 'recv')]
    if args.rank0:
        columns += [('rank 0 dispatch', 'rank0DispatchMedianUs'), ('rank 0 combine', 'rank0CombineMedianUs')]
    header = ['W', 'tokens'] + [f'{g} {name}' for g in groups for name, _ in columns]
    print('| ' + ' | '.join(header) + ' |')
    print('|' + '---|' * len(header))
    shown = {(w, t) for g, w, t in runs if g in groups}
    for world in sorted({w for w, _ in shown}, reverse=True):
        for tokens in sorted(t for w, t in shown if w == world):
            cells = [str(world), str(tokens)]
            for g in groups:
                cells += [cell(runs.get((g, world, tokens), []), key) for _, key in columns]
            print('| ' + ' | '.join(cells) + ' |')


if __name__ == '__main__':
    main()
