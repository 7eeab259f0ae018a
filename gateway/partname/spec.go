package partname

import (
	"github.com/setats/setats/catalog"
	"github.com/setats/setats/internal/culprit"
)

// MaxSpecBytes bounds a partition spec (keys and values together, bytes) and a partition name
// given to FromSpec; longer input is refused before it is examined further.
const MaxSpecBytes = 16 << 10

// FromSpec returns the partition name of a partition spec (Flink's CatalogPartitionSpec, Hive's
// partition spec): one entry per partition key of tbl, mapping the column name to the value's
// string form (ValueString). The name is built as Of builds it and then checked with Validate,
// so a value that is not in its column's canonical form (DATE "2026-1-1") is refused.
// Errors (ErrInvalid, naming the table and the culprit, truncated): a table without partition
// keys, more than MaxSpecBytes, a missing, unknown or extra key, a non-canonical value.
func FromSpec(tbl *catalog.Table, spec map[string]string) (string, error) {
	if len(tbl.PartitionKeys) == 0 {
		return "", invalidf(tbl, "the table is not partitioned: it has no partition to name")
	}
	size := 0
	for k, v := range spec {
		size += len(k) + len(v)
	}
	if size > MaxSpecBytes || len(spec) > len(tbl.PartitionKeys) {
		return "", invalidf(tbl, "partition spec of %d keys and %d bytes: the table has %d partition keys, at most %d bytes", len(spec), size, len(tbl.PartitionKeys), MaxSpecBytes)
	}
	for k := range spec {
		if !isPartitionKey(tbl, k) {
			return "", invalidf(tbl, "partition spec: %s is not a partition key (partition keys: %s)", culprit.Quote(k), partitionKeyNames(tbl))
		}
	}
	var dst []byte
	for i, c := range tbl.PartitionKeys {
		col := &tbl.Columns[c]
		v, ok := spec[col.Name]
		if !ok {
			return "", invalidf(tbl, "partition spec: partition key %q is missing (partition keys: %s)", col.Name, partitionKeyNames(tbl))
		}
		if i > 0 {
			dst = append(dst, '/')
		}
		dst = appendPartitionEscaped(dst, col.Name)
		dst = append(dst, '=')
		dst = appendPartitionEscaped(dst, v)
	}
	name := string(dst)
	if err := Validate(tbl, name); err != nil {
		return "", err
	}
	return name, nil
}

func isPartitionKey(tbl *catalog.Table, name string) bool {
	for _, c := range tbl.PartitionKeys {
		if tbl.Columns[c].Name == name {
			return true
		}
	}
	return false
}

func partitionKeyNames(tbl *catalog.Table) string {
	s := ""
	for i, c := range tbl.PartitionKeys {
		if i > 0 {
			s += ", "
		}
		s += tbl.Columns[c].Name
	}
	return s
}
