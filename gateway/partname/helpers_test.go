package partname

import (
	"errors"
	"testing"
)

// wantKind fails unless err is an *Error of the kind.
func wantKind(t testing.TB, err error, kind error) {
	t.Helper()
	var typed *Error
	if !errors.Is(err, kind) || !errors.As(err, &typed) {
		t.Fatalf("want an error of kind %v, got %v", kind, err)
	}
}
