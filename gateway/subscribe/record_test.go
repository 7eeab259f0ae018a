package subscribe

import (
	"reflect"
	"strings"
	"testing"
)

func TestRecordEncoding(t *testing.T) {
	recs := []Record{
		{ID: 7, Op: OpHeartbeat, Position: "0/16B3748", TimestampMs: 1625045211000},
		{ID: 8, Op: OpBegin, Position: "1@2", TimestampMs: 1, TxID: "42"},
		{ID: 9, Op: OpInsert, Object: "shop.orders", Position: "p", TimestampMs: -5, TxID: "42",
			Fields: []Field{{"id", "INT"}, {"note", "STRING"}, {"b", "BYTES"}}, After: [][]byte{[]byte("1"), nil, {}}},
		{ID: 10, Op: OpUpdate, Object: "shop.orders", Fields: []Field{{"id", "INT"}},
			Before: [][]byte{[]byte("1")}, After: [][]byte{[]byte("2")}},
		{ID: 11, Op: OpDelete, Object: "d.t", Fields: []Field{{"x", "STRING"}}, Before: [][]byte{nil}},
		{ID: 12, Op: OpDDL, Object: "d.t", Fields: []Field{{"ddl", "STRING"}}, After: [][]byte{[]byte("ALTER TABLE t ADD c int")}},
	}
	for _, r := range recs {
		b := AppendEncoded(nil, &r)
		got, err := DecodeRecord(r.ID, b)
		if err != nil {
			t.Fatalf("%v: %v", r.Op, err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("round trip:\n got %#v\nwant %#v", got, r)
		}
		// Every truncation is an error, never a panic or a silently short record.
		for n := 0; n < len(b); n++ {
			if _, err := DecodeRecord(r.ID, b[:n]); err == nil {
				t.Fatalf("%v truncated to %d bytes decoded", r.Op, n)
			}
		}
		if _, err := DecodeRecord(r.ID, append(b, 0)); err == nil {
			t.Fatalf("%v with a trailing byte decoded", r.Op)
		}
	}
	// A hostile field count is refused before anything is allocated for it.
	bad := []byte{recordVersion, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}
	if _, err := DecodeRecord(1, bad); err == nil || !strings.Contains(err.Error(), "fields") {
		t.Fatalf("hostile field count: %v", err)
	}
}

func TestOpNames(t *testing.T) {
	for o := OpInsert; o <= OpHeartbeat; o++ {
		p, ok := ParseOp(strings.ToLower(o.String()))
		if !ok || p != o {
			t.Fatalf("%v: %v %v", o, p, ok)
		}
	}
	if OpHeartbeat != 6 || OpInsert != 0 || OpDDL != 3 {
		t.Fatal("wire values of Op changed")
	}
}

func TestCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		id  int64
		pos string
		ms  int64
		s   string
	}{
		{12006303, "289540@2688", 1625045211000, "0@12006303@289540@2688@1625045211000"}, // T3
		{0, "", 0, "0@0@@0"},
		{5, "MariaDB/0-1-27", 1, "0@5@MariaDB/0-1-27@1"},
		{5, "a@@b@", 2, "0@5@a@@b@@2"},
	} {
		if got := FormatCheckpoint(tc.id, tc.pos, tc.ms); got != tc.s {
			t.Fatalf("format: %q, want %q", got, tc.s)
		}
		id, pos, ms, err := ParseCheckpoint(tc.s)
		if err != nil || id != tc.id || pos != tc.pos || ms != tc.ms {
			t.Fatalf("parse %q: %d %q %d %v", tc.s, id, pos, ms, err)
		}
	}
	for _, bad := range []string{"", "1@2@3@4", "0@x@p@1", "0@1", "0@1@p", "0@1@p@t", "0@-1@p@1"} {
		if _, _, _, err := ParseCheckpoint(bad); err == nil {
			t.Fatalf("%q parsed", bad)
		}
	}
}
