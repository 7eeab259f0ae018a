package gateway

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/setats/setats/catalog"
	"github.com/setats/setats/proto/setatspb"
)

// checkCatalog checks the CatalogContext of a request before anything else is done (proto
// CatalogContext, SPEC section 2). A nil context passes.
//   - catalog_type "" or "hadoop" (any case) is served; "hive" is FailedPrecondition naming
//     catalog-type (SPEC section 8); anything else is InvalidArgument naming catalog-type
//     (catalog.CheckCatalogType).
//   - warehouse, when set, must equal the gateway's warehouse after normalisation; a mismatch is
//     FailedPrecondition naming both; a warehouse that does not normalise is InvalidArgument.
func (s *Server) checkCatalog(cc *setatspb.CatalogContext) error {
	if cc == nil {
		return nil
	}
	if err := catalog.CheckCatalogType(cc.GetCatalogType()); err != nil {
		return err
	}
	if w := cc.GetWarehouse(); w != "" {
		norm, err := catalog.NormalizeWarehouse(w)
		if err != nil {
			return status.Errorf(codes.InvalidArgument, "warehouse %q: %v", w, err)
		}
		if norm != s.cat.Warehouse() {
			return status.Errorf(codes.FailedPrecondition,
				"warehouse mismatch: the request's warehouse %q (%s) is not the gateway's warehouse %s",
				w, norm, s.cat.Warehouse())
		}
	}
	return nil
}
