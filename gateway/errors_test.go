package gateway

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/setats/setats/catalog"
	"github.com/setats/setats/gateway/binlog"
	"github.com/setats/setats/gateway/partname"
	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/gateway/store"
	"github.com/setats/setats/gateway/subscribe"
	"github.com/setats/setats/merge"
	"github.com/setats/setats/proto/setatspb"
)

// TestErrorCodes: every kind of typed error of the packages below the gateway becomes its gRPC
// code at the edge, with the error's message unchanged.
func TestErrorCodes(t *testing.T) {
	tests := []struct {
		kind error
		err  error // an error of that kind as its package builds it
		code codes.Code
	}{
		{catalog.ErrInvalid, &catalog.Error{Kind: catalog.ErrInvalid, Err: errors.New("m")}, codes.InvalidArgument},
		{catalog.ErrNotFound, &catalog.Error{Kind: catalog.ErrNotFound, Err: errors.New("m")}, codes.NotFound},
		{catalog.ErrAlreadyExists, &catalog.Error{Kind: catalog.ErrAlreadyExists, Err: errors.New("m")}, codes.AlreadyExists},
		{catalog.ErrFailedPrecondition, &catalog.Error{Kind: catalog.ErrFailedPrecondition, Err: errors.New("m")}, codes.FailedPrecondition},
		{catalog.ErrUnavailable, &catalog.Error{Kind: catalog.ErrUnavailable, Err: errors.New("m")}, codes.Unavailable},
		{catalog.ErrInternal, &catalog.Error{Kind: catalog.ErrInternal, Err: errors.New("m")}, codes.Internal},
		{merge.ErrInvalid, &merge.Error{Kind: merge.ErrInvalid, Err: errors.New("m")}, codes.InvalidArgument},
		{row.ErrInvalid, &row.Error{Kind: row.ErrInvalid, Err: errors.New("m")}, codes.InvalidArgument},
		{row.ErrInternal, &row.Error{Kind: row.ErrInternal, Err: errors.New("m")}, codes.Internal},
		{partname.ErrInvalid, &partname.Error{Kind: partname.ErrInvalid, Err: errors.New("m")}, codes.InvalidArgument},
		{store.ErrInvalid, &store.Error{Kind: store.ErrInvalid, Err: errors.New("m")}, codes.InvalidArgument},
		{store.ErrFailedPrecondition, &store.Error{Kind: store.ErrFailedPrecondition, Err: errors.New("m")}, codes.FailedPrecondition},
		{store.ErrOutOfRange, &store.Error{Kind: store.ErrOutOfRange, Err: errors.New("m")}, codes.OutOfRange},
		{store.ErrClosed, &store.Error{Kind: store.ErrClosed, Err: errors.New("m")}, codes.Unavailable},
		{store.ErrTableFailed, &store.ErrFailed{Table: "db.t", Op: "WAL fsync", Err: errors.New("EIO")}, codes.Unavailable},
		{store.ErrInternal, &store.Error{Kind: store.ErrInternal, Err: errors.New("m")}, codes.Internal},
		{store.ErrResourceExhausted, &store.Error{Kind: store.ErrResourceExhausted, Err: errors.New("m")}, codes.ResourceExhausted},
		{store.ErrAborted, &store.Error{Kind: store.ErrAborted, Err: errors.New("m")}, codes.Aborted},
		{store.ErrNotFound, &store.Error{Kind: store.ErrNotFound, Err: errors.New("m")}, codes.NotFound},
		{store.ErrPartitionDropped, &store.Error{Kind: store.ErrPartitionDropped, Err: errors.New("m")}, codes.NotFound},
		{binlog.ErrInvalid, &binlog.Error{Kind: binlog.ErrInvalid, Err: errors.New("m")}, codes.InvalidArgument},
		{binlog.ErrNotFound, &binlog.Error{Kind: binlog.ErrNotFound, Err: errors.New("m")}, codes.NotFound},
		{binlog.ErrFailedPrecondition, &binlog.Error{Kind: binlog.ErrFailedPrecondition, Err: errors.New("m")}, codes.FailedPrecondition},
		{binlog.ErrOutOfRange, &binlog.Error{Kind: binlog.ErrOutOfRange, Err: errors.New("m")}, codes.OutOfRange},
		{binlog.ErrResourceExhausted, &binlog.Error{Kind: binlog.ErrResourceExhausted, Err: errors.New("m")}, codes.ResourceExhausted},
		{subscribe.ErrInternal, subscribe.Errorf(subscribe.Internal, "m"), codes.Internal},
		{subscribe.ErrInvalid, subscribe.Errorf(subscribe.InvalidArgument, "m"), codes.InvalidArgument},
		{subscribe.ErrNotFound, subscribe.Errorf(subscribe.NotFound, "m"), codes.NotFound},
		{subscribe.ErrAlreadyExists, subscribe.Errorf(subscribe.AlreadyExists, "m"), codes.AlreadyExists},
		{subscribe.ErrFailedPrecondition, subscribe.Errorf(subscribe.FailedPrecondition, "m"), codes.FailedPrecondition},
		{subscribe.ErrUnauthenticated, subscribe.Errorf(subscribe.Unauthenticated, "m"), codes.Unauthenticated},
		{subscribe.ErrPermissionDenied, subscribe.Errorf(subscribe.PermissionDenied, "m"), codes.PermissionDenied},
		{subscribe.ErrOutOfRange, subscribe.Errorf(subscribe.OutOfRange, "m"), codes.OutOfRange},
		{subscribe.ErrUnavailable, subscribe.Errorf(subscribe.Unavailable, "m"), codes.Unavailable},
		{context.Canceled, &store.Error{Kind: context.Canceled, Err: context.Canceled}, codes.Canceled},
		{context.DeadlineExceeded, &store.Error{Kind: context.DeadlineExceeded, Err: context.DeadlineExceeded}, codes.DeadlineExceeded},
	}
	if len(tests) != len(errorCodes) {
		t.Errorf("errorCodes has %d kinds, the test %d: test every kind", len(errorCodes), len(tests))
	}
	for _, tc := range tests {
		if got := errorCodes[tc.kind]; got != tc.code {
			t.Errorf("errorCodes[%v] = %s, want %s", tc.kind, got, tc.code)
		}
		st, ok := toStatus(tc.err)
		if !ok || status.Code(st) != tc.code || status.Convert(st).Message() != tc.err.Error() {
			t.Errorf("toStatus(%v of kind %v) = %v, %v; want code %s, the same message", tc.err, tc.kind, st, ok, tc.code)
		}
		// statusOr keeps a typed error's code and message (no prefix), as it did for status errors.
		if got := statusOr(tc.err, codes.Unknown, "prefix"); status.Code(got) != tc.code || status.Convert(got).Message() != tc.err.Error() {
			t.Errorf("statusOr(%v) = %v, want code %s and the message unchanged", tc.err, got, tc.code)
		}
		// A typed error wrapped with context keeps its code.
		wrapped := fmt.Errorf("context: %w", tc.err)
		if got := codeOf(wrapped); got != tc.code {
			t.Errorf("codeOf(%v) = %s, want %s", wrapped, got, tc.code)
		}
		if got, want := wrapStatus(tc.err, "batch %d", 3), "batch 3: "+tc.err.Error(); status.Code(got) != tc.code || status.Convert(got).Message() != want {
			t.Errorf("wrapStatus(%v) = %v, want code %s, message %q", tc.err, got, tc.code, want)
		}
	}
}

// TestErrorCodesOfRealErrors: errors as the packages return them, end to end through toStatus,
// including an error wrapping a typed error of another kind (the outermost kind decides).
func TestErrorCodesOfRealErrors(t *testing.T) {
	cat, err := catalog.Open("hadoop", catalog.Options{Warehouse: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	_, errNotFound := cat.GetTable("nodb", "t")
	errExists := cat.CreateDatabase("default", false)
	_, errSpec := catalog.ResolveSpec(&setatspb.TableSpec{Table: "t"}, catalog.Options{Warehouse: t.TempDir()})
	_, errEngine := merge.New("NOPE", nil)
	metadataErr := &catalog.Error{Kind: catalog.ErrInternal, Err: fmt.Errorf("table metadata x: %w", errSpec)}
	tests := []struct {
		name string
		err  error
		code codes.Code
	}{
		{"catalog table not found", errNotFound, codes.NotFound},
		{"catalog database exists", errExists, codes.AlreadyExists},
		{"catalog bad spec", errSpec, codes.InvalidArgument},
		{"merge bad engine", errEngine, codes.InvalidArgument},
		{"internal wrapping invalid", metadataErr, codes.Internal},
		{"status error as it is", status.Error(codes.ResourceExhausted, "x"), codes.ResourceExhausted},
	}
	for _, tc := range tests {
		if tc.err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		st, ok := toStatus(tc.err)
		if !ok || status.Code(st) != tc.code || status.Convert(st).Message() != status.Convert(tc.err).Message() {
			t.Errorf("%s: toStatus(%v) = %v, want code %s and the message unchanged", tc.name, tc.err, st, tc.code)
		}
	}
	if st, ok := toStatus(errors.New("plain")); ok || st.Error() != "plain" {
		t.Errorf("toStatus of an untyped error = %v, %v; want it unchanged and false", st, ok)
	}
	if got := codeOf(errors.New("plain")); got != codes.Unknown {
		t.Errorf("codeOf(untyped) = %s, want Unknown", got)
	}
}

// TestPurePackagesHaveNoGRPC: the packages below the gateway speak Go errors only; gRPC codes
// belong to the gateway edge (errors.go).
func TestPurePackagesHaveNoGRPC(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	pkgs := []string{"../catalog", "../merge", "./store", "./row", "./partname", "./rowcodec", "./buckethash", "./binlog"}
	out, err := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "google.golang.org/grpc") {
			t.Errorf("%v depend on %s", pkgs, dep)
		}
	}
}
