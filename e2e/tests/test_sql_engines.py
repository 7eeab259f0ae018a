"""Query a Setats table from embedded SQL engines (SPEC section 13, README "Query from SQL engines"):
the merged rows come over Flight as a pyarrow table (a snapshot read: one consistent view per
bucket), and chdb (in-process ClickHouse, `FROM Python(arrow_table)`) and DuckDB (a replacement
scan of the Arrow table) give the same aggregates as the fold of the table's changelog."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.flight as flight
import pytest

from pyarrow_client import DELETE, UPDATE_AFTER, fold

chdb = pytest.importorskip("chdb")  # installed by e2e/requirements.txt
duckdb = pytest.importorskip("duckdb")

DB = "sqlengines"
COLUMNS = [("id", "BIGINT"), ("dt", "STRING"), ("amount", "INT")]
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("amount", pa.int32()), pa.field("_row_kind", pa.int8(), nullable=False)])


@pytest.fixture(scope="module")
def orders(gateway):
    """A partitioned table after random upserts and deletes, with the fold of its changelog."""
    from pyarrow_client import SetatsClient
    with SetatsClient(gateway.url) as c:
        c.create_table(DB, "orders", COLUMNS, ["id", "dt"], partition_keys=["dt"], bucket_count=3)
        rnd = random.Random(14)
        for _ in range(20):
            rows = [{"id": rnd.randrange(300), "dt": f"2026112{rnd.randrange(3)}",
                     "amount": rnd.randrange(1000), "_row_kind": DELETE if rnd.random() < 0.15 else UPDATE_AFTER}
                    for _ in range(200)]
            c.write(DB, "orders", pa.Table.from_pylist(rows, schema=SCHEMA))
        log = []
        for _, t in c.read_table_changelog(DB, "orders"):
            log.extend(t.to_pylist())
        state = fold(log, ["id", "dt"])
        yield c, state


def expected(state: dict) -> list[tuple]:
    agg: dict = {}
    for row in state.values():
        n, s = agg.get(row["dt"], (0, 0))
        agg[row["dt"]] = (n + 1, s + row["amount"])
    return sorted((dt, n, s) for dt, (n, s) in agg.items())


def test_duckdb_over_the_snapshot(orders):
    c, state = orders
    snap = c.read_snapshot(DB, "orders", columns=["dt", "amount"])
    got = duckdb.sql("SELECT dt, count(*), sum(amount) FROM snap GROUP BY dt ORDER BY dt").fetchall()
    assert got == expected(state)


def test_chdb_over_the_snapshot(orders):
    c, state = orders
    snap = c.read_snapshot(DB, "orders")
    res = chdb.query("SELECT dt, count() AS n, sum(amount) AS s FROM Python(snap) GROUP BY dt ORDER BY dt",
                     "ArrowTable")
    got = [(r["dt"], r["n"], r["s"]) for r in res.to_pylist()]
    assert got == expected(state)


def test_partition_filter_and_path_descriptor(orders, gateway):
    c, state = orders
    one = c.read_snapshot(DB, "orders", partitions=["dt=20261121"])
    assert set(one.column("dt").to_pylist()) <= {"20261121"}
    assert one.num_rows == sum(1 for r in state.values() if r["dt"] == "20261121")
    # The one-component path "db.table", as SQL engines' Flight table functions send it.
    fc = flight.connect(gateway.url)
    info = fc.get_flight_info(flight.FlightDescriptor.for_path(f"{DB}.orders"))
    rows = sum(fc.do_get(ep.ticket).read_all().num_rows for ep in info.endpoints)
    assert rows == len(state)
    fc.close()


def test_unknown_column_is_named(orders):
    c, _ = orders
    with pytest.raises(pa.ArrowInvalid, match="unknown columns \"nope\""):
        c.read_snapshot(DB, "orders", columns=["nope"])


def test_readme_sql_engines_example_prints_what_it_shows(gateway, tmp_path):
    """README "Query from SQL engines": the example runs as written (address aside) and prints
    what the README shows."""
    import re
    import subprocess
    import sys
    from pathlib import Path
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = text[text.index("## Query from SQL engines"):]
    blocks = re.findall(r"```(\w*)\n(.*?)```", section, re.S)
    code = next(b for lang, b in blocks if lang == "python")
    shown = next(b for lang, b in blocks if lang == "")
    script = tmp_path / "engines.py"
    script.write_text(code.replace("grpc://127.0.0.1:8815", gateway.url))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == shown
