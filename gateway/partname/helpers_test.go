package partname

import (
	"testing"

	"github.com/setats/setats/gateway/internal/rowtest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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

// wantCode fails unless err is a status error with code c.
func wantCode(t testing.TB, err error, c codes.Code) {
	t.Helper()
	if status.Code(err) != c {
		t.Fatalf("want %s error, got %v", c, err)
	}
}
