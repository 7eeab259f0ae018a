"""e2e/pgbench/check.py on small hand-made inputs: the rules of shared/cases/e2e-pgbench.md,
including the cases pgbench rarely produces (deltas that cancel out, a delta of 0)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CHECK = Path(__file__).resolve().parents[1] / "pgbench" / "check.py"
FILLER = " " * 4

# Accounts after the pgbench run: aid 2's deltas cancel out (+5, -5), aid 3 got +7, aid 4 a delta of 0.
ACCOUNTS = {1: 0, 2: 0, 3: 7, 4: 0}
HISTORY = {2: 0, 3: 7, 4: 0}
GOOD = ["+I[1, 1, 0, {f}]", "+I[2, 1, 0, {f}]", "+I[3, 1, 0, {f}]", "+I[4, 1, 0, {f}]",
        "2> -U[3, 1, 0, {f}]", "2> +U[3, 1, 7, {f}]"]


def run(tmp_path, changelog_lines, accounts=ACCOUNTS, history=HISTORY):
    (tmp_path / "cdc.out").write_text("".join(l.format(f=FILLER) + "\n" for l in changelog_lines))
    (tmp_path / "accounts.txt").write_text("".join(f"{a}|1|{b}|{FILLER}\n" for a, b in accounts.items()))
    (tmp_path / "history.txt").write_text("".join(f"{a}|{d}\n" for a, d in history.items()))
    r = subprocess.run([sys.executable, str(CHECK), "--changelog", str(tmp_path / "cdc.out"),
                        "--accounts", str(tmp_path / "accounts.txt"), "--history", str(tmp_path / "history.txt")],
                       capture_output=True, text=True)
    failed = {l.split()[1].rstrip(":") for l in r.stdout.splitlines() if l.startswith("FAIL ")}
    return r.returncode, failed, r.stdout


def test_a_correct_changelog_passes(tmp_path):
    rc, failed, out = run(tmp_path, GOOD)
    assert (rc, failed) == (0, set()), out
    assert out.splitlines()[-1] == "pgbench: 6 passed, 0 failed"


@pytest.mark.parametrize("lines, want_failed", [
    # An update for aid 2, whose deltas cancel out: the merge must emit nothing for it.
    (GOOD + ["-U[2, 1, 0, {f}]", "+U[2, 1, 0, {f}]"], {"rows", "updated"}),
    # aid 3's update is missing: the fold differs from PostgreSQL and the key set too.
    (GOOD[:4], {"rows", "fold", "updated"}),
    # A row read twice.
    (GOOD + ["+I[1, 1, 0, {f}]"], {"rows", "inserts"}),
    # A -U that is not the previous row.
    (GOOD[:4] + ["-U[3, 1, 9, {f}]", "+U[3, 1, 7, {f}]"], {"pairs"}),
    # A delete.
    (GOOD + ["-D[4, 1, 0, {f}]"], {"rows", "inserts", "fold"}),
    # Not a changelog line.
    (GOOD + ["garbage"], {"parse"}),
])
def test_each_fault_is_caught(tmp_path, lines, want_failed):
    rc, failed, out = run(tmp_path, lines)
    assert rc == 1, out
    assert failed == want_failed, out
