package catalog

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/setats/setats/internal/culprit"
	"github.com/setats/setats/merge"
	"github.com/setats/setats/proto/setatspb"
)

// Limits and defaults of table specs (SPEC sections 2 and 3).
const (
	// DefaultDatabase is the database of a spec or request that names none (SPEC section 2,
	// catalog-database). Open creates it when it does not exist.
	DefaultDatabase = "default"
	// DefaultBucketCount is the bucket count of a table whose spec has bucket_count <= 0 when
	// Options.DefaultBucketCount is <= 0 as well.
	DefaultBucketCount int32 = 4
	// MaxBucketCount is the largest bucket count of a table.
	MaxBucketCount int32 = 1024
	// MaxIdentifierLength is the longest database, table or column name, in bytes.
	MaxIdentifierLength = 128
)

// Table option keys (SPEC section 4). Any other key is InvalidArgument.
const (
	OptionIgnoreDelete         = merge.OptionIgnoreDelete         // "true"/"false"
	OptionRemoveRecordOnDelete = merge.OptionRemoveRecordOnDelete // "true"/"false"
	// OptionRetentionMs is how long changelog rows are kept, a positive integer in ms: the hard
	// cap, slots or not (SPEC section 8).
	OptionRetentionMs = "changelog.retention.ms"
	// OptionChangelogEnabled: "false" makes the table a pure upsert table without a changelog
	// (SPEC section 8, DWS enable_binlog). Default "true".
	OptionChangelogEnabled = "changelog.enabled"
	// OptionCleanOnConsume: "true" removes changelog rows every live slot consumed (SPEC section
	// 8, consume-then-clean). Default "false".
	OptionCleanOnConsume = "changelog.clean-on-consume"
	// OptionSlotTTL is how long a slot whose checkpoint sync point does not move stays live, a
	// Flink duration ("24h", "30 min", "500 ms"; a bare number is ms). Default 24 h (SPEC
	// section 8, DWS binlog_ttl). Stored normalized as milliseconds followed by " ms".
	OptionSlotTTL = "slot.ttl"
)

// DefaultSlotTTLMs is the slot.ttl of a table that sets none: 24 hours (SPEC section 8).
const DefaultSlotTTLMs = 24 * 60 * 60 * 1000

// AllowedOptions lists the accepted table option keys, sorted.
var AllowedOptions = []string{OptionCleanOnConsume, OptionChangelogEnabled, OptionRetentionMs,
	OptionIgnoreDelete, OptionRemoveRecordOnDelete, OptionSlotTTL}

// ValidateIdentifier checks a database, table or column name: [A-Za-z_][A-Za-z0-9_]*, at most
// MaxIdentifierLength bytes. kind ("database", "table", "column") names it in the
// ErrInvalid error. Names are case-sensitive.
func ValidateIdentifier(kind, name string) error {
	ok := name != "" && len(name) <= MaxIdentifierLength
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9'
	}
	if !ok {
		return errorf(ErrInvalid,
			"invalid %s name %s: want a letter or _ followed by letters, digits or _, at most %d characters",
			kind, culprit.Quote(name), MaxIdentifierLength)
	}
	return nil
}

// DefaultLocation returns the default data directory of a table: <warehouse dir>/<db>.db/<table>.
func DefaultLocation(warehouseDir, database, table string) string {
	return filepath.Join(warehouseDir, database+".db", table)
}

// ResolveSpec validates a table spec and fills in its defaults, without I/O (beyond resolving a
// relative warehouse against the current directory). defaults gives the warehouse (locations)
// and the default bucket count. The returned Table has Info.table_id and Info.created_at_ms
// unset; the Catalog sets them.
//
// Rules (SPEC sections 2-4), each violation an ErrInvalid error naming the
// table and the column, key or option at fault:
//   - database ("" means DefaultDatabase), table and column names pass ValidateIdentifier; column
//     names starting with "_" are reserved (proto/README.md); no duplicate column;
//   - every column type parses with ParseColumnType (a trailing NOT NULL sets not_null);
//   - the primary key is non-empty, names existing columns, no column twice; its columns become
//     NOT NULL;
//   - partition keys are part of the primary key;
//   - the bucket key is part of the primary key and disjoint from the partition keys; empty
//     means primary key minus partition keys, and when that is empty (every primary-key column
//     is a partition key, so a partition holds at most one row) the whole primary key;
//   - bucket_count <= 0 means defaults.DefaultBucketCount (DefaultBucketCount when that is <= 0);
//     at most MaxBucketCount;
//   - merge_engine as merge.CanonicalEngine accepts;
//   - options only those of AllowedOptions, booleans "true"/"false" (any case, stored lower
//     case), changelog.retention.ms a positive integer;
//   - location "" means DefaultLocation; else a path or file: URI (a relative path is relative
//     to the warehouse directory), without NUL bytes. Info.spec.location holds it as a file:///
//     URI. Whether it lies inside the warehouse is checked with I/O, by CheckLocation, when the
//     catalog creates the table.
func ResolveSpec(spec *setatspb.TableSpec, defaults Options) (*Table, error) {
	if spec == nil {
		return nil, newError(ErrInvalid, "table spec is missing")
	}
	db, name := spec.GetDatabase(), spec.GetTable()
	if db == "" {
		db = DefaultDatabase
	}
	if err := ValidateIdentifier("database", db); err != nil {
		return nil, err
	}
	if err := ValidateIdentifier("table", name); err != nil {
		return nil, err
	}
	qn := db + "." + name
	fail := func(format string, args ...any) error {
		return errorf(ErrInvalid, "table %s: %s", qn, fmt.Sprintf(format, args...))
	}
	root, err := WarehouseDir(defaults.Warehouse)
	if err != nil {
		return nil, err
	}

	t := &Table{Database: db, Name: name}
	index := map[string]int{}
	if len(spec.GetColumns()) == 0 {
		return nil, fail("no columns")
	}
	for i, c := range spec.GetColumns() {
		if err := ValidateIdentifier("column", c.GetName()); err != nil {
			return nil, fail("%s", err.Error())
		}
		if strings.HasPrefix(c.GetName(), "_") {
			return nil, fail("column %s: names starting with _ are reserved (_row_kind, _offset, _commit_timestamp)", c.GetName())
		}
		if _, dup := index[c.GetName()]; dup {
			return nil, fail("duplicate column %s", c.GetName())
		}
		typ, notNull, err := ParseColumnType(c.GetType())
		if err != nil {
			return nil, fail("column %s: %s", c.GetName(), err.Error())
		}
		index[c.GetName()] = i
		t.Columns = append(t.Columns, Column{Name: c.GetName(), Type: typ, NotNull: c.GetNotNull() || notNull, Comment: c.GetComment()})
	}

	keys := func(what string, names []string) ([]int, error) {
		var idx []int
		seen := map[string]bool{}
		for _, n := range names {
			i, ok := index[n]
			if !ok {
				return nil, fail("%s column %s does not exist", what, n)
			}
			if seen[n] {
				return nil, fail("%s names column %s twice", what, n)
			}
			seen[n] = true
			idx = append(idx, i)
		}
		return idx, nil
	}
	if t.PrimaryKey, err = keys("primary key", spec.GetPrimaryKey()); err != nil {
		return nil, err
	}
	if len(t.PrimaryKey) == 0 {
		return nil, fail("a primary key is required")
	}
	inPK := map[int]bool{}
	for _, i := range t.PrimaryKey {
		inPK[i] = true
		t.Columns[i].NotNull = true
	}
	if t.PartitionKeys, err = keys("partition key", spec.GetPartitionKeys()); err != nil {
		return nil, err
	}
	inPart := map[int]bool{}
	for _, i := range t.PartitionKeys {
		if !inPK[i] {
			return nil, fail("partition key %s is not part of the primary key (%s)",
				t.Columns[i].Name, strings.Join(spec.GetPrimaryKey(), ", "))
		}
		inPart[i] = true
	}
	if t.BucketKey, err = keys("bucket-key", spec.GetBucketKey()); err != nil {
		return nil, err
	}
	for _, i := range t.BucketKey {
		if !inPK[i] || inPart[i] {
			return nil, fail("bucket-key column %s must be part of the primary key and not a partition key (allowed: %s)",
				t.Columns[i].Name, strings.Join(columnNames(t, pkMinus(t.PrimaryKey, inPart)), ", "))
		}
	}
	if len(t.BucketKey) == 0 {
		t.BucketKey = pkMinus(t.PrimaryKey, inPart)
		if len(t.BucketKey) == 0 {
			t.BucketKey = append([]int(nil), t.PrimaryKey...)
		}
	}

	t.BucketCount = spec.GetBucketCount()
	if t.BucketCount <= 0 {
		t.BucketCount = defaults.DefaultBucketCount
		if t.BucketCount <= 0 {
			t.BucketCount = DefaultBucketCount
		}
	}
	if t.BucketCount > MaxBucketCount {
		return nil, fail("bucket count %d is above the maximum %d (option bucket)", t.BucketCount, MaxBucketCount)
	}

	if t.MergeEngine, err = merge.CanonicalEngine(spec.GetMergeEngine()); err != nil {
		return nil, fail("%s", err.Error())
	}
	if t.Options, t.RetentionMs, err = resolveOptions(spec.GetOptions()); err != nil {
		return nil, fail("%s", err.Error())
	}
	t.ChangelogEnabled = t.Options[OptionChangelogEnabled] != "false"
	t.CleanOnConsume = t.Options[OptionCleanOnConsume] == "true"
	t.SlotTTLMs = DefaultSlotTTLMs
	if v, ok := t.Options[OptionSlotTTL]; ok {
		t.SlotTTLMs, _ = ParseFlinkDuration(v)
	}
	if _, err := merge.New(t.MergeEngine, t.Options); err != nil {
		return nil, fail("%s", err.Error())
	}

	if strings.IndexByte(spec.GetLocation(), 0) >= 0 {
		return nil, fail("location %s holds a NUL byte", culprit.Quote(spec.GetLocation()))
	}
	if spec.GetLocation() == "" {
		t.Location = DefaultLocation(root, db, name)
	} else if t.Location, err = localPath("location", spec.GetLocation(), root); err != nil {
		return nil, fail("%s", err.Error())
	}

	t.Schema = ArrowSchema(t)
	resolved := &setatspb.TableSpec{
		Database:      db,
		Table:         name,
		PrimaryKey:    columnNames(t, t.PrimaryKey),
		PartitionKeys: columnNames(t, t.PartitionKeys),
		BucketCount:   t.BucketCount,
		BucketKey:     columnNames(t, t.BucketKey),
		MergeEngine:   t.MergeEngine,
		Options:       t.Options,
		Location:      pathURI(t.Location),
		Comment:       spec.GetComment(),
	}
	for _, c := range t.Columns {
		resolved.Columns = append(resolved.Columns, &setatspb.Column{
			Name: c.Name, Type: c.Type.String(), NotNull: c.NotNull, Comment: c.Comment,
		})
	}
	t.Info = &setatspb.TableInfo{Spec: resolved, ArrowSchema: EncodeArrowSchema(t.Schema)}
	return t, nil
}

func pkMinus(pk []int, exclude map[int]bool) []int {
	var out []int
	for _, i := range pk {
		if !exclude[i] {
			out = append(out, i)
		}
	}
	return out
}

// resolveOptions validates table options and returns them normalized, with the retention in ms.
func resolveOptions(in map[string]string) (map[string]string, int64, error) {
	out := make(map[string]string, len(in))
	var retention int64
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic error for several bad keys
	for _, k := range keys {
		v := in[k]
		switch k {
		case OptionSlotTTL:
			ms, err := ParseFlinkDuration(v)
			if err != nil || ms <= 0 {
				return nil, 0, errorf(ErrInvalid,
					"invalid value %q for option %s: want a positive Flink duration such as 24h, 30 min or 500 ms", v, k)
			}
			out[k] = strconv.FormatInt(ms, 10) + " ms"
		case OptionIgnoreDelete, OptionRemoveRecordOnDelete, OptionChangelogEnabled, OptionCleanOnConsume:
			b, err := merge.ParseBoolOption(k, v)
			if err != nil {
				return nil, 0, err
			}
			out[k] = strconv.FormatBool(b)
		case OptionRetentionMs:
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n <= 0 {
				return nil, 0, errorf(ErrInvalid,
					"invalid value %q for option %s: want a positive number of milliseconds", v, k)
			}
			out[k] = strconv.FormatInt(n, 10)
			retention = n
		default:
			return nil, 0, errorf(ErrInvalid,
				"unknown option %q: allowed are %s", k, strings.Join(AllowedOptions, ", "))
		}
	}
	return out, retention, nil
}
