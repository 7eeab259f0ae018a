"""The README's "Binlog consumption" session, run as written against a fresh gateway: the seed's
orders_source (slot.ttl 259200 s, as the README says), its INSERT/DELETE/INSERT/UPDATE, then each
`setats binlog` command the README shows, from `acquire-slot` (slot1 for a job id, as a setats-cdc
job with 'slot.name' does at start) on, prints exactly what the README shows (commit and
wall-clock times aside)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pyarrow as pa

from conftest import SETATS_BIN

README = Path(__file__).resolve().parents[2] / "README.md"
SCHEMA = pa.schema([pa.field("c1", pa.int32(), nullable=False), ("c2", pa.int32()), ("c3", pa.int32())])
SLOT_TTL = "259200 s"  # the table option the README's session states
TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}Z")


def readme_section() -> str:
    text = README.read_text()
    return text[text.index("## Binlog consumption"):]


def readme_session() -> list[tuple[str, str]]:
    """The (command line, output) pairs of the first plain code block after the heading."""
    section = readme_section()
    block = next(body for lang, body in re.findall(r"```(\w*)\n(.*?)```", section, re.S) if lang == "")
    pairs: list[tuple[str, str]] = []
    for line in block.splitlines(keepends=True):
        if line.startswith("$ "):
            pairs.append((line[2:].strip(), ""))
        else:
            pairs[-1] = (pairs[-1][0], pairs[-1][1] + line)
    return pairs


def times_masked(s: str) -> str:
    return TIME.sub("<time>", s)


def test_binlog_cli_prints_what_the_readme_shows(client, gateway):
    session = readme_session()
    assert [cmd.split()[2] for cmd, _ in session] == [
        "acquire-slot", "sync-point", "changes", "register-sync-point", "consumed", "progress", "slots"]
    assert f"'slot.ttl' = '{SLOT_TTL}'" in " ".join(readme_section().split())
    client.create_table("default", "orders_source", [("c1", "INT"), ("c2", "INT"), ("c3", "INT")], ["c1"],
                        bucket_count=1, options={"slot.ttl": SLOT_TTL})
    # The seed: INSERT 100; DELETE 100; INSERT 200; UPDATE 200 SET c2 = 2 (one statement per write).
    client.upsert("default", "orders_source", [{"c1": 100, "c2": 1, "c3": 1}], SCHEMA)
    client.delete("default", "orders_source", [{"c1": 100}], pa.schema([pa.field("c1", pa.int32(), nullable=False)]))
    client.upsert("default", "orders_source", [{"c1": 200, "c2": 1, "c3": 1}], SCHEMA)
    client.upsert("default", "orders_source", [{"c1": 200, "c2": 2, "c3": 1}], SCHEMA)
    for cmd, shown in session:
        args = cmd.replace("grpc://localhost:8815", gateway.url).split()
        assert args[0] == "setats"
        out = subprocess.run([str(SETATS_BIN), *args[1:]], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, f"{cmd}: {out.stderr}"
        assert times_masked(out.stdout) == times_masked(shown), cmd
