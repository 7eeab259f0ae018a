package subscribe

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"sync"
)

// maxVerifiedLogins bounds a channel's cache of verified consumer passwords.
const maxVerifiedLogins = 1024

// verifiedLogins remembers which (group, user, password) passed bcrypt against which stored hash,
// so that a consumer that authenticates again and again (a DoGet per restart, a commit per Flink
// checkpoint) costs one bcrypt comparison, not one per call (about 50-100 ms of CPU each at
// bcrypt.DefaultCost, which on a loaded gateway delayed the records behind it). Entries are keyed
// by an HMAC with a per-process random key, so the cache holds no password; an entry counts only
// while the user's stored hash is the one it was verified against. Safe for concurrent use.
type verifiedLogins struct {
	once sync.Once
	key  []byte
	mu   sync.Mutex
	m    map[[32]byte][]byte
}

func (v *verifiedLogins) mac(group, user, password string) [32]byte {
	v.once.Do(func() {
		v.key = make([]byte, 32)
		_, _ = rand.Read(v.key)
		v.m = map[[32]byte][]byte{}
	})
	h := hmac.New(sha256.New, v.key)
	for _, s := range []string{group, user, password} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// check reports whether password is the one of hash, from the cache or by compare (bcrypt),
// caching a success.
func (v *verifiedLogins) check(group, user, password string, hash []byte, compare func(hash, password []byte) error) bool {
	k := v.mac(group, user, password)
	v.mu.Lock()
	h, ok := v.m[k]
	v.mu.Unlock()
	if ok && bytes.Equal(h, hash) {
		return true
	}
	if compare(hash, []byte(password)) != nil {
		return false
	}
	v.mu.Lock()
	if len(v.m) >= maxVerifiedLogins {
		clear(v.m)
	}
	v.m[k] = hash
	v.mu.Unlock()
	return true
}
