"""pyarrow lists slots and reads consume progress as proto/README.md ("Binlog actions") shows:
plain pyarrow.flight with JSON bodies, against a real gateway (SPEC section 8)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.flight as fl

DB = "binlog_py"
SCHEMA = pa.schema([pa.field("c1", pa.int32(), nullable=False), ("c2", pa.int32()), ("c3", pa.int32())])


PROTO_README = Path(__file__).resolve().parents[2] / "proto" / "README.md"


def readme_snippet() -> str:
    """The python block after "pyarrow, listing slots and reading progress" in proto/README.md."""
    text = PROTO_README.read_text()
    section = text[text.index("pyarrow, listing slots and reading progress"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def act(c: fl.FlightClient, name: str, body: dict) -> dict:
    return json.loads(next(c.do_action(fl.Action(name, json.dumps(body).encode()))).body.to_pybytes())


def test_slots_and_progress_from_pyarrow(client, gateway):
    client.create_table(DB, "orders_source", [("c1", "INT"), ("c2", "INT"), ("c3", "INT")], ["c1"], bucket_count=1,
                        options={"slot.ttl": "3 d"})
    client.upsert(DB, "orders_source", [{"c1": 100, "c2": 1, "c3": 1}, {"c1": 200, "c2": 1, "c3": 1}], SCHEMA)

    c = fl.connect(gateway.url)
    table = {"database": DB, "table": "orders_source"}
    info = act(c, "binlog-acquire-slot", {**table, "slot": "slot1", "owner": "py-job"})
    assert info["created"] and info["status"] == "SLOT_ACTIVE"
    act(c, "binlog-register-sync-point", {**table, "slot": "slot1", "owner": "py-job", "checkpoint": True,
                                          "points": [{"bucket": 0, "offset": 1}]})

    # proto/README.md's snippet as written there (only the address and the database differ).
    snippet = readme_snippet().replace("grpc://localhost:8815", gateway.url).replace('"shop"', f'"{DB}"')
    scope: dict = {}
    exec(compile(snippet, "proto/README.md", "exec"), scope)
    slots, rows = scope["slots"], scope["rows"]
    scope["c"].close()

    assert [s["name"] for s in slots] == ["slot1"]
    assert slots[0]["owner"] == "py-job" and slots[0]["buckets"][0]["checkpointOffset"] == "1"
    cp = [r for r in rows if r["checkpoint"]]
    assert len(cp) == 1 and cp[0]["slot"] == "slot1"
    assert (cp[0]["consumedOffset"], cp[0]["endOffset"], cp[0]["unconsumed"]) == ("1", "2", "1")
    assert cp[0]["status"] == "SLOT_ACTIVE"
    assert act(c, "binlog-consumed", table)["consumed"] is False
    c.close()
