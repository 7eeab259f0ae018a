package auth

import (
	"errors"
	"fmt"
)

// Kind classifies an *Error; the gateway maps it to a gRPC code (gateway/authz.go).
type Kind uint8

const (
	// KindUnauthenticated: no credentials where a user is needed, wrong credentials, or an
	// expired or unknown bearer token (gRPC Unauthenticated).
	KindUnauthenticated Kind = iota + 1
	// KindPermissionDenied: an authenticated user beyond their grants, or a user removed from the
	// users file while a call of theirs runs (gRPC PermissionDenied).
	KindPermissionDenied
)

// Error is a refused authentication or authorization. Its message names the user (or
// "anonymous") and the call and table or database refused; it never contains a password or a
// token.
type Error struct {
	Kind Kind
	// User is the user name, "" for an anonymous caller.
	User string
	// Call is the Flight call or action, e.g. "DoPut", "create-table".
	Call string
	// msg is the rest of the message.
	msg string
}

func (e *Error) Error() string {
	who := "anonymous caller"
	if e.User != "" {
		who = fmt.Sprintf("user %q", e.User)
	}
	if e.Call != "" {
		return fmt.Sprintf("%s: %s %s", e.Call, who, e.msg)
	}
	return who + " " + e.msg
}

// KindOf returns the Kind of err when it is (or wraps) an *Error, else 0.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

// describe names what a check was about: "table db.t", "database db" (table Any), "the gateway"
// (db Any).
func describe(db, table string) string {
	switch {
	case db == Any:
		return "every database"
	case table == Any:
		return "database " + db
	}
	return "table " + db + "." + table
}
