#!/usr/bin/env python3
"""Checks of e2e/dts/run.sh: the folded -U/+U/-D changelog of pgbench_accounts read through the
dts connector equals the PostgreSQL table; the changed keys equal those of pgbench_history; one
update per pgbench transaction (no change lost or repeated across the gateway's kill -9).

Prints one line per check ("ok ..." / "FAIL ...") and exits 1 when any failed."""
import argparse
import re
import sys

ROW = re.compile(r'([+-][IUD])\[(-?\d+), (-?\d+), (-?\d+)\]')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--changelog', required=True)   # print sink output
    ap.add_argument('--before', required=True)      # aid|bid|abalance before pgbench
    ap.add_argument('--after', required=True)       # aid|bid|abalance after pgbench
    ap.add_argument('--history', required=True)     # aid per pgbench_history row
    a = ap.parse_args()
    table = {}
    for line in open(a.before):
        aid, bid, bal = line.strip().split('|')
        table[int(aid)] = (int(bid), int(bal))
    kinds = {'+I': 0, '-U': 0, '+U': 0, '-D': 0}
    changed = set()
    problems = []
    for line in open(a.changelog):
        m = ROW.search(line)
        if not m:
            continue
        k, aid, bid, bal = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
        kinds[k] += 1
        if k == '-U' or k == '-D':
            if table.get(aid) != (bid, bal):
                problems.append(f'{k} aid {aid}: before image ({bid}, {bal}) but the fold has {table.get(aid)}')
            if k == '-D':
                table.pop(aid, None)
        else:
            table[aid] = (bid, bal)
            if k == '+U':
                changed.add(aid)
    want = {}
    for line in open(a.after):
        aid, bid, bal = line.strip().split('|')
        want[int(aid)] = (int(bid), int(bal))
    history = [int(l.strip()) for l in open(a.history) if l.strip()]
    failed = 0

    def check(ok, what):
        nonlocal failed
        print(('ok   ' if ok else 'FAIL ') + what)
        failed += 0 if ok else 1

    check(not problems, f'before images match the fold ({len(problems)} mismatches) {problems[:3]}')
    diff = [k for k in set(table) | set(want) if table.get(k) != want.get(k)]
    check(not diff, f'folded changelog equals pgbench_accounts ({len(want)} rows, {len(diff)} differ: {sorted(diff)[:5]})')
    check(changed == set(history), f'changed keys equal pgbench_history keys ({len(changed)} vs {len(set(history))})')
    check(kinds['+U'] == len(history) and kinds['-U'] == len(history),
          f"one -U/+U pair per pgbench transaction: {kinds['-U']} -U, {kinds['+U']} +U, {len(history)} transactions (none lost, none repeated)")
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
