package partname

import (
	"errors"
	"testing"

	"github.com/setats/setats/gateway/internal/rowtest"
)

// Shared test shapes (internal/rowtest), under the names the tests use.
var (
	tBool    = rowtest.Bool
	tTiny    = rowtest.Tiny
	tSmall   = rowtest.Small
	tInt     = rowtest.Int
	tBig     = rowtest.Big
	tFloat   = rowtest.Float
	tDouble  = rowtest.Double
	tDec     = rowtest.Dec
	tChar3   = rowtest.Char3
	tString  = rowtest.String
	tBytes   = rowtest.Bytes
	tDate    = rowtest.Date
	tTime    = rowtest.Time
	tTs9     = rowtest.Ts9
	tTs3     = rowtest.Ts3
	tLtz6    = rowtest.Ltz6
	tTs0     = rowtest.Ts0
	tVarchar = rowtest.Varchar

	mkTable  = rowtest.Table
	allTypes = rowtest.AllTypes
	fullRow  = rowtest.FullRow
)

// wantKind fails unless err is an *Error of the kind.
func wantKind(t testing.TB, err error, kind error) {
	t.Helper()
	var typed *Error
	if !errors.Is(err, kind) || !errors.As(err, &typed) {
		t.Fatalf("want an error of kind %v, got %v", kind, err)
	}
}
