package auth

import (
	"sync"
	"time"
)

// Slow-down of peers that fail to authenticate repeatedly (SPEC section 14).
const (
	// FreeFailures is how many failures in a row a peer may have before its attempts wait.
	FreeFailures = 3
	// FirstDelay is the wait after FreeFailures failures; it doubles with each further failure.
	FirstDelay = 100 * time.Millisecond
	// MaxDelay caps the wait of one attempt.
	MaxDelay = 5 * time.Second
	// FailureWindow: a peer's failures are forgotten this long after its last one.
	FailureWindow = 15 * time.Minute
	// maxPeers bounds the peers tracked; when full, the peer whose last failure is oldest goes.
	maxPeers = 4096
)

// DelayAfter returns how long an attempt waits after n failures in a row of its peer: 0 for
// n < FreeFailures, then FirstDelay doubling per failure, at most MaxDelay.
func DelayAfter(n int) time.Duration {
	if n < FreeFailures {
		return 0
	}
	shift := n - FreeFailures
	if shift > 16 {
		return MaxDelay
	}
	return min(FirstDelay<<shift, MaxDelay)
}

// limiter counts failures per peer.
type limiter struct {
	mu    sync.Mutex
	peers map[string]*peerFailures
}

type peerFailures struct {
	n    int
	last time.Time
}

func newLimiter() *limiter { return &limiter{peers: map[string]*peerFailures{}} }

// delay is the wait of peer's next attempt at now.
func (l *limiter) delay(peer string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.peers[peer]
	if f == nil {
		return 0
	}
	if now.Sub(f.last) > FailureWindow {
		delete(l.peers, peer)
		return 0
	}
	return DelayAfter(f.n)
}

// failed records a failure of peer at now and returns its failures in a row.
func (l *limiter) failed(peer string, now time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.peers[peer]
	if f == nil {
		if len(l.peers) >= maxPeers {
			l.evict(now)
		}
		f = &peerFailures{}
		l.peers[peer] = f
	} else if now.Sub(f.last) > FailureWindow {
		f.n = 0
	}
	f.n++
	f.last = now
	return f.n
}

// succeeded forgets peer's failures.
func (l *limiter) succeeded(peer string) {
	l.mu.Lock()
	if len(l.peers) > 0 {
		delete(l.peers, peer)
	}
	l.mu.Unlock()
}

// evict drops forgotten peers, or else the one whose last failure is oldest. l.mu is held.
func (l *limiter) evict(now time.Time) {
	var oldest string
	var oldestAt time.Time
	for p, f := range l.peers {
		if now.Sub(f.last) > FailureWindow {
			delete(l.peers, p)
			continue
		}
		if oldest == "" || f.last.Before(oldestAt) {
			oldest, oldestAt = p, f.last
		}
	}
	if len(l.peers) >= maxPeers {
		delete(l.peers, oldest)
	}
}
