package subscribe

import (
	"encoding/json"
	"errors"
	"sort"

	"github.com/cockroachdb/pebble/v2"
	"golang.org/x/crypto/bcrypt"
)

// Group is a consumer group of a channel (the seed's dts.sid): users with bcrypt-hashed
// passwords and the group's committed position.
type Group struct {
	Name string `json:"name"`
	// Users maps a user name to the bcrypt hash of its password.
	Users map[string][]byte `json:"users"`
	// CommittedID is the next record id to read as of the last completed checkpoint; -1 = none.
	CommittedID         int64  `json:"committed_id"`
	CommittedCheckpoint string `json:"committed_checkpoint,omitempty"`
	CommittedAtMs       int64  `json:"committed_at_ms,omitempty"`
	// ClusterChangeFrom is the old cluster id the group was told about (ClusterChanged): a
	// consumer of the group naming it again has restarted and re-seeks by time.
	ClusterChangeFrom string `json:"cluster_change_from,omitempty"`
}

// UserNames returns the group's users, sorted.
func (g *Group) UserNames() []string {
	names := make([]string, 0, len(g.Users))
	for u := range g.Users {
		names = append(names, u)
	}
	sort.Strings(names)
	return names
}

// maxPasswordBytes is bcrypt's input limit.
const maxPasswordBytes = 72

func groupKey(name string) []byte { return append([]byte{keyGroup}, name...) }

// CreateGroup creates group name with user and password, or adds the user to an existing group.
// A user that already exists in the group is AlreadyExists. Empty names or passwords are
// InvalidArgument.
func (c *Channel) CreateGroup(name, user, password string) (Group, error) {
	if name == "" || user == "" {
		return Group{}, Errorf(InvalidArgument, "channel %s: a consumer group needs a group name and a user", c.name)
	}
	if password == "" || len(password) > maxPasswordBytes {
		return Group{}, Errorf(InvalidArgument, "channel %s group %s user %s: the password must have 1 to %d bytes", c.name, name, user, maxPasswordBytes)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return Group{}, Errorf(Internal, "hash password: %v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g, err := c.groupLocked(name)
	switch {
	case err == nil:
		if _, ok := g.Users[user]; ok {
			return g, Errorf(AlreadyExists, "channel %s: user %s already exists in consumer group %s", c.name, user, name)
		}
	case errors.Is(err, pebble.ErrNotFound):
		g = Group{Name: name, Users: map[string][]byte{}, CommittedID: -1}
	default:
		return g, err
	}
	g.Users[user] = hash
	return g, c.putGroupLocked(g)
}

func (c *Channel) groupLocked(name string) (Group, error) {
	var g Group
	if c.closed {
		return g, Errorf(Unavailable, "channel %s is closed", c.name)
	}
	err := getJSON(c.db, groupKey(name), &g)
	if err != nil && !errors.Is(err, pebble.ErrNotFound) {
		return g, Errorf(Internal, "channel %s: read group %s: %v", c.name, name, err)
	}
	return g, err
}

func (c *Channel) putGroupLocked(g Group) error {
	b, _ := json.Marshal(g)
	if err := c.db.Set(groupKey(g.Name), b, pebble.Sync); err != nil {
		return Errorf(Internal, "channel %s: write group %s: %v", c.name, g.Name, err)
	}
	return nil
}

// Groups returns the channel's consumer groups sorted by name.
func (c *Channel) Groups() ([]Group, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, Errorf(Unavailable, "channel %s is closed", c.name)
	}
	it, err := c.db.NewIter(&pebble.IterOptions{LowerBound: []byte{keyGroup}, UpperBound: []byte{keyGroup + 1}})
	if err != nil {
		return nil, Errorf(Internal, "channel %s: %v", c.name, err)
	}
	defer it.Close()
	var out []Group
	for ok := it.First(); ok; ok = it.Next() {
		var g Group
		if err := json.Unmarshal(it.Value(), &g); err != nil {
			return nil, Errorf(Internal, "channel %s: group %s: %v", c.name, it.Key()[1:], err)
		}
		out = append(out, g)
	}
	return out, it.Error()
}

// Authenticate checks that user is a member of group with that password (SPEC section 11).
// Errors name the user, the group and the channel: PermissionDenied when the group does not
// exist on this channel or the user is not one of its members (a user of another group
// included), Unauthenticated when the password is wrong or missing.
func (c *Channel) Authenticate(group, user, password string) (Group, error) {
	c.mu.Lock()
	g, err := c.groupLocked(group)
	c.mu.Unlock()
	if errors.Is(err, pebble.ErrNotFound) {
		return g, Errorf(PermissionDenied, "user %q: consumer group %q does not exist on channel %s", user, group, c.name)
	}
	if err != nil {
		return g, err
	}
	hash, ok := g.Users[user]
	if !ok {
		return g, Errorf(PermissionDenied, "user %q is not a member of consumer group %q of channel %s", user, group, c.name)
	}
	if password == "" || !c.verified.check(group, user, password, hash, bcrypt.CompareHashAndPassword) {
		return g, Errorf(Unauthenticated, "user %q of consumer group %q of channel %s: wrong password", user, group, c.name)
	}
	return g, nil
}

// Commit stores nextID (and the checkpoint string of the last record read) as the group's
// committed position. A position outside [first, next] of the channel is OutOfRange; a position
// behind the committed one is accepted (a job restored from an older checkpoint moves it back).
func (c *Channel) Commit(group string, nextID int64, checkpoint string, nowMs int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if nextID < 0 || nextID > c.st.Next {
		return Errorf(OutOfRange, "channel %s group %s: committed id %d is outside [0, %d]", c.name, group, nextID, c.st.Next)
	}
	g, err := c.groupLocked(group)
	if err != nil {
		return err
	}
	g.CommittedID, g.CommittedCheckpoint, g.CommittedAtMs = nextID, checkpoint, nowMs
	return c.putGroupLocked(g)
}

// NoteClusterChange records that group was told its position belongs to cluster old and returns
// whether it had been told so before (the consumer restarted: it may re-seek by time).
func (c *Channel) NoteClusterChange(group, old string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, err := c.groupLocked(group)
	if err != nil {
		return false, err
	}
	if g.ClusterChangeFrom == old {
		return true, nil
	}
	g.ClusterChangeFrom = old
	return false, c.putGroupLocked(g)
}
