package gateway

import (
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/setats/setats/catalog"
	_ "github.com/setats/setats/catalog/hive" // catalog-type "hive"
	"github.com/setats/setats/proto/setatspb"
)

// catalogFor checks the CatalogContext of a request before anything else is done (proto
// CatalogContext, SPEC sections 2 and 12) and returns the catalog it selects. A nil context is
// the hadoop catalog.
//   - catalog_type "" or "hadoop" (any case) is the gateway's hadoop catalog; "hive" is the Hive
//     Metastore catalog at uri (InvalidArgument naming uri when it is missing or malformed), one
//     per distinct uri list, opened on first use; anything else is InvalidArgument naming
//     catalog-type.
//   - warehouse, when set, must equal the gateway's warehouse after normalisation; a mismatch is
//     FailedPrecondition naming both; a warehouse that does not normalise is InvalidArgument.
//     Hive tables keep their data under the gateway's warehouse too.
//
// The catalog's errors are typed (catalog.Error); the handlers map them (errors.go).
func (s *Server) catalogFor(cc *setatspb.CatalogContext) (catalog.Catalog, error) {
	typ, err := catalog.NormalizeCatalogType(cc.GetCatalogType())
	if err != nil {
		return nil, statusOr(err, codes.InvalidArgument, "catalog-type")
	}
	if w := cc.GetWarehouse(); w != "" {
		norm, err := catalog.NormalizeWarehouse(w)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "warehouse %q: %v", w, err)
		}
		if norm != s.cat.Warehouse() {
			return nil, status.Errorf(codes.FailedPrecondition,
				"warehouse mismatch: the request's warehouse %q (%s) is not the gateway's warehouse %s",
				w, norm, s.cat.Warehouse())
		}
	}
	if typ == catalog.CatalogTypeHadoop {
		return s.cat, nil
	}
	return s.catalogs.get(s, typ, cc)
}

// checkCatalog is catalogFor without the catalog.
func (s *Server) checkCatalog(cc *setatspb.CatalogContext) error {
	_, err := s.catalogFor(cc)
	return err
}

// catalogSet holds the catalogs other than hadoop that requests have selected, keyed by type
// and normalised uri list.
type catalogSet struct {
	mu   sync.Mutex
	byID map[string]catalog.Catalog
}

func (cs *catalogSet) get(s *Server, typ string, cc *setatspb.CatalogContext) (catalog.Catalog, error) {
	var uris []string
	for _, u := range strings.Split(cc.GetUri(), ",") {
		if u = strings.TrimSpace(u); u != "" {
			uris = append(uris, u)
		}
	}
	key := typ + "|" + strings.Join(uris, ",")
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c, ok := cs.byID[key]; ok {
		return c, nil
	}
	c, err := catalog.Open(typ, catalog.Options{
		Warehouse:          s.cat.Warehouse(),
		DefaultBucketCount: s.opts.DefaultBucketCount,
		URIs:               strings.Join(uris, ","),
		CatalogName:        cc.GetCatalogName(),
	})
	if err != nil {
		return nil, statusOr(err, codes.InvalidArgument, "open %s catalog", typ)
	}
	if cs.byID == nil {
		cs.byID = map[string]catalog.Catalog{}
	}
	cs.byID[key] = c
	s.log.Info("catalog opened", "catalog_type", typ, "uri", cc.GetUri(), "catalog_name", cc.GetCatalogName())
	return c, nil
}

// all returns the catalogs opened so far.
func (cs *catalogSet) all() []catalog.Catalog {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	out := make([]catalog.Catalog, 0, len(cs.byID))
	for _, c := range cs.byID {
		out = append(out, c)
	}
	return out
}

// closeAll closes the catalogs that hold connections (the Hive Metastore ones).
func (cs *catalogSet) closeAll() {
	for _, c := range cs.all() {
		if cl, ok := c.(interface{ Close() }); ok {
			cl.Close()
		}
	}
}

// allCatalogs returns the hadoop catalog and every catalog opened for requests.
func (s *Server) allCatalogs() []catalog.Catalog {
	return append([]catalog.Catalog{s.cat}, s.catalogs.all()...)
}
