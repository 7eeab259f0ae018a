package hive

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/beltran/gohive/hive_metastore"

	"github.com/setats/setats/catalog"
	"github.com/setats/setats/proto/setatspb"
)

// TableType is the Hive table type (Table.tableType and the table_type parameter) of every
// table Setats keeps in a Hive Metastore (SPEC section 12). Tables of any other type are refused.
const TableType = "SETATS"

// Table parameters holding the Setats table (SPEC section 12). Column names, types and
// nullability are kept as parameters too, because the metastore lower-cases column names and
// has no type for some Flink types (TIME, TIMESTAMP_LTZ); sd.cols carries the Hive view of them.
const (
	ParamExternal      = "EXTERNAL"   // "TRUE"
	ParamTableType     = "table_type" // TableType
	ParamComment       = "comment"
	ParamTableID       = "setats.table-id"
	ParamCreatedAtMs   = "setats.created-at-ms"
	ParamPrimaryKey    = "setats.primary-key"    // comma list
	ParamPartitionKeys = "setats.partition-keys" // comma list, may be empty
	ParamBucket        = "setats.bucket"         // bucket count
	ParamBucketKey     = "setats.bucket-key"     // comma list
	ParamMergeEngine   = "setats.merge-engine"
	ParamLocation      = "setats.location" // file:/// URI
	ParamColumnCount   = "setats.column-count"
	// ParamOptionPrefix + key holds table option key (changelog.retention.ms, ...).
	ParamOptionPrefix = "setats.option."
	// ParamColumnPrefix + "<i>.name" / ".type" (canonical Flink type) / ".not-null" describe column i.
	ParamColumnPrefix = "setats.column."
	// ParamDropping holds the table id while a drop is in progress (the compare-and-swap marker).
	ParamDropping = "setats.dropping"
)

// HiveType returns the Hive column type shown in sd.cols for a Flink type: the nearest Hive
// type (TIME and CHAR/VARCHAR beyond Hive's limits are "string", TIMESTAMP_LTZ is "timestamp").
func HiveType(t catalog.Type) string {
	switch t.Kind {
	case catalog.Boolean:
		return "boolean"
	case catalog.TinyInt:
		return "tinyint"
	case catalog.SmallInt:
		return "smallint"
	case catalog.Int:
		return "int"
	case catalog.BigInt:
		return "bigint"
	case catalog.Float:
		return "float"
	case catalog.Double:
		return "double"
	case catalog.Decimal:
		return fmt.Sprintf("decimal(%d,%d)", t.Precision, t.Scale)
	case catalog.Char:
		if t.Length <= 255 {
			return fmt.Sprintf("char(%d)", t.Length)
		}
		return "string"
	case catalog.VarChar:
		if t.Length <= 65535 {
			return fmt.Sprintf("varchar(%d)", t.Length)
		}
		return "string"
	case catalog.Binary, catalog.VarBinary:
		return "binary"
	case catalog.Date:
		return "date"
	case catalog.Timestamp, catalog.TimestampLTZ:
		return "timestamp"
	}
	return "string"
}

// toHive renders a resolved table as a Hive external table of type TableType.
func toHive(t *catalog.Table, owner string) *hive_metastore.Table {
	spec := t.Info.GetSpec()
	p := map[string]string{
		ParamExternal:      "TRUE",
		ParamTableType:     TableType,
		ParamTableID:       t.TableID(),
		ParamCreatedAtMs:   strconv.FormatInt(t.Info.GetCreatedAtMs(), 10),
		ParamPrimaryKey:    strings.Join(spec.GetPrimaryKey(), ","),
		ParamPartitionKeys: strings.Join(spec.GetPartitionKeys(), ","),
		ParamBucket:        strconv.Itoa(int(t.BucketCount)),
		ParamBucketKey:     strings.Join(spec.GetBucketKey(), ","),
		ParamMergeEngine:   t.MergeEngine,
		ParamLocation:      spec.GetLocation(),
		ParamColumnCount:   strconv.Itoa(len(t.Columns)),
	}
	if spec.GetComment() != "" {
		p[ParamComment] = spec.GetComment()
	}
	for k, v := range t.Options {
		p[ParamOptionPrefix+k] = v
	}
	cols := make([]*hive_metastore.FieldSchema, 0, len(t.Columns))
	for i, c := range t.Columns {
		pre := ParamColumnPrefix + strconv.Itoa(i) + "."
		p[pre+"name"] = c.Name
		p[pre+"type"] = c.Type.String()
		p[pre+"not-null"] = strconv.FormatBool(c.NotNull)
		cols = append(cols, &hive_metastore.FieldSchema{Name: strings.ToLower(c.Name), Type: HiveType(c.Type), Comment: c.Comment})
	}
	return &hive_metastore.Table{
		TableName:  t.Name,
		DbName:     t.Database,
		Owner:      owner,
		OwnerType:  hive_metastore.PrincipalType_USER,
		CreateTime: int32(t.Info.GetCreatedAtMs() / 1000),
		TableType:  TableType,
		Parameters: p,
		Sd: &hive_metastore.StorageDescriptor{
			Cols:         cols,
			Location:     spec.GetLocation(),
			InputFormat:  "org.apache.hadoop.mapred.SequenceFileInputFormat",
			OutputFormat: "org.apache.hadoop.hive.ql.io.HiveSequenceFileOutputFormat",
			NumBuckets:   -1,
			SerdeInfo: &hive_metastore.SerDeInfo{
				Name:             t.Name,
				SerializationLib: "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
				Parameters:       map[string]string{},
			},
			BucketCols: []string{},
			SortCols:   []*hive_metastore.Order{},
			Parameters: map[string]string{},
		},
		PartitionKeys: []*hive_metastore.FieldSchema{},
	}
}

// fromHive reads a Setats table back from a Hive table. A table of another type is
// KindFailedPrecondition naming it and its type; a Setats table whose parameters do not resolve
// is KindInternal naming the table and the parameter.
func fromHive(ht *hive_metastore.Table, database, name string, opts catalog.Options) (*catalog.Table, error) {
	qn := database + "." + name
	p := ht.GetParameters()
	typ := ht.GetTableType()
	if !strings.EqualFold(typ, TableType) && !strings.EqualFold(p[ParamTableType], TableType) {
		if typ == "" {
			typ = "(none)"
		}
		return nil, catalog.Errorf(catalog.ErrFailedPrecondition,
			"table %s in the Hive Metastore is not a Setats table: its table type is %s, want %s", qn, typ, TableType)
	}
	bad := func(key string, format string, args ...any) error {
		return catalog.Errorf(catalog.ErrInternal, "Hive table %s: parameter %s: %s", qn, key, fmt.Sprintf(format, args...))
	}
	list := func(key string) []string {
		if v := strings.TrimSpace(p[key]); v != "" {
			return strings.Split(v, ",")
		}
		return nil
	}
	n, err := strconv.Atoi(p[ParamColumnCount])
	if err != nil || n <= 0 || n > 100000 {
		return nil, bad(ParamColumnCount, "%q is not a column count", p[ParamColumnCount])
	}
	spec := &setatspb.TableSpec{
		Database:      database,
		Table:         name,
		PrimaryKey:    list(ParamPrimaryKey),
		PartitionKeys: list(ParamPartitionKeys),
		BucketKey:     list(ParamBucketKey),
		MergeEngine:   p[ParamMergeEngine],
		Location:      p[ParamLocation],
		Comment:       p[ParamComment],
		Options:       map[string]string{},
	}
	if spec.Location == "" && ht.GetSd() != nil {
		spec.Location = ht.GetSd().GetLocation()
	}
	b, err := strconv.Atoi(p[ParamBucket])
	if err != nil || b <= 0 {
		return nil, bad(ParamBucket, "%q is not a bucket count", p[ParamBucket])
	}
	spec.BucketCount = int32(b)
	var hiveCols []*hive_metastore.FieldSchema
	if ht.GetSd() != nil {
		hiveCols = ht.GetSd().GetCols()
	}
	for i := 0; i < n; i++ {
		pre := ParamColumnPrefix + strconv.Itoa(i) + "."
		c := &setatspb.Column{Name: p[pre+"name"], Type: p[pre+"type"], NotNull: p[pre+"not-null"] == "true"}
		if c.Name == "" || c.Type == "" {
			return nil, bad(pre+"name", "column %d has no name or type", i)
		}
		if i < len(hiveCols) {
			c.Comment = hiveCols[i].GetComment()
		}
		spec.Columns = append(spec.Columns, c)
	}
	keys := make([]string, 0)
	for k := range p {
		if strings.HasPrefix(k, ParamOptionPrefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		spec.Options[strings.TrimPrefix(k, ParamOptionPrefix)] = p[k]
	}
	t, err := catalog.ResolveSpec(spec, opts)
	if err != nil {
		return nil, catalog.Errorf(catalog.ErrInternal, "Hive table %s: %s", qn, err.Error())
	}
	if p[ParamTableID] == "" {
		return nil, bad(ParamTableID, "missing")
	}
	t.Info.TableId = p[ParamTableID]
	t.Info.CreatedAtMs, _ = strconv.ParseInt(p[ParamCreatedAtMs], 10, 64)
	return t, nil
}
