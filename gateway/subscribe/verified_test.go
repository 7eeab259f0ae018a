package subscribe

import (
	"errors"
	"testing"
)

// TestVerifiedLogins: a consumer that authenticates again with the same password costs no more
// bcrypt comparisons; a wrong password, another user or group, or a changed stored hash does.
func TestVerifiedLogins(t *testing.T) {
	var v verifiedLogins
	compares := 0
	compare := func(hash, pw []byte) error {
		compares++
		if string(hash) != "hash-of-"+string(pw) {
			return errors.New("mismatch")
		}
		return nil
	}
	for i, tc := range []struct {
		group, user, pw, hash string
		ok                    bool
		compares              int // total after the call
	}{
		{"g", "u", "pw", "hash-of-pw", true, 1},
		{"g", "u", "pw", "hash-of-pw", true, 1}, // cached
		{"g", "u", "bad", "hash-of-pw", false, 2},
		{"g", "u", "bad", "hash-of-pw", false, 3}, // failures are not cached
		{"g", "u2", "pw", "hash-of-pw", true, 4},  // another user: its own entry
		{"g2", "u", "pw", "hash-of-pw", true, 5},  // another group
		{"g", "u", "pw", "other-hash", false, 6},  // the stored hash changed: compared again
		{"g", "u", "pw", "hash-of-pw", true, 6},
	} {
		if got := v.check(tc.group, tc.user, tc.pw, []byte(tc.hash), compare); got != tc.ok || compares != tc.compares {
			t.Fatalf("case %d %+v: ok %v after %d compares", i, tc, got, compares)
		}
	}
	for i := 0; i < maxVerifiedLogins+10; i++ { // bounded
		v.check("g", "u", "pw", []byte("hash-of-pw"), compare)
		v.check("g", string(rune('a'+i%26))+string(rune(i)), "pw", []byte("hash-of-pw"), compare)
	}
	if len(v.m) > maxVerifiedLogins {
		t.Fatalf("cache holds %d entries, bound %d", len(v.m), maxVerifiedLogins)
	}
}
