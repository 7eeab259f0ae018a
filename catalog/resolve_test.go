package catalog

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/setats/setats/proto/setatspb"
	"google.golang.org/protobuf/proto"
)

// ordersSpec is a partitioned table: pk (dt, id, seq), partitioned by dt.
func ordersSpec() *setatspb.TableSpec {
	return &setatspb.TableSpec{
		Database: "shop",
		Table:    "orders",
		Columns: []*setatspb.Column{
			{Name: "dt", Type: "string"},
			{Name: "id", Type: "BIGINT"},
			{Name: "seq", Type: "INT"},
			{Name: "amount", Type: "DECIMAL(10,2)", Comment: "in EUR"},
			{Name: "note", Type: "VARCHAR(20) NOT NULL"},
			{Name: "ts", Type: "TIMESTAMP(3)"},
		},
		PrimaryKey:    []string{"dt", "id", "seq"},
		PartitionKeys: []string{"dt"},
		MergeEngine:   "partial-update",
		Options:       map[string]string{"ignore-delete": "TRUE", "changelog.retention.ms": "60000"},
	}
}

func TestResolveSpecDefaults(t *testing.T) {
	wh := t.TempDir()
	tbl, err := ResolveSpec(ordersSpec(), Options{Warehouse: wh, DefaultBucketCount: 8})
	if err != nil {
		t.Fatal(err)
	}
	if tbl.QualifiedName() != "shop.orders" || tbl.ColumnIndex("amount") != 3 || tbl.ColumnIndex("nope") != -1 {
		t.Errorf("names: %s %d %d", tbl.QualifiedName(), tbl.ColumnIndex("amount"), tbl.ColumnIndex("nope"))
	}
	if !slices.Equal(tbl.PrimaryKey, []int{0, 1, 2}) || !slices.Equal(tbl.PartitionKeys, []int{0}) ||
		!slices.Equal(tbl.BucketKey, []int{1, 2}) {
		t.Errorf("keys: pk %v part %v bucket %v", tbl.PrimaryKey, tbl.PartitionKeys, tbl.BucketKey)
	}
	if tbl.BucketCount != 8 || tbl.MergeEngine != "PARTIAL_UPDATE" || tbl.RetentionMs != 60000 {
		t.Errorf("bucket count %d engine %s retention %d", tbl.BucketCount, tbl.MergeEngine, tbl.RetentionMs)
	}
	if want := filepath.Join(wh, "shop.db", "orders"); tbl.Location != want {
		t.Errorf("location %s, want %s", tbl.Location, want)
	}
	for i, wantNotNull := range []bool{true, true, true, false, true, false} {
		if tbl.Columns[i].NotNull != wantNotNull {
			t.Errorf("column %s NotNull %v, want %v", tbl.Columns[i].Name, tbl.Columns[i].NotNull, wantNotNull)
		}
	}

	// The resolved spec has every default filled in and canonical spellings.
	want := &setatspb.TableSpec{
		Database: "shop",
		Table:    "orders",
		Columns: []*setatspb.Column{
			{Name: "dt", Type: "STRING", NotNull: true},
			{Name: "id", Type: "BIGINT", NotNull: true},
			{Name: "seq", Type: "INT", NotNull: true},
			{Name: "amount", Type: "DECIMAL(10, 2)", Comment: "in EUR"},
			{Name: "note", Type: "VARCHAR(20)", NotNull: true},
			{Name: "ts", Type: "TIMESTAMP(3)"},
		},
		PrimaryKey:    []string{"dt", "id", "seq"},
		PartitionKeys: []string{"dt"},
		BucketCount:   8,
		BucketKey:     []string{"id", "seq"},
		MergeEngine:   "PARTIAL_UPDATE",
		Options:       map[string]string{"ignore-delete": "true", "changelog.retention.ms": "60000"},
		Location:      "file://" + filepath.Join(wh, "shop.db", "orders"),
	}
	if !proto.Equal(tbl.Info.GetSpec(), want) {
		t.Errorf("resolved spec\n got  %v\n want %v", tbl.Info.GetSpec(), want)
	}
	if tbl.Info.GetTableId() != "" || tbl.Info.GetCreatedAtMs() != 0 {
		t.Errorf("ResolveSpec must not assign an id")
	}

	// Resolving the resolved spec again changes nothing.
	again, err := ResolveSpec(tbl.Info.GetSpec(), Options{Warehouse: wh, DefaultBucketCount: 3})
	if err != nil || !proto.Equal(again.Info, tbl.Info) {
		t.Errorf("resolve is not idempotent: %v\n%v\n%v", err, again.Info, tbl.Info)
	}

	// Arrow schema: types, nullability, metadata; arrow_schema decodes to the same schema.
	s := tbl.Schema
	if s.NumFields() != 6 {
		t.Fatalf("schema %v", s)
	}
	f := s.Field(3)
	if !arrow.TypeEqual(f.Type, &arrow.Decimal128Type{Precision: 10, Scale: 2}) || !f.Nullable {
		t.Errorf("amount field %v", f)
	}
	if v, _ := f.Metadata.GetValue(MetaFlinkType); v != "DECIMAL(10, 2)" {
		t.Errorf("amount flink type %q", v)
	}
	if v, _ := f.Metadata.GetValue(MetaComment); v != "in EUR" {
		t.Errorf("amount comment %q", v)
	}
	if s.Field(0).Nullable || s.Field(4).Nullable || !s.Field(5).Nullable {
		t.Errorf("nullability: %v", s)
	}
	md := s.Metadata()
	for k, v := range map[string]string{
		MetaDatabase: "shop", MetaTable: "orders", MetaPrimaryKey: "dt,id,seq", MetaPartitionKeys: "dt",
		MetaBucketKey: "id,seq", MetaBucketCount: "8", MetaMergeEngine: "PARTIAL_UPDATE",
	} {
		if got, _ := md.GetValue(k); got != v {
			t.Errorf("schema metadata %s = %q, want %q", k, got, v)
		}
	}
	decoded, err := DecodeArrowSchema(tbl.Info.GetArrowSchema())
	if err != nil || !decoded.Equal(s) || !decoded.Metadata().Equal(s.Metadata()) {
		t.Errorf("arrow_schema round trip: %v\n%v\n%v", err, decoded, s)
	}
	if _, err := DecodeArrowSchema([]byte("nope")); !errors.Is(err, ErrInvalid) {
		t.Errorf("DecodeArrowSchema(garbage): %v", err)
	}
}

func TestResolveSpecChoices(t *testing.T) {
	wh := t.TempDir()
	opts := Options{Warehouse: wh}
	base := func(mod func(*setatspb.TableSpec)) *Table {
		t.Helper()
		s := ordersSpec()
		mod(s)
		tbl, err := ResolveSpec(s, opts)
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	// Default bucket count without a gateway default.
	if tbl := base(func(s *setatspb.TableSpec) { s.BucketCount = -1 }); tbl.BucketCount != DefaultBucketCount {
		t.Errorf("bucket count %d", tbl.BucketCount)
	}
	if tbl := base(func(s *setatspb.TableSpec) { s.BucketCount = 1024 }); tbl.BucketCount != 1024 {
		t.Errorf("bucket count %d", tbl.BucketCount)
	}
	// An explicit bucket key in its own order.
	if tbl := base(func(s *setatspb.TableSpec) { s.BucketKey = []string{"seq"} }); !slices.Equal(tbl.BucketKey, []int{2}) {
		t.Errorf("bucket key %v", tbl.BucketKey)
	}
	// Primary key == partition keys: the bucket key is the primary key.
	if tbl := base(func(s *setatspb.TableSpec) {
		s.PrimaryKey, s.PartitionKeys = []string{"dt"}, []string{"dt"}
	}); !slices.Equal(tbl.BucketKey, []int{0}) {
		t.Errorf("bucket key %v", tbl.BucketKey)
	}
	// Empty database means default; empty engine means DEDUPLICATE.
	if tbl := base(func(s *setatspb.TableSpec) { s.Database, s.MergeEngine, s.Options = "", "", nil }); tbl.Database != "default" ||
		tbl.MergeEngine != "DEDUPLICATE" || len(tbl.Options) != 0 || tbl.RetentionMs != 0 {
		t.Errorf("defaults: %s %s %v %d", tbl.Database, tbl.MergeEngine, tbl.Options, tbl.RetentionMs)
	}
	// Locations: absolute path, file URI, relative to the warehouse.
	for _, tc := range []struct{ in, want string }{
		{"/data/t1", "/data/t1"},
		{"file:///data/t2/", "/data/t2"},
		{"elsewhere/t3", filepath.Join(wh, "elsewhere/t3")},
	} {
		tbl := base(func(s *setatspb.TableSpec) { s.Location = tc.in })
		if tbl.Location != tc.want || tbl.Info.GetSpec().GetLocation() != "file://"+tc.want {
			t.Errorf("location %q -> %q (%q), want %q", tc.in, tbl.Location, tbl.Info.GetSpec().GetLocation(), tc.want)
		}
	}
}

func TestResolveSpecErrors(t *testing.T) {
	opts := Options{Warehouse: t.TempDir()}
	for _, tc := range []struct {
		name     string
		mod      func(*setatspb.TableSpec)
		mentions []string
	}{
		{"bad database", func(s *setatspb.TableSpec) { s.Database = "my-db" }, []string{"database", "my-db"}},
		{"bad table", func(s *setatspb.TableSpec) { s.Table = "1orders" }, []string{"table", "1orders"}},
		{"empty table", func(s *setatspb.TableSpec) { s.Table = "" }, []string{"table name"}},
		{"long table", func(s *setatspb.TableSpec) { s.Table = strings.Repeat("t", 129) }, []string{"table name", "128"}},
		{"no columns", func(s *setatspb.TableSpec) { s.Columns = nil }, []string{"shop.orders", "no columns"}},
		{"bad column", func(s *setatspb.TableSpec) { s.Columns[3].Name = "amount$" }, []string{"shop.orders", "amount$"}},
		{"reserved column", func(s *setatspb.TableSpec) { s.Columns[3].Name = "_row_kind" }, []string{"shop.orders", "_row_kind", "reserved"}},
		{"duplicate column", func(s *setatspb.TableSpec) { s.Columns[3].Name = "id" }, []string{"shop.orders", "duplicate column id"}},
		{"unknown type", func(s *setatspb.TableSpec) { s.Columns[3].Type = "MONEY" }, []string{"shop.orders", "column amount", "MONEY"}},
		{"bad decimal", func(s *setatspb.TableSpec) { s.Columns[3].Type = "DECIMAL(40, 2)" }, []string{"column amount", "precision"}},
		{"no primary key", func(s *setatspb.TableSpec) { s.PrimaryKey, s.PartitionKeys = nil, nil }, []string{"shop.orders", "primary key is required"}},
		{"missing pk column", func(s *setatspb.TableSpec) { s.PrimaryKey = []string{"dt", "uid"} }, []string{"primary key column uid"}},
		{"pk twice", func(s *setatspb.TableSpec) { s.PrimaryKey = []string{"dt", "id", "id"} }, []string{"primary key names column id twice"}},
		{"partition not in pk", func(s *setatspb.TableSpec) { s.PartitionKeys = []string{"note"} }, []string{"partition key note", "primary key"}},
		{"missing partition column", func(s *setatspb.TableSpec) { s.PartitionKeys = []string{"day"} }, []string{"partition key column day"}},
		{"bucket key not in pk", func(s *setatspb.TableSpec) { s.BucketKey = []string{"note"} }, []string{"bucket-key column note", "id, seq"}},
		{"bucket key is partition key", func(s *setatspb.TableSpec) { s.BucketKey = []string{"dt"} }, []string{"bucket-key column dt"}},
		{"missing bucket key column", func(s *setatspb.TableSpec) { s.BucketKey = []string{"x"} }, []string{"bucket-key column x"}},
		{"too many buckets", func(s *setatspb.TableSpec) { s.BucketCount = 1025 }, []string{"shop.orders", "bucket count 1025", "1024"}},
		{"bad engine", func(s *setatspb.TableSpec) { s.MergeEngine = "aggregation" }, []string{"shop.orders", "merge-engine", "aggregation"}},
		{"unknown option", func(s *setatspb.TableSpec) { s.Options["bucket"] = "3" }, []string{"shop.orders", `option "bucket"`, "changelog.retention.ms"}},
		{"bad bool option", func(s *setatspb.TableSpec) { s.Options["ignore-delete"] = "yes" }, []string{"shop.orders", "ignore-delete", "yes"}},
		{"bad remove option", func(s *setatspb.TableSpec) {
			s.Options["partial-update.remove-record-on-delete"] = "1"
		}, []string{"partial-update.remove-record-on-delete"}},
		{"zero retention", func(s *setatspb.TableSpec) { s.Options["changelog.retention.ms"] = "0" }, []string{"changelog.retention.ms", "positive"}},
		{"bad retention", func(s *setatspb.TableSpec) { s.Options["changelog.retention.ms"] = "1h" }, []string{"changelog.retention.ms", "1h"}},
		{"bad slot ttl", func(s *setatspb.TableSpec) { s.Options["slot.ttl"] = "3 weeks" }, []string{"shop.orders", "slot.ttl", "3 weeks", "Flink duration"}},
		{"zero slot ttl", func(s *setatspb.TableSpec) { s.Options["slot.ttl"] = "0s" }, []string{"slot.ttl", "positive"}},
		{"bad changelog.enabled", func(s *setatspb.TableSpec) { s.Options["changelog.enabled"] = "on" }, []string{"changelog.enabled", "on"}},
		{"bad clean-on-consume", func(s *setatspb.TableSpec) { s.Options["changelog.clean-on-consume"] = "1" }, []string{"changelog.clean-on-consume"}},
		{"remote location", func(s *setatspb.TableSpec) { s.Location = "hdfs://nn/x" }, []string{"shop.orders", "location", "hdfs"}},
	} {
		s := ordersSpec()
		tc.mod(s)
		_, err := ResolveSpec(s, opts)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err %v, want InvalidArgument", tc.name, err)
			continue
		}
		for _, m := range tc.mentions {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("%s: error %q does not mention %q", tc.name, err, m)
			}
		}
	}
	if _, err := ResolveSpec(nil, opts); !errors.Is(err, ErrInvalid) {
		t.Errorf("nil spec: %v", err)
	}
	if _, err := ResolveSpec(ordersSpec(), Options{}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "warehouse") {
		t.Errorf("no warehouse: %v", err)
	}
}
