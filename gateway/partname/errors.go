package partname

import (
	"fmt"

	"github.com/setats/setats/catalog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// invalidf returns a codes.InvalidArgument status error whose message starts with the table's
// qualified name (db.table).
func invalidf(tbl *catalog.Table, format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, "table %s: %s", tbl.QualifiedName(), fmt.Sprintf(format, args...))
}
