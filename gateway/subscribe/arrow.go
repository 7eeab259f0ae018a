package subscribe

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Schema metadata keys of a channel stream.
const (
	MetaChannel   = "setats.channel"
	MetaClusterID = "setats.cluster_id"
)

// Schema returns the Arrow schema of a channel stream (proto ChannelTicket): id int64,
// operation utf8, object_name utf8, source_position utf8, source_timestamp timestamp[ms, UTC],
// transaction_id utf8, field_names list<utf8>, field_types list<utf8>, before list<binary>,
// after list<binary>; metadata setats.channel and setats.cluster_id.
func Schema(channel, clusterID string) *arrow.Schema {
	md := arrow.NewMetadata([]string{MetaChannel, MetaClusterID}, []string{channel, clusterID})
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "operation", Type: arrow.BinaryTypes.String},
		{Name: "object_name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "source_position", Type: arrow.BinaryTypes.String},
		{Name: "source_timestamp", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
		{Name: "transaction_id", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "field_names", Type: arrow.ListOf(arrow.BinaryTypes.String)},
		{Name: "field_types", Type: arrow.ListOf(arrow.BinaryTypes.String)},
		{Name: "before", Type: arrow.ListOf(arrow.BinaryTypes.Binary), Nullable: true},
		{Name: "after", Type: arrow.ListOf(arrow.BinaryTypes.Binary), Nullable: true},
	}, &md)
}

// Builder builds record batches of Schema from Records. Not safe for concurrent use.
type Builder struct {
	b     *array.RecordBuilder
	bytes int
}

// NewBuilder returns a Builder for schema (from Schema); Release it.
func NewBuilder(mem memory.Allocator, schema *arrow.Schema) *Builder {
	return &Builder{b: array.NewRecordBuilder(mem, schema)}
}

// Len returns the records appended since the last NewRecordBatch; Bytes about their size.
func (b *Builder) Len() int   { return b.b.Field(0).Len() }
func (b *Builder) Bytes() int { return b.bytes }

// RecordBytes estimates the Arrow bytes of r.
func RecordBytes(r *Record) int {
	n := 64 + len(r.Object) + len(r.Position) + len(r.TxID)
	for _, f := range r.Fields {
		n += len(f.Name) + len(f.Type) + 16
	}
	for _, img := range [][][]byte{r.Before, r.After} {
		for _, v := range img {
			n += len(v) + 8
		}
	}
	return n
}

// Append adds r.
func (b *Builder) Append(r *Record) {
	f := b.b.Fields()
	f[0].(*array.Int64Builder).Append(r.ID)
	f[1].(*array.StringBuilder).Append(r.Op.String())
	if r.Object == "" {
		f[2].AppendNull()
	} else {
		f[2].(*array.StringBuilder).Append(r.Object)
	}
	f[3].(*array.StringBuilder).Append(r.Position)
	f[4].(*array.TimestampBuilder).Append(arrow.Timestamp(r.TimestampMs))
	if r.TxID == "" {
		f[5].AppendNull()
	} else {
		f[5].(*array.StringBuilder).Append(r.TxID)
	}
	names, types := f[6].(*array.ListBuilder), f[7].(*array.ListBuilder)
	names.Append(true)
	types.Append(true)
	nb, tb := names.ValueBuilder().(*array.StringBuilder), types.ValueBuilder().(*array.StringBuilder)
	for _, fl := range r.Fields {
		nb.Append(fl.Name)
		tb.Append(fl.Type)
	}
	for i, img := range [][][]byte{r.Before, r.After} {
		lb := f[8+i].(*array.ListBuilder)
		if img == nil {
			lb.AppendNull()
			continue
		}
		lb.Append(true)
		vb := lb.ValueBuilder().(*array.BinaryBuilder)
		for _, v := range img {
			if v == nil {
				vb.AppendNull()
			} else {
				vb.Append(v)
			}
		}
	}
	b.bytes += RecordBytes(r)
}

// NewRecordBatch returns the appended records as a batch (Release it) and resets the builder.
func (b *Builder) NewRecordBatch() arrow.RecordBatch {
	b.bytes = 0
	return b.b.NewRecordBatch()
}

// Release releases the builder.
func (b *Builder) Release() { b.b.Release() }
