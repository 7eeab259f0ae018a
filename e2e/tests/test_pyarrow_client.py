"""The pyarrow client against a real gateway: list tables, write upserts and deletes (DoPut), read
a bucket's changelog (DoGet), and the merge rules of SPEC section 4 as a Flight user sees them."""

from __future__ import annotations

import pyarrow as pa
import pytest

from pyarrow_client import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, SetatsClient, fold

DB = "pyclient"
COLUMNS = [("id", "BIGINT"), ("name", "STRING"), ("score", "INT")]
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("score", pa.int32())])
KEY_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])


def changelog(c: SetatsClient, table: str) -> list[dict]:
    rows = []
    for _, t in c.read_table_changelog(DB, table):
        rows.extend(t.to_pylist())
    return rows


def kinds_by_key(rows: list[dict]) -> dict:
    out: dict = {}
    for r in rows:
        out.setdefault(r["id"], []).append(r["_row_kind"])
    return out


def test_gateway_info_reports_the_warehouse(client, gateway):
    info = client.gateway_info()
    assert info["warehouse"] == gateway.warehouse
    assert "hadoop" in info.get("catalogTypes", info.get("catalog_types", []))


def test_create_and_list_tables(client):
    client.create_table(DB, "listed", COLUMNS, ["id"], bucket_count=2)
    assert "listed" in client.list_tables(DB)
    assert DB in client.list_databases()
    paths = [p for p, _ in client.list_flights(DB)]
    assert [DB, "listed"] in paths
    with pytest.raises(pa.ArrowException, match="already exists.*listed|listed.*already exists"):
        client.create_table(DB, "listed", COLUMNS, ["id"])  # AlreadyExists names the table
    assert client.create_table(DB, "listed", COLUMNS, ["id"], ignore_if_exists=True)


@pytest.mark.parametrize("engine", ["DEDUPLICATE", "PARTIAL_UPDATE"])
def test_upserts_produce_the_changelog_of_the_merge(client, engine):
    table = "merge_" + engine.lower()
    client.create_table(DB, table, COLUMNS, ["id"], bucket_count=3, merge_engine=engine)

    acks = client.upsert(DB, table, [{"id": i, "name": f"n{i}", "score": i} for i in range(10)], SCHEMA)
    assert sum(int(a.get("changelogRows", 0)) for a in acks) == 10
    # Same values again: the merge result does not change, so no changelog row (SPEC section 4).
    acks = client.upsert(DB, table, [{"id": i, "name": f"n{i}", "score": i} for i in range(3)], SCHEMA)
    assert sum(int(a.get("changelogRows", 0)) for a in acks) == 0
    # New values for ids 0 and 1: -U(old), +U(new) each.
    client.upsert(DB, table, [{"id": 0, "name": "zero", "score": 100}, {"id": 1, "name": "one", "score": 101}], SCHEMA)

    rows = changelog(client, table)
    assert len(rows) == 14
    kinds = kinds_by_key(rows)
    assert kinds[0] == [INSERT, UPDATE_BEFORE, UPDATE_AFTER]
    assert kinds[1] == [INSERT, UPDATE_BEFORE, UPDATE_AFTER]
    assert all(kinds[i] == [INSERT] for i in range(2, 10))
    state = fold(rows, ["id"])
    assert state[(0,)] == {"id": 0, "name": "zero", "score": 100}
    assert state[(5,)] == {"id": 5, "name": "n5", "score": 5}
    assert client.changelog_rows(DB, table) == 14


def test_partial_update_keeps_stored_values_for_nulls(client):
    client.create_table(DB, "partial", COLUMNS, ["id"], bucket_count=1, merge_engine="PARTIAL_UPDATE")
    client.upsert(DB, "partial", [{"id": 1, "name": "a", "score": 1}], SCHEMA)
    client.upsert(DB, "partial", [{"id": 1, "name": None, "score": 2}], SCHEMA)
    rows = client.read_changelog(DB, "partial", bucket=0).to_pylist()
    assert [(r["_row_kind"], r["name"], r["score"]) for r in rows] == [
        (INSERT, "a", 1), (UPDATE_BEFORE, "a", 1), (UPDATE_AFTER, "a", 2)]


def test_deletes_emit_the_old_row(client):
    client.create_table(DB, "deletes", COLUMNS, ["id"], bucket_count=1)
    client.upsert(DB, "deletes", [{"id": 1, "name": "a", "score": 1}, {"id": 2, "name": "b", "score": 2}], SCHEMA)
    client.delete(DB, "deletes", [{"id": 1}, {"id": 3}], KEY_SCHEMA)  # 3 does not exist: nothing
    rows = client.read_changelog(DB, "deletes", bucket=0).to_pylist()
    assert [(r["_row_kind"], r["id"], r["name"]) for r in rows] == [
        (INSERT, 1, "a"), (INSERT, 2, "b"), (DELETE, 1, "a")]
    assert [r["_offset"] for r in rows] == [0, 1, 2]
    assert fold(rows, ["id"]) == {(2,): {"id": 2, "name": "b", "score": 2}}


def test_read_from_an_offset(client):
    client.create_table(DB, "offsets", COLUMNS, ["id"], bucket_count=1)
    client.upsert(DB, "offsets", [{"id": i, "name": "x", "score": i} for i in range(5)], SCHEMA)
    rows = client.read_changelog(DB, "offsets", bucket=0, offset=3).to_pylist()
    assert [r["_offset"] for r in rows] == [3, 4]
    assert [r["id"] for r in rows] == [3, 4]
    assert client.read_changelog(DB, "offsets", bucket=0, position="LATEST").num_rows == 0
    buckets = client.list_buckets(DB, "offsets")
    assert [(b["bucket"], b["start_offset"], b["end_offset"]) for b in buckets] == [(0, 0, 5)]


def test_changelog_schema(client):
    client.create_table(DB, "schema", COLUMNS, ["id"], bucket_count=1)
    client.upsert(DB, "schema", [{"id": 1, "name": "a", "score": 1}], SCHEMA)
    t = client.read_changelog(DB, "schema", bucket=0)
    assert t.schema.names == ["_row_kind", "_offset", "_commit_timestamp", "id", "name", "score"]
    assert t.schema.field("_row_kind").type == pa.int8()
    assert t.schema.field("_offset").type == pa.int64()
    assert t.schema.field("_commit_timestamp").type == pa.timestamp("ms", tz="UTC")
    assert t.schema.metadata[b"setats.bucket"] == b"0"


def test_bad_writes_are_rejected_whole(client):
    client.create_table(DB, "rejects", COLUMNS, ["id"], bucket_count=1)
    nullable_key = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.int32())])
    with pytest.raises(pa.ArrowInvalid, match="id"):
        client.write(DB, "rejects", pa.Table.from_pylist(
            [{"id": 1, "name": "a", "score": 1}, {"id": None, "name": "b", "score": 2}], schema=nullable_key))
    wrong_type = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("score", pa.int64())])
    with pytest.raises(pa.ArrowInvalid, match="score"):
        client.write(DB, "rejects", pa.Table.from_pylist([{"id": 2, "name": "a", "score": 1}], schema=wrong_type))
    unknown = pa.schema([pa.field("id", pa.int64(), nullable=False), ("nope", pa.string())])
    with pytest.raises(pa.ArrowInvalid, match="nope"):
        client.write(DB, "rejects", pa.Table.from_pylist([{"id": 3, "nope": "a"}], schema=unknown))
    # Nothing of the rejected batches was applied.
    assert client.changelog_rows(DB, "rejects") == 0
    with pytest.raises(pa.ArrowException, match="no_such_table"):
        client.read_changelog(DB, "no_such_table", bucket=0)
