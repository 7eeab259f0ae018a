package catalog

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// Arrow metadata keys of a table schema (proto/README.md).
const (
	// MetaFlinkType is the field metadata key holding the column's canonical Flink type string.
	MetaFlinkType = "setats.flink_type"
	// MetaComment is the field metadata key holding the column comment (only when not empty).
	MetaComment = "setats.comment"
	// Schema metadata keys: database and table name, key column names as comma lists, bucket
	// count in decimal, canonical merge engine.
	MetaDatabase      = "setats.database"
	MetaTable         = "setats.table"
	MetaPrimaryKey    = "setats.primary_key"
	MetaPartitionKeys = "setats.partition_keys"
	MetaBucketKey     = "setats.bucket_key"
	MetaBucketCount   = "setats.bucket_count"
	MetaMergeEngine   = "setats.merge_engine"
)

// ArrowSchema builds the Arrow schema of t's columns: one field per column in table order, of
// Type.ArrowType, nullable unless NotNull (primary-key columns are never nullable), with field
// metadata MetaFlinkType (and MetaComment when set); schema metadata MetaDatabase, MetaTable,
// MetaPrimaryKey, MetaPartitionKeys, MetaBucketKey, MetaBucketCount and MetaMergeEngine.
func ArrowSchema(t *Table) *arrow.Schema {
	fields := make([]arrow.Field, len(t.Columns))
	for i, c := range t.Columns {
		keys, vals := []string{MetaFlinkType}, []string{c.Type.String()}
		if c.Comment != "" {
			keys, vals = append(keys, MetaComment), append(vals, c.Comment)
		}
		fields[i] = arrow.Field{
			Name:     c.Name,
			Type:     c.Type.ArrowType(),
			Nullable: !c.NotNull,
			Metadata: arrow.NewMetadata(keys, vals),
		}
	}
	md := arrow.NewMetadata(
		[]string{MetaDatabase, MetaTable, MetaPrimaryKey, MetaPartitionKeys, MetaBucketKey, MetaBucketCount, MetaMergeEngine},
		[]string{t.Database, t.Name, columnList(t, t.PrimaryKey), columnList(t, t.PartitionKeys),
			columnList(t, t.BucketKey), strconv.Itoa(int(t.BucketCount)), t.MergeEngine},
	)
	return arrow.NewSchema(fields, &md)
}

func columnList(t *Table, idx []int) string {
	return strings.Join(columnNames(t, idx), ",")
}

func columnNames(t *Table, idx []int) []string {
	names := make([]string, len(idx))
	for i, c := range idx {
		names[i] = t.Columns[c].Name
	}
	return names
}

// EncodeArrowSchema serializes a schema as TableInfo.arrow_schema: an Arrow IPC stream holding
// the schema message and no record batch (what Flight implementations use for schemas; pyarrow
// reads it with pa.ipc.read_schema or pa.ipc.open_stream).
func EncodeArrowSchema(s *arrow.Schema) []byte {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(s))
	_ = w.Close() // writes to a bytes.Buffer cannot fail
	return buf.Bytes()
}

// DecodeArrowSchema reads a schema written by EncodeArrowSchema. A malformed payload is a
// ErrInvalid error.
func DecodeArrowSchema(b []byte) (*arrow.Schema, error) {
	r, err := ipc.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, errorf(ErrInvalid, "invalid arrow schema: %w", err)
	}
	defer r.Release()
	return r.Schema(), nil
}
