# pyarrow quickstart of gateway/README.md. Usage: python3 quickstart.py grpc://127.0.0.1:8815
import decimal
import json
import sys

import pyarrow as pa
import pyarrow.flight as fl

client = fl.connect(sys.argv[1] if len(sys.argv) > 1 else "grpc://127.0.0.1:8815")


def action(kind, body):
    """Runs a DoAction with a JSON body; the gateway answers JSON too."""
    results = client.do_action(fl.Action(kind, json.dumps(body).encode()))
    return [json.loads(r.body.to_pybytes()) for r in results]


print(action("gateway-info", {})[0]["warehouse"])

# Create a table (and its database).
info = action("create-table", {
    "spec": {
        "database": "shop",
        "table": "orders",
        "columns": [
            {"name": "id", "type": "BIGINT"},
            {"name": "customer", "type": "STRING"},
            {"name": "amount", "type": "DECIMAL(10, 2)"},
        ],
        "primary_key": ["id"],
        "bucket_count": 2,
    },
    "create_database": True,
    "ignore_if_exists": True,
})[0]
print("table id", info["tableId"], "buckets", info["spec"]["bucketCount"])

# Write upserts: a WriteCommand (JSON) as the descriptor, then a pyarrow table.
# Without a _row_kind column every row is an upsert.
write = fl.FlightDescriptor.for_command(json.dumps({"database": "shop", "table": "orders"}).encode())
rows = pa.table({
    "id": pa.array([1, 2, 3], pa.int64()),
    "customer": ["ann", "bob", "cy"],
    "amount": pa.array([decimal.Decimal("9.99"), decimal.Decimal("20.00"), decimal.Decimal("5.50")],
                       pa.decimal128(10, 2)),
})
writer, acks = client.do_put(write, rows.schema)
writer.write_table(rows)
writer.done_writing()
print("ack", json.loads(acks.read().to_pybytes()))  # one WriteAck per record batch, once durable
writer.close()

# An update and a delete: _row_kind int8, 0 +I, 1 -U, 2 +U, 3 -D.
changes = pa.table({
    "_row_kind": pa.array([2, 3], pa.int8()),
    "id": pa.array([1, 3], pa.int64()),
    "customer": ["ann", "cy"],
    "amount": pa.array([decimal.Decimal("12.00"), None], pa.decimal128(10, 2)),
})
writer, acks = client.do_put(write, changes.schema)
writer.write_table(changes)
writer.done_writing()
print("ack", json.loads(acks.read().to_pybytes()))
writer.close()

# Read the changelog: GetFlightInfo gives one endpoint per bucket, DoGet reads one.
flight_info = client.get_flight_info(fl.FlightDescriptor.for_path("shop", "orders"))
for endpoint in flight_info.endpoints:
    changelog = client.do_get(endpoint.ticket).read_all()
    print("bucket", changelog.schema.metadata[b"setats.bucket"].decode())
    for row in changelog.to_pylist():
        print("  ", row["_row_kind"], row["_offset"], row["id"], row["customer"], row["amount"])

# A ChangelogTicket can be written by hand too (JSON), e.g. bucket 0 from offset 1:
ticket = fl.Ticket(json.dumps({"database": "shop", "table": "orders", "bucket": 0, "offset": 1}).encode())
print(client.do_get(ticket).read_all().select(["_row_kind", "_offset", "id"]).to_pylist())
