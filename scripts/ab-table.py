#!/usr/bin/env python3
"""Tables of an A/B call's results (scripts/gpu-ab.sh): for each variant group, world and token
count, the mean of the runs' slowest-rank medians of dispatch and combine, each run in brackets.

    python3 scripts/ab-table.py DIR base,new [--preset deepseek-v3] [--launch graph] [--rank0] [--halves]
    python3 scripts/ab-table.py DIR base,new --launch-cost

DIR holds the call's ab-<label>-w<W>.json files (gpu-ab.sh's ab.tgz, unpacked). A label's runs are
grouped by the label without its trailing digits (base, base2, base3: group base). Token counts and
worlds are those the groups' files hold (worlds largest first). --rank0 adds rank 0's medians (the method of
pplx-kernels' own benchmark) as two more columns per group; --halves gives the four halves (dispatch
send and recv, combine send and recv) instead of the two operations: plain launches time them apart,
a graph replay does not. --launch-cost tabulates the launch-cost lines instead (ab-<label>-launch-cost.json,
ab-<label>-launch-floor.json): per case of LaunchCostBenchmark and the C++ floor, the mean of the runs'
scores in us, each run in brackets. Prints a Markdown table.
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


def label_group(path, suffix):
    """The variant group of a file ab-<label><suffix>: the label without its trailing digits."""
    return re.sub(r'\d+$', '', os.path.basename(path)[len('ab-'):-len(suffix)])


def launch_cost_table(directory, groups):
    """Rows of (case, {group: [us, ...]}) from the launch-cost lines' files, the C++ floor first."""
    scores = defaultdict(lambda: defaultdict(list))
    for path in sorted(glob.glob(os.path.join(directory, 'ab-*-launch-floor.json'))):
        with open(path) as f:
            scores['C++ cuLaunchKernel floor'][label_group(path, '-launch-floor.json')].append(json.load(f)['launchNs'] / 1000)
    for path in sorted(glob.glob(os.path.join(directory, 'ab-*-launch-cost.json'))):
        with open(path) as f:
            for r in json.load(f):
                case = r['benchmark'].rsplit('.', 1)[1]
                scores[case][label_group(path, '-launch-cost.json')].append(r['primaryMetric']['score'] / 1000)
    return [(case, scores[case]) for case in scores if any(g in scores[case] for g in groups)]


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
    parser.add_argument('--launch-cost', action='store_true', help="the launch-cost lines' cases, us")
    args = parser.parse_args()
    groups = args.groups.split(',')
    if args.launch_cost:
        rows = launch_cost_table(args.directory, groups)
        if not rows:
            raise SystemExit(f'no launch-cost results in {args.directory}/ab-*-launch-cost.json')
        print('| case | ' + ' | '.join(groups) + ' |')
        print('|' + '---|' * (len(groups) + 1))
        for case, by_group in rows:
            cells = ['%.2f (%s)' % (statistics.mean(by_group[g]), ', '.join('%.2f' % v for v in by_group[g]))
                     if by_group.get(g) else '-' for g in groups]
            print(f'| {case} | ' + ' | '.join(cells) + ' |')
        return
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
