// Package catalog maps Flink SQL types to Arrow types, validates and resolves table specs, and
// keeps databases and table metadata in the "hadoop" catalog: plain files under the warehouse
// directory (SPEC sections 2-3, proto/README.md).
//
// # Types
//
// ParseType reads Flink SQL type strings; Type.String gives the canonical form stored in table
// metadata and in the Arrow field metadata "setats.flink_type"; Type.ArrowType gives the Arrow
// type of the proto/README.md type table.
//
// # Hadoop catalog layout
//
// Under the warehouse directory W (NormalizeWarehouse: "file:///abs/path" or a plain path):
//
//	W/<db>.db/                     one directory per database
//	W/<db>.db/database.json        {"name", "created_at_ms"}; the database exists iff this file does
//	W/<db>.db/<table>/table.json   the table's TableInfo as protojson; the table exists iff this file does
//	W/<db>.db/<table>/dropped.json a dropped table whose data is not removed yet (same content)
//	<location>/data/               the table's data, written by gateway/store
//
// A table's location defaults to W/<db>.db/<table>, the directory of its table.json; table.json
// then leaves "location" empty so that a moved or copied warehouse still works. A table created
// with its own location (which must lie inside W: location.go) stores it relative to W, for the
// same reason. arrow_schema is not stored: it is derived
// from the spec on load.
//
// Every metadata file is written atomically: a temporary file ".<name>.*.tmp" in the same
// directory is written and fsynced, renamed over the target, and the directory is fsynced. A crash
// leaves the old file or the new one, plus maybe a temporary file that Open ignores and removes.
//
// Dropping a table renames table.json to dropped.json (atomic): from then on the table is gone.
// The caller closes the table's storage and calls Catalog.RemoveData, which removes
// <location>/data, then dropped.json, then the directories left empty. If the process dies in
// between, the next Open finishes the drop. Dropping a database removes database.json (after
// dropping its tables, with cascade) and the directory once it is empty.
//
// Open reads all of this back, so a restarted gateway sees every database and table it had
// acknowledged. A Catalog serializes its changes with a mutex; two processes must not open the
// same warehouse at once.
//
// # Errors
//
// Every error is an *Error (error.go) of one kind, ErrInvalid, ErrNotFound, ErrAlreadyExists,
// ErrFailedPrecondition or ErrInternal (test with errors.Is), whose message names the database,
// table, column, option or path at fault. The gateway maps the kinds to gRPC codes
// (gateway/errors.go).
package catalog
