package catalog

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/setats/setats/proto/setatspb"
)

// Column is one column of a table (SPEC section 3). Primary-key columns always have NotNull set.
type Column struct {
	Name    string
	Type    Type
	NotNull bool
	Comment string
}

// Table is a resolved primary-key table (SPEC section 3): every default is filled in and every
// name is checked. Tables returned by a Catalog or by ResolveSpec are shared and must not be
// modified.
type Table struct {
	// Info is the table as stored and sent to clients (get-table, create-table): its Spec is the
	// resolved spec (database, canonical column types, not_null set on primary-key columns,
	// bucket_count, bucket_key, canonical merge_engine, validated options, location as a
	// file:/// URI), plus table_id (a UUID), created_at_ms and arrow_schema (an Arrow IPC stream
	// holding Schema and no batch). ResolveSpec leaves table_id and created_at_ms empty.
	Info *setatspb.TableInfo
	// Database and Name identify the table; see QualifiedName.
	Database, Name string
	// Columns in table order.
	Columns []Column
	// PrimaryKey, PartitionKeys and BucketKey are column indexes into Columns, in key order.
	// PartitionKeys is a subset of PrimaryKey; BucketKey is a non-empty subset of PrimaryKey.
	PrimaryKey, PartitionKeys, BucketKey []int
	// BucketCount is the number of buckets per partition, 1..MaxBucketCount.
	BucketCount int32
	// MergeEngine is merge.Deduplicate or merge.PartialUpdate.
	MergeEngine string
	// Options are the validated table options (keys in AllowedOptions), booleans as "true" or
	// "false". Pass them to merge.New with MergeEngine.
	Options map[string]string
	// RetentionMs is the option changelog.retention.ms in ms; 0 means the gateway's default.
	RetentionMs int64
	// ChangelogEnabled is the option changelog.enabled (default true): false means writes keep
	// the state only and no changelog row is written (SPEC section 8).
	ChangelogEnabled bool
	// CleanOnConsume is the option changelog.clean-on-consume (default false, SPEC section 8).
	CleanOnConsume bool
	// SlotTTLMs is the option slot.ttl in ms (DefaultSlotTTLMs when unset, SPEC section 8).
	SlotTTLMs int64
	// Location is the absolute local directory of the table's data; the store keeps its files
	// under Location/data.
	Location string
	// realLocation is Location with its symbolic links resolved (CheckLocation), which overlap
	// checks compare; "" until the catalog resolved it.
	realLocation string
	// Schema is the Arrow schema of the table's columns in table order (see ArrowSchema).
	Schema *arrow.Schema
}

// ColumnIndex returns the index of the column named name (exact match), or -1.
func (t *Table) ColumnIndex(name string) int {
	for i := range t.Columns {
		if t.Columns[i].Name == name {
			return i
		}
	}
	return -1
}

// QualifiedName returns "database.table".
func (t *Table) QualifiedName() string {
	return t.Database + "." + t.Name
}

// TableID returns Info.table_id, "" when unset.
func (t *Table) TableID() string {
	return t.Info.GetTableId()
}
