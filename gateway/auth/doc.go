// Package auth holds the gateway's users, grants, bearer tokens and TLS material (SPEC section 14).
//
// A users file (YAML, --users-file) lists users with a bcrypt password hash and grants:
//
//	users:
//	  - name: etl
//	    password: "$2a$10$..."
//	    grants:
//	      - {database: "*", table: "*", privileges: [read, write]}
//	      - {channel: orders_channel, privileges: [read]}   # a subscription channel
//
// Authentication and authorization are two steps. The gateway's gRPC interceptor calls
// Authenticator.Authenticate with the call's `authorization` header (HTTP Basic credentials, or
// the bearer token a Flight handshake handed out) and stores the resulting Principal in the
// call's context; a call without credentials gets the anonymous principal and is not refused
// there. Each Flight handler then calls Authenticator.Authorize once it has decoded which table
// or action the call is about: anonymous callers fail with KindUnauthenticated, callers beyond
// their grants with KindPermissionDenied, both naming the user and what was refused.
//
// A nil *Authenticator is the gateway without a users file: every call is allowed anonymously
// (the gateway then only listens on loopback, unless --allow-anonymous).
//
// Errors are *Error values with a Kind; the gateway maps them to gRPC codes at its edge.
package auth
