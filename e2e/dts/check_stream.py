#!/usr/bin/env python3
"""Checks of e2e/dts/run.sh's streaming job (e2e/dts/stream.sql), the streaming clause of
shared/cases/e2e-pgbench.md: pgbench_accounts was loaded into setats before pgbench ran (one +I per
account), then the channel's UPDATEs of the accounts were upserted into it one by one. The setats
changelog read from earliest must hold:

  parse    every printed line is a changelog row `[prefix> ]KIND[aid, bid, abalance, filler]`
  rows     rows = accounts + 2 x (pgbench_history rows whose delta is not 0)
  inserts  one +I per account, as its first row, equal to the account before pgbench; no -D
  pairs    every key reads +I, then (-U, +U)*: each -U equal to the row before it, each +U different
           from its -U (SPEC section 4: an update equal to the stored row emits nothing), filler kept
  deltas   per key, the +U - -U balance differences are exactly its non-zero deltas (as multisets)
  keys     the keys with -U/+U are exactly the accounts with at least one non-zero delta (a
           streaming source: deltas that cancel out still update; only all-zero accounts do not)
  fold     the changelog folded equals pgbench_accounts after pgbench (aid, bid, abalance)
  zero / cancel (with --zero AID / --cancel AID): the deterministic cases, with their figures

Inputs: --changelog (the print sink's output), --before and --after (`aid|bid|abalance` of
pgbench_accounts), --history (`aid|delta` per pgbench_history row). Prints one line per check,
"ok   NAME: ..." or "FAIL NAME: ...", and exits 1 when any failed."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

# The changelog rows and the samples in the messages as e2e/pgbench/check.py (same print format).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pgbench"))
from check import parse_changelog as parse_rows, sample  # noqa: E402


def parse_changelog(path):
    """(kind, aid, bid, abalance, filler) per printed row, and the lines that are not rows."""
    rows, bad = parse_rows(path)
    return [(kind, *values) for kind, values in rows], bad


def parse_accounts(path):
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                aid, bid, bal = line.strip().split("|")[:3]
                out[int(aid)] = (int(bid), int(bal))
    return out


def parse_history(path):
    """aid -> list of deltas (one per pgbench_history row)."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                aid, delta = line.strip().split("|")
                out.setdefault(int(aid), []).append(int(delta))
    return out


def check_stream(rows, bad, before, after, history, zero=None, cancel=None):
    """The checks, as a list of (ok, name, detail)."""
    results = []

    def check(ok, name, detail):
        results.append((bool(ok), name, detail))

    nonzero = {aid: [d for d in ds if d != 0] for aid, ds in history.items()}
    tx = sum(len(ds) for ds in history.values())
    tx_nonzero = sum(len(ds) for ds in nonzero.values())
    want_keys = {aid for aid, ds in nonzero.items() if ds}
    cancelling = {aid for aid in want_keys if sum(history[aid]) == 0}
    all_zero = set(history) - want_keys

    check(not bad, "parse", f"{len(rows)} changelog rows parsed"
          + (f"; {len(bad)} lines are not rows, first: {bad[0]}" if bad else ""))

    expected = len(before) + 2 * tx_nonzero
    check(len(rows) == expected, "rows",
          f"{len(rows)} changelog rows, expected {expected} = {len(before)} accounts (+I) + 2 x {tx_nonzero} "
          f"transactions with a non-zero delta ({tx} in pgbench_history, {tx - tx_nonzero} with delta 0: no row)")

    by_key = {}
    for kind, aid, bid, bal, filler in rows:
        by_key.setdefault(aid, []).append((kind, (bid, bal), filler))
    first_not_insert = [k for k, seq in by_key.items() if seq[0][0] != "+I"]
    inserts = Counter(aid for kind, aid, *_ in rows if kind == "+I")
    several = [k for k, n in inserts.items() if n > 1]
    no_insert = set(before) - set(inserts)
    unknown = set(inserts) - set(before)
    not_before = [k for k, seq in by_key.items() if seq[0][0] == "+I" and k in before and seq[0][1] != before[k]]
    deletes = [aid for kind, aid, *_ in rows if kind == "-D"]
    check(not (first_not_insert or several or no_insert or unknown or not_before or deletes), "inserts",
          f"{len(inserts)} keys with +I of {len(before)} accounts; first row not +I: {len(first_not_insert)} "
          f"{sample(first_not_insert)}; several +I: {len(several)} {sample(several)}; without +I: {len(no_insert)} "
          f"{sample(no_insert)}; not an account: {len(unknown)}; +I differs from the account before pgbench: "
          f"{len(not_before)} {sample(not_before)}; -D rows: {len(deletes)}")

    bad_seq, equal_pairs, filler_changed, wrong_deltas = [], [], [], []
    got_deltas = {}
    for k, seq in by_key.items():
        kinds = [kd for kd, _, _ in seq]
        if kinds[:1] != ["+I"] or kinds[1:] != ["-U", "+U"] * ((len(kinds) - 1) // 2) or len(kinds) % 2 == 0:
            bad_seq.append(k)
            continue
        ds = []
        for i in range(1, len(seq), 2):
            (_, prev, pfill), (_, ub, ufill), (_, ua, afill) = seq[i - 1], seq[i], seq[i + 1]
            if ub != prev or ufill != pfill:
                bad_seq.append(k)
            if ua == ub:
                equal_pairs.append(k)
            if afill != ufill:
                filler_changed.append(k)
            ds.append(ua[1] - ub[1])
        got_deltas[k] = ds
        if sorted(ds) != sorted(nonzero.get(k, [])):
            wrong_deltas.append(k)
    bad_seq = sorted(set(bad_seq))
    check(not (bad_seq or equal_pairs or filler_changed), "pairs",
          f"{len(by_key) - len(bad_seq)} of {len(by_key)} keys read +I, then (-U = the row before, +U)*; "
          f"not so: {len(bad_seq)} {sample(bad_seq)}; -U/+U pairs with +U equal to -U: {len(set(equal_pairs))} "
          f"{sample(set(equal_pairs))}; filler changed: {len(set(filler_changed))}")
    check(not wrong_deltas, "deltas",
          f"{len(by_key) - len(wrong_deltas)} of {len(by_key)} keys: the -U/+U balance differences are the key's "
          f"non-zero deltas in pgbench_history; not so: {len(wrong_deltas)} "
          + "; ".join(f"aid {k}: got {got_deltas[k]}, deltas {history.get(k, [])}" for k in sorted(wrong_deltas)[:3]))

    updated = {aid for kind, aid, *_ in rows if kind in ("-U", "+U")}
    check(updated == want_keys, "keys",
          f"{len(updated)} keys got -U/+U, {len(want_keys)} accounts have at least one non-zero delta "
          f"({len(cancelling)} of them with deltas summing to 0, which a bounded re-scan would not update; "
          f"{len(all_zero)} touched accounts with only zero deltas, which must get none); "
          f"updated without a non-zero delta: {len(updated - want_keys)} {sample(updated - want_keys)}; "
          f"not updated: {len(want_keys - updated)} {sample(want_keys - updated)}")

    state = {}
    for kind, aid, bid, bal, _ in rows:
        if kind in ("+I", "+U"):
            state[aid] = (bid, bal)
        elif kind == "-D":
            state.pop(aid, None)
    differ = sorted(k for k in set(state) | set(after) if state.get(k) != after.get(k))
    detail = f"{len(state)} folded rows vs {len(after)} in pgbench_accounts; {len(differ)} differ {sample(differ)}"
    if differ:
        k = differ[0]
        detail += f"; e.g. aid {k}: setats {state.get(k)} vs postgres {after.get(k)}"
    check(not differ, "fold", detail)

    def pairs_of(aid):
        return sum(1 for kd, _, _ in by_key.get(aid, []) if kd == "-U")

    def rows_of(aid):
        return " ".join(f"{kd}[{aid}, {r[0]}, {r[1]}]" for kd, r, _ in by_key.get(aid, [])) or "none"

    if zero is not None:
        ds = history.get(zero, [])
        want = len([d for d in ds if d != 0])
        check(pairs_of(zero) == want and want == 0 and ds, "zero",
              f"aid {zero} (deltas {ds}: one UPDATE abalance = abalance + 0): expected +I only, 0 -U/+U pairs; "
              f"got {pairs_of(zero)} pairs: {rows_of(zero)}")
    if cancel is not None:
        ds = history.get(cancel, [])
        want = len([d for d in ds if d != 0])
        check(pairs_of(cancel) == want and want >= 2 and sum(ds) == 0, "cancel",
              f"aid {cancel} (deltas {ds}, sum {sum(ds)}): expected {want} -U/+U pairs (the bounded re-scan rule "
              f"would expect 0); got {pairs_of(cancel)} pairs: {rows_of(cancel)}")
    return results


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--changelog", required=True)
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--history", required=True)
    ap.add_argument("--zero", type=int, help="an account whose only transaction has delta 0")
    ap.add_argument("--cancel", type=int, help="an account whose non-zero deltas sum to 0")
    a = ap.parse_args(argv)
    rows, bad = parse_changelog(a.changelog)
    results = check_stream(rows, bad, parse_accounts(a.before), parse_accounts(a.after), parse_history(a.history),
                           a.zero, a.cancel)
    for ok, name, detail in results:
        print(f"{'ok  ' if ok else 'FAIL'} stream {name}: {detail}")
    return 0 if all(ok for ok, _, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
