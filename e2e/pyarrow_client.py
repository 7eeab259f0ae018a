"""A small Setats client in Python, on pyarrow's Arrow Flight client alone.

It speaks the wire contract of proto/README.md with JSON bodies (no generated code needed):
list databases and tables, create tables, write upserts and deletes (DoPut with a `_row_kind`
column), read a bucket's changelog (DoGet with a ChangelogTicket), read every bucket of a table
(GetFlightInfo endpoints).

    from pyarrow_client import SetatsClient
    c = SetatsClient("grpc://127.0.0.1:8815")
    print(c.list_tables("default"))

    # A gateway with --users-file and TLS (README "Security"): the CA of its --tls-cert and a user.
    c = SetatsClient("grpc+tls://gateway.example:8815", username="etl", password="etl-password",
                     tls_ca_cert="ca.pem")

Run as a script for a quick look at a gateway:

    python3 e2e/pyarrow_client.py --url grpc://127.0.0.1:8815 tables [DATABASE]
    python3 e2e/pyarrow_client.py --url grpc://127.0.0.1:8815 buckets DATABASE TABLE
    python3 e2e/pyarrow_client.py --url grpc://127.0.0.1:8815 changelog DATABASE TABLE [PARTITION] [BUCKET]
    SETATS_PASSWORD=etl-password python3 e2e/pyarrow_client.py --url grpc+tls://127.0.0.1:8815 \
        --tls-ca-cert ca.pem --username etl tables shop
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Iterable, Sequence

import pyarrow as pa
import pyarrow.flight as flight

# Flink RowKind byte values (SPEC section 0) and their short strings.
ROW_KINDS = {0: "+I", 1: "-U", 2: "+U", 3: "-D"}
INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3


def _json(body: dict | None) -> bytes:
    return json.dumps(body or {}).encode()


def _int(v, default: int = 0) -> int:
    """proto3 JSON writes int64 as strings and leaves zero values out."""
    return default if v is None else int(v)


class SetatsClient:
    """Talks to one Setats gateway over Arrow Flight.

    url: "grpc://host:port" or "grpc+tls://host:port" (the connector's manager-url). catalog:
    optional CatalogContext fields (warehouse, catalog_type, catalog_name) sent with every request
    that names a table. username, password: a user of the gateway's --users-file (the connector's
    `username`/`password`); the client logs in once with a Flight handshake and sends the bearer
    token it gets on every call (a token expires after the gateway's --token-ttl: make a new
    client). tls_ca_cert: path of a PEM file with the CA of the gateway's --tls-cert (the
    connector's `tls.ca-cert`; default: the system's roots). Wrong credentials raise
    FlightUnauthenticatedError here.
    """

    def __init__(self, url: str = "grpc://127.0.0.1:8815", catalog: dict | None = None,
                 username: str | None = None, password: str | None = None,
                 tls_ca_cert: str | None = None):
        if "://" not in url:
            url = "grpc://" + url
        self.url = url
        self.catalog = catalog or {}
        kwargs = {}
        if tls_ca_cert:
            with open(tls_ca_cert, "rb") as f:
                kwargs["tls_root_certs"] = f.read()
        self.client = flight.FlightClient(url, **kwargs)
        self.options = flight.FlightCallOptions()
        if username:
            try:
                token = self.client.authenticate_basic_token(username, password or "")
            except Exception:
                self.client.close()
                raise
            self.options = flight.FlightCallOptions(headers=[token])

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> "SetatsClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- actions -------------------------------------------------------------------------

    def action(self, name: str, body: dict | None = None) -> list[dict]:
        """Runs a DoAction with a JSON body; returns the JSON results (an empty result is {})."""
        out = []
        for r in self.client.do_action(flight.Action(name, _json(body)), self.options):
            raw = r.body.to_pybytes()
            out.append(json.loads(raw) if raw.strip() else {})
        return out

    def _with_catalog(self, body: dict) -> dict:
        if self.catalog:
            body = dict(body, catalog=self.catalog)
        return body

    def gateway_info(self) -> dict:
        return self.action("gateway-info")[0]

    def list_databases(self) -> list[str]:
        return self.action("list-databases", self._with_catalog({}))[0].get("databases", [])

    def list_tables(self, database: str = "default") -> list[str]:
        return self.action("list-tables", self._with_catalog({"database": database}))[0].get("tables", [])

    def create_table(self, database: str, table: str, columns: Sequence[tuple[str, str]],
                     primary_key: Sequence[str], partition_keys: Sequence[str] = (),
                     bucket_count: int = 0, bucket_key: Sequence[str] = (),
                     merge_engine: str = "DEDUPLICATE", options: dict | None = None,
                     ignore_if_exists: bool = False) -> dict:
        """Creates a table (and its database). columns: (name, Flink SQL type) pairs. Returns TableInfo."""
        spec = {
            "database": database,
            "table": table,
            "columns": [{"name": n, "type": t} for n, t in columns],
            "primaryKey": list(primary_key),
            "partitionKeys": list(partition_keys),
            "bucketCount": bucket_count,
            "bucketKey": list(bucket_key),
            "mergeEngine": merge_engine,
            "options": options or {},
        }
        body = self._with_catalog({"spec": spec, "ignoreIfExists": ignore_if_exists, "createDatabase": True})
        return self.action("create-table", body)[0]

    def get_table(self, database: str, table: str) -> dict:
        return self.action("get-table", self._with_catalog({"database": database, "table": table}))[0]

    def drop_table(self, database: str, table: str, ignore_if_not_exists: bool = False) -> None:
        self.action("drop-table", self._with_catalog(
            {"database": database, "table": table, "ignoreIfNotExists": ignore_if_not_exists}))

    def list_buckets(self, database: str, table: str) -> list[dict]:
        """Every (partition, bucket) with rows: dicts with partition, bucket, start_offset, end_offset."""
        res = self.action("list-buckets", self._with_catalog({"database": database, "table": table}))[0]
        return [{
            "partition": b.get("partition", ""),
            "bucket": _int(b.get("bucket")),
            "start_offset": _int(b.get("startOffset", b.get("start_offset"))),
            "end_offset": _int(b.get("endOffset", b.get("end_offset"))),
            "last_commit_ms": _int(b.get("lastCommitMs", b.get("last_commit_ms"))),
        } for b in res.get("buckets", [])]

    def changelog_rows(self, database: str, table: str) -> int:
        """Retained changelog rows of the table, summed over its buckets."""
        return sum(b["end_offset"] - b["start_offset"] for b in self.list_buckets(database, table))

    # ---- writing -------------------------------------------------------------------------

    def write(self, database: str, table: str, data: pa.Table | pa.RecordBatch,
              create_if_absent: dict | None = None) -> list[dict]:
        """Writes rows with DoPut; one WriteAck (dict) per record batch, each sent once durable.

        data: the columns to write (a subset of the table's that includes the primary key), with
        the Arrow types of proto/README.md, optionally with an int8 `_row_kind` column (0 +I, 1 -U,
        2 +U, 3 -D); without it every row is an upsert.
        """
        batches = data.to_batches() if isinstance(data, pa.Table) else [data]
        cmd = self._with_catalog({"database": database, "table": table})
        if create_if_absent:
            cmd["createIfAbsent"] = create_if_absent
        descriptor = flight.FlightDescriptor.for_command(_json(cmd))
        writer, acks_reader = self.client.do_put(descriptor, data.schema, self.options)
        acks = []
        try:
            for b in batches:
                writer.write_batch(b)
                buf = acks_reader.read()
                if buf is not None:
                    acks.append(json.loads(buf.to_pybytes()))
            writer.done_writing()
            while True:
                buf = acks_reader.read()
                if buf is None:
                    break
                acks.append(json.loads(buf.to_pybytes()))
        finally:
            writer.close()
        return acks

    def upsert(self, database: str, table: str, rows: Sequence[dict], schema: pa.Schema) -> list[dict]:
        """Upserts rows given as dicts (column name -> value) with the given Arrow schema."""
        return self.write(database, table, pa.Table.from_pylist(list(rows), schema=schema))

    def delete(self, database: str, table: str, keys: Sequence[dict], schema: pa.Schema) -> list[dict]:
        """Deletes the rows with these primary keys (dicts of the key columns; schema: key columns)."""
        t = pa.Table.from_pylist(list(keys), schema=schema)
        t = t.append_column(pa.field("_row_kind", pa.int8(), nullable=False),
                            pa.array([DELETE] * t.num_rows, pa.int8()))
        return self.write(database, table, t)

    # ---- reading -------------------------------------------------------------------------

    def read_changelog(self, database: str, table: str, partition: str = "", bucket: int = 0,
                       offset: int | None = None, position: str = "EARLIEST",
                       follow: bool = False) -> pa.Table:
        """Reads one bucket's changelog (DoGet): columns _row_kind, _offset, _commit_timestamp, then
        the table's. Starts at `offset` when given, else at `position` (EARLIEST or LATEST).
        follow=False ends at the bucket's end as of the call."""
        ticket = self._with_catalog({"database": database, "table": table, "partition": partition,
                                     "bucket": bucket, "follow": follow})
        if offset is not None:
            ticket["offset"] = str(offset)
        else:
            ticket["position"] = position
        return self.client.do_get(flight.Ticket(_json(ticket)), self.options).read_all()

    def read_table_changelog(self, database: str, table: str) -> Iterable[tuple[dict, pa.Table]]:
        """Every bucket's changelog from its earliest offset, bounded: (endpoint info, table) pairs,
        through GetFlightInfo's endpoints."""
        info = self.client.get_flight_info(flight.FlightDescriptor.for_path(database, table), self.options)
        for ep in info.endpoints:
            reader = self.client.do_get(ep.ticket, self.options)
            t = reader.read_all()
            meta = t.schema.metadata or {}
            yield ({"partition": meta.get(b"setats.partition", b"").decode(),
                    "bucket": int(meta.get(b"setats.bucket", b"0"))}, t)

    def read_snapshot(self, database: str, table: str, columns: Sequence[str] = (),
                      partitions: Sequence[str] = ()) -> pa.Table:
        """The merged table (SPEC section 13): GetFlightInfo with a snapshot ReadCommand pins one
        view per bucket, then every endpoint is read and the tables are concatenated. Columns:
        `_key` (the encoded primary key, binary), then `columns` (all when empty); `partitions`
        selects partition names ("dt=20261129")."""
        cmd = self._with_catalog({"database": database, "table": table,
                                  "snapshot": {"columns": list(columns), "partitions": list(partitions)}})
        info = self.client.get_flight_info(flight.FlightDescriptor.for_command(_json(cmd)), self.options)
        parts = [self.client.do_get(ep.ticket, self.options).read_all() for ep in info.endpoints]
        if not parts:
            return info.schema.empty_table()
        return pa.concat_tables([t.replace_schema_metadata(None) for t in parts])

    def list_flights(self, database: str = "") -> list[tuple[list[str], pa.Schema]]:
        """ListFlights: (path [db, table], table schema) per table."""
        out = []
        for fi in self.client.list_flights(database.encode(), self.options):
            out.append(([p.decode() if isinstance(p, bytes) else p for p in fi.descriptor.path], fi.schema))
        return out


def fold(changelog: Iterable[dict], key: Sequence[str]) -> dict:
    """Folds changelog rows (dicts with `_row_kind` and the columns) into the state they describe:
    key tuple -> row dict (without the reserved columns). +I/+U set the row, -D removes it, -U is
    checked against the current row and otherwise ignored."""
    state: dict = {}
    for r in changelog:
        k = tuple(r[c] for c in key)
        row = {c: v for c, v in r.items() if not c.startswith("_")}
        kind = r["_row_kind"]
        if kind in (INSERT, UPDATE_AFTER):
            state[k] = row
        elif kind == DELETE:
            state.pop(k, None)
        elif kind == UPDATE_BEFORE and state.get(k) != row:
            raise ValueError(f"-U for key {k} does not match the current row: {row} vs {state.get(k)}")
    return state


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", default="grpc://127.0.0.1:8815")
    ap.add_argument("--username", default=os.environ.get("SETATS_USER"),
                    help="a user of the gateway's --users-file (env SETATS_USER)")
    ap.add_argument("--password", default=os.environ.get("SETATS_PASSWORD"),
                    help="password of --username (env SETATS_PASSWORD)")
    ap.add_argument("--tls-ca-cert", default=os.environ.get("SETATS_TLS_CA_CERT"),
                    help="with grpc+tls://: PEM file of the CA of the gateway's --tls-cert (env SETATS_TLS_CA_CERT)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info")
    p = sub.add_parser("tables")
    p.add_argument("database", nargs="?", default="default")
    p = sub.add_parser("buckets")
    p.add_argument("database")
    p.add_argument("table")
    p = sub.add_parser("changelog")
    p.add_argument("database")
    p.add_argument("table")
    p.add_argument("partition", nargs="?", default="")
    p.add_argument("bucket", nargs="?", type=int, default=0)
    a = ap.parse_args(argv)
    with SetatsClient(a.url, username=a.username, password=a.password, tls_ca_cert=a.tls_ca_cert) as c:
        if a.cmd == "info":
            print(json.dumps(c.gateway_info(), indent=2))
        elif a.cmd == "tables":
            for t in c.list_tables(a.database):
                print(t)
        elif a.cmd == "buckets":
            for b in c.list_buckets(a.database, a.table):
                print(json.dumps(b))
        elif a.cmd == "changelog":
            t = c.read_changelog(a.database, a.table, a.partition, a.bucket)
            for r in t.to_pylist():
                kind = ROW_KINDS[r.pop("_row_kind")]
                off = r.pop("_offset")
                r.pop("_commit_timestamp")
                print(off, kind, json.dumps(r, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
