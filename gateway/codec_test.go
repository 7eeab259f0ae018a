package gateway

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/proto/setatspb"
)

func TestCodecRoundTrip(t *testing.T) {
	in := &setatspb.ChangelogTicket{Database: "db", Table: "t", Partition: "dt=1", Bucket: 3,
		Start: &setatspb.ChangelogTicket_Offset{Offset: 42}, Follow: true}
	bin, err := proto.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		payload []byte
		enc     encoding
	}{
		{"binary", bin, encBinary},
		{"json camel", []byte(`{"database":"db","table":"t","partition":"dt=1","bucket":3,"offset":"42","follow":true}`), encJSON},
		{"json proto names, leading blanks", []byte(" \n\t{\"database\":\"db\",\"table\":\"t\",\"partition\":\"dt=1\",\"bucket\":3,\"offset\":42,\"follow\":true}"), encJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := &setatspb.ChangelogTicket{}
			enc, err := decodeMsg(tc.payload, got, "ticket")
			if err != nil {
				t.Fatal(err)
			}
			if enc != tc.enc || !proto.Equal(got, in) {
				t.Fatalf("decoded %v as %s, want %v as %s", got, enc, in, tc.enc)
			}
			out, err := encodeMsg(enc, got)
			if err != nil {
				t.Fatal(err)
			}
			if detectEncoding(out) != enc {
				t.Fatalf("answer encoded as %s, request was %s", detectEncoding(out), enc)
			}
			back := &setatspb.ChangelogTicket{}
			if _, err := decodeMsg(out, back, "ticket"); err != nil || !proto.Equal(back, in) {
				t.Fatalf("round trip: %v %v", back, err)
			}
		})
	}
}

func TestCodecEmptyAndBad(t *testing.T) {
	if enc, err := decodeMsg(nil, &setatspb.Empty{}, "body"); err != nil || enc != encBinary {
		t.Fatalf("empty body: %s %v", enc, err)
	}
	_, err := decodeMsg([]byte(`{"nope": 1}`), &setatspb.TableRequest{}, "get-table body")
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "get-table body") {
		t.Fatalf("unknown JSON field: %v", err)
	}
	_, err = decodeMsg([]byte{0xff, 0xff, 0xff}, &setatspb.TableRequest{}, "get-table body")
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("bad binary: %v", err)
	}
	// JSON answers carry zero values, so json.loads users find every field.
	out, err := encodeMsg(encJSON, &setatspb.ResolvedOffset{Bucket: 0, Offset: 0, Resolved: false})
	if err != nil || !strings.Contains(string(out), `"offset"`) {
		t.Fatalf("zero fields missing from JSON answer: %s %v", out, err)
	}
}

func TestSubjects(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{subject("db", "t", kindData), "setats.db.t.data"},
		{subject("a.b", "t*", kindBucket), "setats.a_b.t_.bucket"},
		{watchSubject("db", "t"), "setats.db.t.*"},
		{watchSubject("db", ""), "setats.db.*.*"},
		{watchSubject("", ""), "setats.*.*.*"},
		{notificationKindSubject(setatspb.NotificationKind_TABLE_DROPPED), "table"},
		{notificationKindSubject(setatspb.NotificationKind_NEW_BUCKET), "bucket"},
		{notificationKindSubject(setatspb.NotificationKind_NEW_DATA), "data"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
