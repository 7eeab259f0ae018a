package auth

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/crypto/bcrypt"
	"gopkg.in/yaml.v3"
)

// MaxUsersFileBytes bounds the size of a users file (bytes); a larger file is refused before it
// is parsed.
const MaxUsersFileBytes = 4 << 20

// DefaultCost is the bcrypt cost of HashPassword (bcrypt.DefaultCost, 10).
const DefaultCost = bcrypt.DefaultCost

// User is one entry of the users file.
type User struct {
	// Name is the user name of HTTP Basic credentials; unique in the file.
	Name string
	// Hash is the bcrypt hash of the password ("$2a$", "$2b$" or "$2y$"), never a plain password.
	Hash []byte
	// Grants are the user's privileges; none means the user can authenticate and do nothing.
	Grants []Grant
}

// Allows reports whether some grant of u gives p on db.table (table Any: the whole database).
func (u *User) Allows(p Privilege, db, table string) bool {
	for _, g := range u.Grants {
		if g.allows(p, db, table) {
			return true
		}
	}
	return false
}

// AllowsChannel reports whether some grant of u gives p on the subscription channel ch (a
// channel grant naming it or Any, or a grant on every database and table).
func (u *User) AllowsChannel(p Privilege, ch string) bool {
	for _, g := range u.Grants {
		if g.allowsChannel(p, ch) {
			return true
		}
	}
	return false
}

// SeesDatabase reports whether some grant of u names database db (or every database).
func (u *User) SeesDatabase(db string) bool {
	for _, g := range u.Grants {
		if g.touches(db) {
			return true
		}
	}
	return false
}

// Users is a parsed users file: users by name.
type Users struct {
	byName map[string]*User
	names  []string // file order
}

// Lookup returns the user called name, nil when there is none.
func (us *Users) Lookup(name string) *User {
	if us == nil {
		return nil
	}
	return us.byName[name]
}

// Names returns the user names in file order.
func (us *Users) Names() []string { return append([]string(nil), us.names...) }

// yamlFile is the YAML shape of a users file (doc.go).
type yamlFile struct {
	Users []yamlUser `yaml:"users"`
}

type yamlUser struct {
	Name     string      `yaml:"name"`
	Password string      `yaml:"password"`
	Grants   []yamlGrant `yaml:"grants"`
}

type yamlGrant struct {
	Database   string   `yaml:"database"`
	Table      string   `yaml:"table"`
	Channel    string   `yaml:"channel"`
	Privileges []string `yaml:"privileges"`
}

// LoadUsersFile reads and parses the users file at path (ParseUsers). Errors name the file.
func LoadUsersFile(path string) (*Users, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("users file %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxUsersFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("users file %s: %w", path, err)
	}
	us, err := ParseUsers(b)
	if err != nil {
		return nil, fmt.Errorf("users file %s: %w", path, err)
	}
	return us, nil
}

// ParseUsers parses a users file (YAML, doc.go). A file without users (empty, or half written
// by an editor) is an error: it would lock every user out. Unknown keys, a missing or duplicate name, a
// password that is not a bcrypt hash, an unknown privilege and an empty database or table
// pattern are errors naming the user (and line where YAML knows it). A grant's database and
// table default to "*" when left out; privileges are required. A grant with `channel` (a
// subscription channel's name or "*") is a channel grant and may name no database or table.
func ParseUsers(b []byte) (*Users, error) {
	if len(b) > MaxUsersFileBytes {
		return nil, fmt.Errorf("larger than %d bytes", MaxUsersFileBytes)
	}
	var f yamlFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if len(f.Users) == 0 {
		return nil, errors.New("no users listed (want a 'users:' list; an empty file is refused)")
	}
	us := &Users{byName: map[string]*User{}}
	for i, yu := range f.Users {
		name := yu.Name
		if strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("user %d: name is empty", i+1)
		}
		if strings.ContainsAny(name, ":\r\n") {
			return nil, fmt.Errorf("user %q: name may not contain ':' or line breaks", name)
		}
		if us.byName[name] != nil {
			return nil, fmt.Errorf("user %q is listed twice", name)
		}
		if _, err := bcrypt.Cost([]byte(yu.Password)); err != nil {
			return nil, fmt.Errorf("user %q: password must be a bcrypt hash (`setats user hash-password` prints one): %v", name, err)
		}
		u := &User{Name: name, Hash: []byte(yu.Password)}
		for j, yg := range yu.Grants {
			g := Grant{Database: yg.Database, Table: yg.Table, Channel: strings.TrimSpace(yg.Channel)}
			if g.Channel != "" {
				if g.Database != "" || g.Table != "" {
					return nil, fmt.Errorf("user %q grant %d: a grant names either a channel or a database and table, not both", name, j+1)
				}
			} else if yg.Channel != "" {
				return nil, fmt.Errorf("user %q grant %d: the channel name is blank", name, j+1)
			} else {
				if g.Database == "" {
					g.Database = Any
				}
				if g.Table == "" {
					g.Table = Any
				}
			}
			if len(yg.Privileges) == 0 {
				return nil, fmt.Errorf("user %q grant %d: privileges are missing (read, write, admin)", name, j+1)
			}
			for _, ps := range yg.Privileges {
				p, err := ParsePrivilege(ps)
				if err != nil {
					return nil, fmt.Errorf("user %q grant %d: %v", name, j+1, err)
				}
				g.Privileges |= p
			}
			u.Grants = append(u.Grants, g)
		}
		us.byName[name] = u
		us.names = append(us.names, name)
	}
	return us, nil
}

// HashPassword returns the bcrypt hash of password at cost (DefaultCost when <= 0), for the
// password field of a users file. Errors: a password over bcrypt's 72 bytes, or an empty one.
func HashPassword(password []byte, cost int) ([]byte, error) {
	if len(password) == 0 {
		return nil, errors.New("the password is empty")
	}
	if cost <= 0 {
		cost = DefaultCost
	}
	return bcrypt.GenerateFromPassword(password, cost)
}
