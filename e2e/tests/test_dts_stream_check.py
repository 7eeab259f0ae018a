"""e2e/dts/check_stream.py on small hand-made inputs: the streaming clause of
shared/cases/e2e-pgbench.md (every account with at least one non-zero delta gets -U/+U, one pair per
such transaction; a delta of 0 gets nothing), including the cases the bounded rule gets differently."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CHECK = Path(__file__).resolve().parents[1] / "dts" / "check_stream.py"
FILLER = " " * 4

# Five accounts at balance 0. aid 2: deltas +5, -5 (cancel out: two pairs in a stream, none in a
# bounded re-scan); aid 3: +7; aid 4: one transaction with delta 0 (no row); aid 5: +3 and 0.
BEFORE = {a: 0 for a in range(1, 6)}
AFTER = {1: 0, 2: 0, 3: 7, 4: 0, 5: 3}
HISTORY = [(3, 7), (2, 5), (5, 3), (4, 0), (2, -5), (5, 0)]
INSERTS = [f"+I[{a}, 1, 0, {{f}}]" for a in range(1, 6)]
PAIRS_2 = ["-U[2, 1, 0, {f}]", "+U[2, 1, 5, {f}]", "1> -U[2, 1, 5, {f}]", "1> +U[2, 1, 0, {f}]"]
PAIR_3 = ["3> -U[3, 1, 0, {f}]", "3> +U[3, 1, 7, {f}]"]
PAIR_5 = ["-U[5, 1, 0, {f}]", "+U[5, 1, 3, {f}]"]
GOOD = INSERTS + PAIR_3 + PAIRS_2[:2] + PAIR_5 + PAIRS_2[2:]


def run(tmp_path, lines, before=BEFORE, after=AFTER, history=HISTORY, extra=("--zero", "4", "--cancel", "2")):
    (tmp_path / "stream.out").write_text("".join(l.format(f=FILLER) + "\n" for l in lines))
    (tmp_path / "before.txt").write_text("".join(f"{a}|1|{b}\n" for a, b in before.items()))
    (tmp_path / "after.txt").write_text("".join(f"{a}|1|{b}\n" for a, b in after.items()))
    (tmp_path / "history.txt").write_text("".join(f"{a}|{d}\n" for a, d in history))
    r = subprocess.run([sys.executable, str(CHECK), "--changelog", str(tmp_path / "stream.out"),
                        "--before", str(tmp_path / "before.txt"), "--after", str(tmp_path / "after.txt"),
                        "--history", str(tmp_path / "history.txt"), *extra],
                       capture_output=True, text=True)
    lines_out = r.stdout.splitlines()
    # run.sh counts every line: each one must be a check's ok/FAIL line.
    assert lines_out and all(l.startswith(("ok   stream ", "FAIL stream ")) for l in lines_out), r.stdout + r.stderr
    failed = {l.split()[2].rstrip(":") for l in lines_out if l.startswith("FAIL ")}
    return r.returncode, failed, r.stdout


def test_a_correct_changelog_passes(tmp_path):
    rc, failed, out = run(tmp_path, GOOD)
    assert (rc, failed) == (0, set()), out
    assert len(out.splitlines()) == 9
    assert "expected 13 = 5 accounts (+I) + 2 x 4 transactions with a non-zero delta (6 in pgbench_history, 2 with delta 0" in out
    assert "aid 2 (deltas [5, -5], sum 0): expected 2 -U/+U pairs" in out


@pytest.mark.parametrize("lines, want_failed", [
    # Zero delta: aid 4's UPDATE abalance = abalance + 0 changed nothing, yet it got a pair.
    (GOOD + ["-U[4, 1, 0, {f}]", "+U[4, 1, 0, {f}]"], {"rows", "pairs", "deltas", "keys", "zero"}),
    # Cancelling deltas: aid 2 without its pairs, as the bounded re-scan rule would have it.
    ([l for l in GOOD if l not in PAIRS_2], {"rows", "deltas", "keys", "cancel"}),
    # Cancelling deltas: only the first of aid 2's two pairs.
    ([l for l in GOOD if l not in PAIRS_2[2:]], {"rows", "deltas", "fold", "cancel"}),
    # A missing pair: aid 3's update lost.
    ([l for l in GOOD if l not in PAIR_3], {"rows", "deltas", "keys", "fold"}),
    # An extra row: aid 3's +U repeated.
    (GOOD + ["+U[3, 1, 7, {f}]"], {"rows", "pairs"}),
    # An extra row: an account's +I read twice.
    (GOOD + ["+I[1, 1, 0, {f}]"], {"rows", "inserts", "pairs"}),
    # A -U that is not the row before it.
    ([l.replace("-U[3, 1, 0", "-U[3, 1, 9") for l in GOOD], {"pairs", "deltas"}),
    # A +I that is not the account as loaded before pgbench.
    ([l.replace("+I[1, 1, 0", "+I[1, 1, 1") for l in GOOD], {"inserts", "fold"}),
    # The filler (not declared by the streaming sink) changed by an update.
    ([l.replace("+U[3, 1, 7, {f}]", "+U[3, 1, 7, x]") for l in GOOD], {"pairs"}),
    # A delete.
    (GOOD + ["-D[1, 1, 0, {f}]"], {"rows", "inserts", "pairs", "fold"}),
    # Not a changelog line.
    (GOOD + ["garbage"], {"parse"}),
])
def test_each_fault_is_caught(tmp_path, lines, want_failed):
    rc, failed, out = run(tmp_path, lines)
    assert rc == 1, out
    assert failed == want_failed, out


def test_the_deterministic_cases_must_be_in_the_history(tmp_path):
    # --zero names an account without a zero-delta transaction, --cancel one whose deltas do not cancel.
    rc, failed, out = run(tmp_path, GOOD, extra=("--zero", "1", "--cancel", "3"))
    assert (rc, failed) == (1, {"zero", "cancel"}), out
