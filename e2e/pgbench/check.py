"""Checks of the pgbench e2e (the rules of shared/cases/e2e-pgbench.md).

Inputs (written by e2e/pgbench/run.sh):
  --changelog FILE  what the setats-cdc job (earliest) printed: `[prefix> ]KIND[aid, bid, abalance, filler]`
  --accounts FILE   `psql -At -F'|'` of SELECT aid, bid, abalance, filler FROM pgbench_accounts
  --history FILE    `psql -At -F'|'` of SELECT aid, sum(delta) FROM pgbench_history GROUP BY aid

Checks, each printed as PASS/FAIL with figures, then `pgbench: N passed, N failed`:
  parse       every printed line is a changelog row
  rows        changelog rows = accounts + 2 x (accounts whose summed delta is not 0)
  inserts     every account got exactly one +I, as its first row, and nothing got -D
  fold        the changelog folded (+I/+U set, -D removes) equals pgbench_accounts, every column
  updated     the keys that received -U/+U are exactly those whose summed delta in pgbench_history is
              not 0 (pairs with delta 0, or deltas that cancel out, change nothing: SPEC section 4)
  pairs       each updated key got one -U equal to its previous row, then one +U (two bounded scans:
              one update per key at most)
"""

from __future__ import annotations

import argparse
import re
import sys

LINE = re.compile(r"^(?:[^\[\]]*?> )?([+-][IUD])\[(.*)\]$")


def parse_changelog(path: str):
    rows, bad = [], []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            m = LINE.match(line)
            if not m:
                bad.append((n, line[:120]))
                continue
            parts = m.group(2).split(", ", 3)
            if len(parts) != 4:
                bad.append((n, line[:120]))
                continue
            aid, bid, abalance, filler = parts
            try:
                rows.append((m.group(1), (int(aid), int(bid), int(abalance), None if filler == "null" else filler)))
            except ValueError:
                bad.append((n, line[:120]))
    return rows, bad


def parse_accounts(path: str) -> dict:
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            aid, bid, abalance, filler = line.split("|", 3)
            out[int(aid)] = (int(aid), int(bid), int(abalance), filler)
    return out


def parse_history(path: str) -> dict:
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                aid, total = line.split("|")
                out[int(aid)] = int(total)
    return out


def sample(xs, n=5):
    xs = sorted(xs)
    return ", ".join(map(str, xs[:n])) + (" ..." if len(xs) > n else "")


def main(argv) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--changelog", required=True)
    ap.add_argument("--accounts", required=True)
    ap.add_argument("--history", required=True)
    a = ap.parse_args(argv)

    rows, bad = parse_changelog(a.changelog)
    accounts = parse_accounts(a.accounts)
    history = parse_history(a.history)
    changed = {aid for aid, total in history.items() if total != 0}
    touched = set(history)

    results = []

    def check(name, ok, detail):
        results.append(ok)
        print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}")

    check("parse", not bad, f"{len(rows)} changelog rows parsed"
          + (f"; {len(bad)} lines are not rows, first: {bad[0]}" if bad else ""))

    expected = len(accounts) + 2 * len(changed)
    check("rows", len(rows) == expected,
          f"{len(rows)} changelog rows, expected {expected} = {len(accounts)} accounts + 2 x {len(changed)} changed "
          f"({len(touched)} accounts in pgbench_history, {len(touched) - len(changed)} of them with summed delta 0)")

    by_key: dict = {}
    for kind, row in rows:
        by_key.setdefault(row[0], []).append((kind, row))
    first_not_insert = [k for k, seq in by_key.items() if seq[0][0] != "+I"]
    inserts = {}
    for kind, row in rows:
        if kind == "+I":
            inserts[row[0]] = inserts.get(row[0], 0) + 1
    multi = [k for k, n in inserts.items() if n > 1]
    no_insert = set(accounts) - set(inserts)
    deletes = [row[0] for kind, row in rows if kind == "-D"]
    check("inserts", not (first_not_insert or multi or no_insert or deletes),
          f"{len(inserts)} keys with +I; first row not +I: {len(first_not_insert)}; several +I: {len(multi)}; "
          f"accounts without +I: {len(no_insert)} ({sample(no_insert)}); -D rows: {len(deletes)}")

    state: dict = {}
    for kind, row in rows:
        if kind in ("+I", "+U"):
            state[row[0]] = row
        elif kind == "-D":
            state.pop(row[0], None)
    missing = set(accounts) - set(state)
    extra = set(state) - set(accounts)
    differ = [k for k in set(accounts) & set(state) if accounts[k] != state[k]]
    detail = f"{len(state)} folded rows vs {len(accounts)} in pgbench_accounts; missing {len(missing)}, extra {len(extra)}, different {len(differ)}"
    if differ:
        k = min(differ)
        detail += f"; e.g. aid {k}: setats {state[k][:3]} vs postgres {accounts[k][:3]}"
    check("fold", not (missing or extra or differ), detail)

    updated = {row[0] for kind, row in rows if kind in ("-U", "+U")}
    check("updated", updated == changed,
          f"{len(updated)} keys got -U/+U, {len(changed)} accounts have a non-zero summed delta; "
          f"updated but unchanged: {len(updated - changed)} ({sample(updated - changed)}); "
          f"changed but not updated: {len(changed - updated)} ({sample(changed - updated)})")

    bad_pairs = []
    for k in updated:
        seq = by_key.get(k, [])
        kinds = [kd for kd, _ in seq]
        if kinds != ["+I", "-U", "+U"] or seq[1][1] != seq[0][1]:
            bad_pairs.append(k)
    check("pairs", not bad_pairs,
          f"{len(updated) - len(bad_pairs)} of {len(updated)} updated keys read +I, -U(= the +I row), +U"
          + (f"; not so: {sample(bad_pairs)}" if bad_pairs else ""))

    passed = sum(results)
    print(f"pgbench: {passed} passed, {len(results) - passed} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
