package gatewaytest

import (
	"io"
	"log/slog"
	"slices"

	"github.com/setats/setats/catalog"
	"github.com/setats/setats/gateway/store"
	"github.com/setats/setats/merge"
)

// checkStoredState opens a stopped gateway's table offline with the store's own API
// (catalog.Open + store.Open + Table.ScanState: the state read the product offers, which the
// Flight API does not) and checks every stored row against the model's state and the bucket it
// belongs in. It is the table side of "the changelog folds to the table".
func checkStoredState(warehouse string, t *tdef, want map[string][]any, p *problems) error {
	got, err := scanStoredState(warehouse, t, p)
	if err != nil {
		return err
	}
	compareState(t.name, "store holds (offline ScanState)", got, want, p)
	return nil
}

// scanStoredState returns the stored state of a stopped gateway's table (key -> row), checking
// that each row is stored in the bucket it belongs in.
func scanStoredState(warehouse string, t *tdef, p *problems) (map[string][]any, error) {
	cat, err := catalog.Open(catalog.CatalogTypeHadoop, catalog.Options{Warehouse: warehouse})
	if err != nil {
		return nil, err
	}
	tbl, err := cat.GetTable(e2eDB, t.name)
	if err != nil {
		return nil, err
	}
	st, err := store.Open(tbl, store.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	got := map[string][]any{}
	err = st.ScanState(func(id store.BucketID, r merge.Row) error {
		vals := slices.Clone([]any(r))
		if len(vals) != len(t.cols) {
			p.add("stored state", "%s: row %s has %d values", t.name, FormatValues(vals), len(vals))
			return nil
		}
		key := t.keyOf(vals)
		part, bucket := t.location(vals)
		if part != id.Partition || bucket != id.Bucket {
			p.add("stored state location", "%s key %s stored in partition %q bucket %d, belongs in %q %d", t.name, key, id.Partition, id.Bucket, part, bucket)
		}
		if _, dup := got[key]; dup {
			p.add("stored state", "%s key %s stored twice", t.name, key)
		}
		got[key] = vals
		return nil
	})
	return got, err
}
