package auth

import (
	"fmt"
	"strings"
)

// Privilege is one right a grant gives (SPEC section 14). Values are a bit set; Admin implies
// Read and Write.
type Privilege uint8

const (
	// Read allows list/describe calls (list-databases, list-tables, get-table, list-buckets,
	// lookup-offsets, GetSchema, GetFlightInfo, ListFlights), DoGet, snapshot reads and watch.
	Read Privilege = 1 << iota
	// Write allows DoPut.
	Write
	// Admin allows creating and dropping databases and tables, slots and channels, and every
	// other call; it implies Read and Write.
	Admin
)

// String returns "read", "write" or "admin" (several joined with "+").
func (p Privilege) String() string {
	var parts []string
	if p&Read != 0 {
		parts = append(parts, "read")
	}
	if p&Write != 0 {
		parts = append(parts, "write")
	}
	if p&Admin != 0 {
		parts = append(parts, "admin")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}

// ParsePrivilege maps "read", "write" or "admin" (case-insensitive) to its Privilege.
func ParsePrivilege(s string) (Privilege, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "read":
		return Read, nil
	case "write":
		return Write, nil
	case "admin":
		return Admin, nil
	}
	return 0, fmt.Errorf("unknown privilege %q (want read, write or admin)", s)
}

// effective expands Admin into Read|Write|Admin.
func (p Privilege) effective() Privilege {
	if p&Admin != 0 {
		return p | Read | Write
	}
	return p
}

// Any is the wildcard of a grant's database or table.
const Any = "*"

// Grant gives privileges on the tables matched by Database and Table, each a name or Any, or,
// when Channel is set, on the subscription channels it matches (a name or Any; SPEC section 11).
// A channel grant names no database or table and covers no table. A grant on every database and
// table (Database and Table both Any) also covers every channel.
type Grant struct {
	Database   string
	Table      string
	Channel    string
	Privileges Privilege
}

// matches reports whether pattern (a name or Any) covers name. The name Any (a check on a whole
// database or on the whole gateway) is covered only by the pattern Any.
func matches(pattern, name string) bool {
	return pattern == Any || pattern == name
}

// allows reports whether g gives privilege p on database db, table table. table Any asks for the
// whole database (create/drop database), db Any for the whole gateway.
func (g Grant) allows(p Privilege, db, table string) bool {
	return g.Channel == "" && g.Privileges.effective()&p == p && matches(g.Database, db) && matches(g.Table, table)
}

// allowsChannel reports whether g gives privilege p on the subscription channel ch: a channel
// grant matching ch, or a grant on every database and table.
func (g Grant) allowsChannel(p Privilege, ch string) bool {
	if g.Privileges.effective()&p != p {
		return false
	}
	if g.Channel != "" {
		return matches(g.Channel, ch)
	}
	return g.Database == Any && g.Table == Any
}

// touches reports whether g gives any privilege on some table of database db (listing).
func (g Grant) touches(db string) bool {
	return g.Channel == "" && g.Privileges != 0 && matches(g.Database, db)
}
