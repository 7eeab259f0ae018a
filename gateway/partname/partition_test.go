package partname

import (
	"github.com/setats/setats/gateway/internal/rowtest"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/setats/setats/catalog"
	"github.com/setats/setats/merge"
)

func TestPartitionName(t *testing.T) {
	tests := []struct {
		typ  catalog.Type
		val  any
		want string
	}{
		{rowtest.String, "20261129", "p=20261129"},
		{rowtest.String, "a/b=c%d", "p=a%2Fb%3Dc%25d"},
		{rowtest.String, "tab\there\x7f", "p=tab%09here%7F"},
		{rowtest.String, "", "p="},
		{rowtest.String, "北京 ok", "p=北京 ok"},
		{rowtest.Int, int32(-42), "p=-42"},
		{rowtest.Tiny, int8(7), "p=7"},
		{rowtest.Big, int64(1) << 40, "p=1099511627776"},
		{rowtest.Bool, true, "p=true"},
		{rowtest.Date, arrow.Date32(20786), "p=2026-11-29"},
		{rowtest.Date, arrow.Date32(-1), "p=1969-12-31"},
		{rowtest.Dec, decimal128.FromI64(-1230), "p=-12.30"},
		{rowtest.Double, 1.5, "p=1.5"},
		{rowtest.Bytes, []byte{0xde, 0xad}, "p=dead"},
		{rowtest.Time, arrow.Time32(36000123), "p=10:00:00.123"},
		{rowtest.Time, arrow.Time32(36000000), "p=10:00:00"},
		{rowtest.Ts3, arrow.Timestamp(1_795_946_400_120), "p=2026-11-29 10:00:00.120"},
		{rowtest.Ts0, arrow.Timestamp(1_795_946_400), "p=2026-11-29 10:00:00"},
	}
	for _, tc := range tests {
		tbl := rowtest.Table("p", []catalog.Column{{Name: "id", Type: rowtest.Int}, {Name: "p", Type: tc.typ}}, []int{0, 1}, []int{1}, nil, 1)
		got := Of(tbl, merge.Row{int32(1), tc.val})
		if got != tc.want {
			t.Errorf("%s %v: got %q, want %q", tc.typ, tc.val, got, tc.want)
		}
		if err := Validate(tbl, got); err != nil {
			t.Errorf("%s %v: %v", tc.typ, tc.val, err)
		}
	}
}

func TestPartitionNameMultiAndNone(t *testing.T) {
	cols := []catalog.Column{{Name: "id", Type: rowtest.String}, {Name: "dt", Type: rowtest.String}, {Name: "hr", Type: rowtest.Int}}
	tbl := rowtest.Table("p", cols, []int{0, 1, 2}, []int{1, 2}, nil, 4)
	r := merge.Row{"k", "2026-11-29", int32(7)}
	if got := Of(tbl, r); got != "dt=2026-11-29/hr=7" {
		t.Errorf("got %q", got)
	}
	none := rowtest.Table("n", cols, []int{0}, nil, nil, 4)
	if got := Of(none, r); got != "" {
		t.Errorf("unpartitioned: got %q", got)
	}
	if err := Validate(none, ""); err != nil {
		t.Error(err)
	}
}

func TestValidatePartitionNameErrors(t *testing.T) {
	cols := []catalog.Column{{Name: "id", Type: rowtest.String}, {Name: "dt", Type: rowtest.String}, {Name: "hr", Type: rowtest.Int}, {Name: "d", Type: rowtest.Date}}
	tbl := rowtest.Table("p", cols, []int{0, 1, 2, 3}, []int{1, 2, 3}, nil, 4)
	bad := []struct{ name, want string }{
		{"", "3 segments"},
		{"dt=a/hr=1", "3 segments"},
		{"dt=a/hr=1/d=2026-11-29/x=1", "3 segments"},
		{"hr=1/dt=a/d=2026-11-29", `"dt="`},
		{"dt/hr=1/d=2026-11-29", `"dt="`},
		{"dt=a=b/hr=1/d=2026-11-29", "escaping"},
		{"dt=a%2f/hr=1/d=2026-11-29", "escaping"},
		{"dt=a%41/hr=1/d=2026-11-29", "escaping"},
		{"dt=a%/hr=1/d=2026-11-29", "escaping"},
		{"dt=a\x01/hr=1/d=2026-11-29", "escaping"},
		{"dt=a/hr=01/d=2026-11-29", "not a canonical INT"},
		{"dt=a/hr=x/d=2026-11-29", "not a canonical INT"},
		{"dt=a/hr=99999999999/d=2026-11-29", "not a canonical INT"},
		{"dt=a/hr=1/d=2026-11-31", "not a canonical DATE"},
		{"dt=a/hr=1/d=20261129", "not a canonical DATE"},
	}
	for _, tc := range bad {
		err := Validate(tbl, tc.name)
		wantKind(t, err, ErrInvalid)
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "db.p") {
			t.Errorf("%q: error %q does not contain %q", tc.name, err, tc.want)
		}
	}
	if err := Validate(tbl, "dt=a%2F%3D/hr=-3/d=2026-11-29"); err != nil {
		t.Error(err)
	}
	none := rowtest.Table("n", cols, []int{0}, nil, nil, 4)
	wantKind(t, Validate(none, "dt=a"), ErrInvalid)
}

// TestPartitionDecimalExact is a regression case: 38-digit decimals must be parsed exactly
// (decimal128.FromString goes through a binary float and rounds them).
func TestPartitionDecimalExact(t *testing.T) {
	typ := catalog.Type{Kind: catalog.Decimal, Precision: 38, Scale: 2}
	tbl := rowtest.Table("p", []catalog.Column{{Name: "id", Type: rowtest.Int}, {Name: "p", Type: typ}}, []int{0, 1}, []int{1}, nil, 1)
	for _, v := range []string{"123456789012345678901234567890123456.78", "-99999999999999999999999999999999999.99", "0.01", "-0.10"} {
		n, err := parseDecimal(v, 38, 2)
		if err != nil {
			t.Fatal(err)
		}
		if got := n.ToString(2); got != v {
			t.Errorf("parseDecimal(%s) = %s", v, got)
		}
		name := "p=" + v
		if Of(tbl, merge.Row{int32(1), n}) != name {
			t.Errorf("Of = %q, want %q", Of(tbl, merge.Row{int32(1), n}), name)
		}
		if err := Validate(tbl, name); err != nil {
			t.Error(err)
		}
	}
	for _, bad := range []string{"1.234", "1.", ".5", "1e3", "--1", "1234567890123456789012345678901234567.00"} {
		if _, err := parseDecimal(bad, 38, 2); err == nil {
			t.Errorf("parseDecimal(%q): no error", bad)
		}
	}
}
