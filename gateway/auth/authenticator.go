package auth

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"
)

// Defaults of Config.
const (
	// DefaultTokenTTL is how long a handshake's bearer token stays valid (--token-ttl).
	DefaultTokenTTL = time.Hour
	// DefaultReloadInterval is how often the users file is checked for changes.
	DefaultReloadInterval = 2 * time.Second
	// MaxTokens bounds the bearer tokens held at once; issuing one more evicts the one that
	// expires first.
	MaxTokens = 1 << 16
	// maxVerified bounds the cache of verified Basic credentials.
	maxVerified = 1024
	// MaxHeaderBytes bounds an `authorization` header value; a longer one is refused unread.
	MaxHeaderBytes = 4096
)

// Config configures an Authenticator.
type Config struct {
	// UsersFile is the path of the users file (YAML, doc.go). Required.
	UsersFile string
	// TokenTTL is the lifetime of bearer tokens issued by IssueToken. <= 0 is DefaultTokenTTL.
	TokenTTL time.Duration
	// ReloadInterval is how often Start's watcher re-reads the users file and applies it when its
	// content changed. 0 is DefaultReloadInterval; < 0 turns the watcher off (SIGHUP still works).
	ReloadInterval time.Duration
	// Logger receives failed logins (never a password) and reloads. Nil discards.
	Logger *slog.Logger
	// Registerer receives the setats_auth_* metrics. Nil registers nothing.
	Registerer prometheus.Registerer
	// Now is the clock of token expiry and of the per-peer slow-down. Nil is time.Now.
	Now func() time.Time
	// Sleep waits d or until ctx ends (the slow-down of failing peers). Nil sleeps for real.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Method is how a Principal authenticated.
type Method string

const (
	// MethodNone: no credentials (anonymous).
	MethodNone Method = ""
	// MethodBasic: HTTP Basic credentials on the call.
	MethodBasic Method = "basic"
	// MethodBearer: a bearer token from a Flight handshake.
	MethodBearer Method = "bearer"
)

// Principal is who makes a call. The zero value is the anonymous caller.
type Principal struct {
	// User is the user name; "" is anonymous.
	User string
	// Method is how the user authenticated.
	Method Method
}

// Anonymous reports whether p carries no user.
func (p Principal) Anonymous() bool { return p.User == "" }

type principalKey struct{}

// WithPrincipal returns ctx carrying p (the gateway's interceptor calls it).
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the Principal of ctx; anonymous when there is none.
func PrincipalFrom(ctx context.Context) Principal {
	p, _ := ctx.Value(principalKey{}).(Principal)
	return p
}

// Authenticator checks credentials against a users file, issues bearer tokens and answers
// authorization questions. A nil *Authenticator allows everything (no users file). It is safe for
// concurrent use.
type Authenticator struct {
	cfg   Config
	log   *slog.Logger
	state atomic.Pointer[state]

	reloadMu sync.Mutex // serialises Reload
	fileSum  [32]byte   // sha256 of the file content last applied or last refused

	mu       sync.Mutex
	tokens   map[string]token
	verified map[[32]byte][]byte // HMAC(user, password) -> hash it was verified against
	macKey   []byte

	limiter *limiter
	m       authMetrics

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// state is one applied users file; changed is closed when a newer one replaces it.
type state struct {
	users   *Users
	changed chan struct{}
}

type token struct {
	user    string
	hash    []byte // the user's password hash when issued: a password change revokes the token
	expires time.Time
}

type authMetrics struct {
	failures *prometheus.CounterVec // reason
	slowed   prometheus.Counter
	reloads  *prometheus.CounterVec // result
	tokens   prometheus.Counter
}

// Failure reasons of setats_auth_failures_total.
const (
	reasonWrongPassword = "wrong_password"
	reasonUnknownToken  = "unknown_token"
	reasonExpiredToken  = "expired_token"
	reasonRevokedToken  = "revoked_token"
	reasonMalformed     = "malformed"
)

// New loads cfg.UsersFile and returns an Authenticator (its file watcher not yet started: see
// Start). Errors name the file and the entry at fault.
func New(cfg Config) (*Authenticator, error) {
	if cfg.UsersFile == "" {
		return nil, fmt.Errorf("auth: no users file")
	}
	if cfg.TokenTTL <= 0 {
		cfg.TokenTTL = DefaultTokenTTL
	}
	if cfg.ReloadInterval == 0 {
		cfg.ReloadInterval = DefaultReloadInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleepCtx
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	a := &Authenticator{
		cfg:      cfg,
		log:      log,
		tokens:   map[string]token{},
		verified: map[[32]byte][]byte{},
		macKey:   randomBytes(32),
		limiter:  newLimiter(),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	a.m = authMetrics{
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "setats_auth_failures_total",
			Help: "Refused authentications, per reason (wrong_password, unknown_token, expired_token, revoked_token, malformed).",
		}, []string{"reason"}),
		slowed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "setats_auth_slowed_total",
			Help: "Authentications delayed because their peer failed repeatedly.",
		}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "setats_auth_reloads_total",
			Help: "Users file reloads, per result (ok, error; an error keeps the previous file).",
		}, []string{"result"}),
		tokens: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "setats_auth_tokens_issued_total",
			Help: "Bearer tokens issued by Flight handshakes.",
		}),
	}
	if r := cfg.Registerer; r != nil {
		for _, c := range []prometheus.Collector{a.m.failures, a.m.slowed, a.m.reloads, a.m.tokens} {
			if err := r.Register(c); err != nil {
				return nil, fmt.Errorf("auth metrics: %w", err)
			}
		}
	}
	b, err := readUsersFile(cfg.UsersFile)
	if err != nil {
		return nil, err
	}
	us, err := ParseUsers(b)
	if err != nil {
		return nil, fmt.Errorf("--users-file %s: %w", cfg.UsersFile, err)
	}
	a.fileSum = sha256.Sum256(b)
	a.state.Store(&state{users: us, changed: make(chan struct{})})
	return a, nil
}

func readUsersFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--users-file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxUsersFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("--users-file %s: %w", path, err)
	}
	if len(b) > MaxUsersFileBytes {
		return nil, fmt.Errorf("--users-file %s: larger than %d bytes", path, MaxUsersFileBytes)
	}
	return b, nil
}

// Start runs the watcher that re-reads the users file every Config.ReloadInterval and applies
// it when its content changed and then stayed the same for one more interval (so that a file
// caught half written by an editor is not applied); a bad file is logged, counted and ignored:
// the previous one stays. Stop it with Close.
func (a *Authenticator) Start() {
	if a == nil {
		return
	}
	if a.cfg.ReloadInterval < 0 {
		close(a.done)
		return
	}
	go func() {
		defer close(a.done)
		t := time.NewTicker(a.cfg.ReloadInterval)
		defer t.Stop()
		var last [32]byte // content seen at the previous tick
		for {
			select {
			case <-a.stop:
				return
			case <-t.C:
				b, err := readUsersFile(a.cfg.UsersFile)
				if err != nil {
					continue // reported by reload once the error persists
				}
				sum := sha256.Sum256(b)
				stable := sum == last
				last = sum
				if stable {
					_, _ = a.reload(false)
				}
			}
		}
	}()
}

// Close stops the watcher of Start. Safe to call twice, and without Start.
func (a *Authenticator) Close() {
	if a == nil {
		return
	}
	a.stopOnce.Do(func() { close(a.stop) })
}

// Reload re-reads the users file (SIGHUP) and applies it. A bad file is an error and changes
// nothing. Streams of users who keep their grants go on; Changed's channel is closed so that
// long-lived streams check their grant again.
func (a *Authenticator) Reload() error {
	if a == nil {
		return nil
	}
	_, err := a.reload(true)
	return err
}

// reload applies the users file when its content differs from the last one seen (or always
// with force). It reports whether a new file was applied.
func (a *Authenticator) reload(force bool) (bool, error) {
	a.reloadMu.Lock()
	defer a.reloadMu.Unlock()
	b, err := readUsersFile(a.cfg.UsersFile)
	if err != nil {
		a.m.reloads.WithLabelValues("error").Inc()
		a.log.Error("users file reload failed; the previous users stay in force", "err", err)
		return false, err
	}
	sum := sha256.Sum256(b)
	if !force && sum == a.fileSum {
		return false, nil
	}
	a.fileSum = sum
	us, err := ParseUsers(b)
	if err != nil {
		err = fmt.Errorf("--users-file %s: %w", a.cfg.UsersFile, err)
		a.m.reloads.WithLabelValues("error").Inc()
		a.log.Error("users file reload failed; the previous users stay in force", "err", err)
		return false, err
	}
	old := a.state.Swap(&state{users: us, changed: make(chan struct{})})
	close(old.changed)
	// Tokens of removed users are refused (and dropped) when next used, naming their user.
	a.mu.Lock()
	clear(a.verified)
	a.mu.Unlock()
	a.m.reloads.WithLabelValues("ok").Inc()
	a.log.Info("users file reloaded", "file", a.cfg.UsersFile, "users", len(us.names))
	return true, nil
}

// Changed returns a channel that is closed when the users file is next applied (Reload or the
// watcher). Long-lived streams select on it and call Authorize again. A nil Authenticator
// returns nil (never closed).
func (a *Authenticator) Changed() <-chan struct{} {
	if a == nil {
		return nil
	}
	return a.state.Load().changed
}

// Users returns the users in force.
func (a *Authenticator) Users() *Users {
	if a == nil {
		return nil
	}
	return a.state.Load().users
}

// Authenticate resolves the Principal of a call from its `authorization` header value (empty:
// none) and its peer (host of the remote address; the slow-down of failing peers is per peer).
// No header is the anonymous Principal and no error: refusing anonymous callers is Authorize's
// job. "Basic base64(user:password)" (padded or not) is checked against the users file (bcrypt;
// a success is cached, keyed by an HMAC of the credentials, until the file changes), "Bearer
// token" against the tokens of IssueToken. Wrong credentials are a KindUnauthenticated *Error,
// counted and logged without the password; after repeated failures a peer waits before each
// check (Sleep; a cancelled ctx returns ctx.Err()).
func (a *Authenticator) Authenticate(ctx context.Context, header, peer string) (Principal, error) {
	if a == nil || header == "" {
		return Principal{}, nil
	}
	if len(header) > MaxHeaderBytes {
		return Principal{}, a.refuse(peer, "", reasonMalformed, "sent an authorization header over %d bytes", MaxHeaderBytes)
	}
	scheme, cred, _ := strings.Cut(strings.TrimSpace(header), " ")
	cred = strings.TrimSpace(cred)
	if d := a.limiter.delay(peer, a.cfg.Now()); d > 0 {
		a.m.slowed.Inc()
		if err := a.cfg.Sleep(ctx, d); err != nil {
			return Principal{}, err
		}
	}
	switch {
	case strings.EqualFold(scheme, "Basic"):
		raw, err := base64.StdEncoding.DecodeString(cred)
		if err != nil {
			raw, err = base64.RawStdEncoding.DecodeString(cred)
		}
		if err != nil {
			return Principal{}, a.refuse(peer, "", reasonMalformed, "sent Basic credentials that are not base64")
		}
		user, password, ok := strings.Cut(string(raw), ":")
		if !ok || user == "" {
			return Principal{}, a.refuse(peer, "", reasonMalformed, "sent Basic credentials without user:password")
		}
		return a.login(peer, user, password)
	case strings.EqualFold(scheme, "Bearer"):
		return a.bearer(peer, cred)
	}
	return Principal{}, a.refuse(peer, "", reasonMalformed, "sent an authorization header of unknown scheme %.20q (want Basic or Bearer)", scheme)
}

// login checks user and password.
func (a *Authenticator) login(peer, user, password string) (Principal, error) {
	u := a.state.Load().users.Lookup(user)
	ok := false
	if u != nil {
		key := a.mac(user, password)
		a.mu.Lock()
		h, cached := a.verified[key]
		a.mu.Unlock()
		if cached && bytes.Equal(h, u.Hash) {
			ok = true
		} else if bcrypt.CompareHashAndPassword(u.Hash, []byte(password)) == nil {
			ok = true
			a.mu.Lock()
			if len(a.verified) >= maxVerified {
				clear(a.verified)
			}
			a.verified[key] = u.Hash
			a.mu.Unlock()
		}
	} else {
		// The same work as for a known user, so that timing does not tell which names exist.
		_ = bcrypt.CompareHashAndPassword(dummyHash(), []byte(password))
	}
	if !ok {
		return Principal{}, a.refuse(peer, user, reasonWrongPassword, "is unknown or gave a wrong password")
	}
	a.limiter.succeeded(peer)
	return Principal{User: user, Method: MethodBasic}, nil
}

// bearer checks a bearer token.
func (a *Authenticator) bearer(peer, tok string) (Principal, error) {
	a.mu.Lock()
	t, ok := a.tokens[tok]
	a.mu.Unlock()
	if !ok {
		return Principal{}, a.refuse(peer, "", reasonUnknownToken,
			"sent a bearer token this gateway does not know (never issued, or the gateway restarted): authenticate again with a Flight handshake")
	}
	now := a.cfg.Now()
	if !now.Before(t.expires) {
		a.dropToken(tok)
		return Principal{}, a.refuse(peer, t.user, reasonExpiredToken,
			"sent a bearer token that expired at %s: authenticate again with a Flight handshake", t.expires.UTC().Format(time.RFC3339))
	}
	if u := a.state.Load().users.Lookup(t.user); u == nil || !bytes.Equal(u.Hash, t.hash) {
		a.dropToken(tok)
		return Principal{}, a.refuse(peer, t.user, reasonRevokedToken,
			"sent a bearer token revoked by a users file change (user removed or password changed)")
	}
	a.limiter.succeeded(peer)
	return Principal{User: t.user, Method: MethodBearer}, nil
}

func (a *Authenticator) dropToken(tok string) {
	a.mu.Lock()
	delete(a.tokens, tok)
	a.mu.Unlock()
}

// refuse counts and logs a failed authentication and returns its error.
func (a *Authenticator) refuse(peer, user, reason, format string, args ...any) error {
	a.m.failures.WithLabelValues(reason).Inc()
	n := a.limiter.failed(peer, a.cfg.Now())
	a.log.Warn("authentication failed", "user", user, "peer", peer, "reason", reason, "peer_failures", n)
	return &Error{Kind: KindUnauthenticated, User: user, msg: fmt.Sprintf(format, args...)}
}

// IssueToken returns a new bearer token for the authenticated user of ctx and when it expires
// (Config.TokenTTL from now). The token is refused after it expires, after the gateway restarts,
// and once a users file change removes the user or changes their password. Anonymous ctx:
// KindUnauthenticated.
func (a *Authenticator) IssueToken(ctx context.Context) (string, time.Time, error) {
	p := PrincipalFrom(ctx)
	if p.Anonymous() {
		return "", time.Time{}, &Error{Kind: KindUnauthenticated, Call: "Handshake",
			msg: "gave no credentials: send HTTP Basic credentials of a user of the users file to get a bearer token"}
	}
	u := a.state.Load().users.Lookup(p.User)
	if u == nil {
		return "", time.Time{}, &Error{Kind: KindPermissionDenied, User: p.User, Call: "Handshake", msg: "is no longer in the users file"}
	}
	tok := base64.RawURLEncoding.EncodeToString(randomBytes(32))
	now := a.cfg.Now()
	exp := now.Add(a.cfg.TokenTTL)
	a.mu.Lock()
	if len(a.tokens) >= MaxTokens {
		a.evictTokens(now)
	}
	a.tokens[tok] = token{user: u.Name, hash: u.Hash, expires: exp}
	a.mu.Unlock()
	a.m.tokens.Inc()
	return tok, exp, nil
}

// evictTokens drops expired tokens, or else the one expiring first. a.mu is held.
func (a *Authenticator) evictTokens(now time.Time) {
	var first string
	var firstExp time.Time
	for k, t := range a.tokens {
		if !now.Before(t.expires) {
			delete(a.tokens, k)
			continue
		}
		if first == "" || t.expires.Before(firstExp) {
			first, firstExp = k, t.expires
		}
	}
	if len(a.tokens) >= MaxTokens {
		delete(a.tokens, first)
	}
}

// Authorize checks that the caller of ctx holds privilege p on database db, table table (table
// Any: on the whole database, as creating or dropping a database needs; db Any: on every
// database). call names the Flight call or action in the error. A nil Authenticator allows
// everything. Errors: KindUnauthenticated for an anonymous caller, KindPermissionDenied for a
// user without the grant or no longer in the users file; both name the user, the call, the
// privilege and the table or database.
func (a *Authenticator) Authorize(ctx context.Context, call string, p Privilege, db, table string) error {
	if a == nil {
		return nil
	}
	u, err := a.user(ctx, call)
	if err != nil {
		return err
	}
	if !u.Allows(p, db, table) {
		return &Error{Kind: KindPermissionDenied, User: u.Name, Call: call,
			msg: fmt.Sprintf("has no %s privilege on %s", p, describe(db, table))}
	}
	return nil
}

// AuthorizeChannel checks that the caller of ctx holds privilege p on the subscription channel
// ch (SPEC sections 11 and 14): `admin` to create or drop it or to create its consumer groups,
// `read` to describe it and, besides the consumer group's own credentials, to read it. A nil
// Authenticator allows everything. Errors as Authorize's, naming the channel.
func (a *Authenticator) AuthorizeChannel(ctx context.Context, call string, p Privilege, ch string) error {
	if a == nil {
		return nil
	}
	u, err := a.user(ctx, call)
	if err != nil {
		return err
	}
	if !u.AllowsChannel(p, ch) {
		return &Error{Kind: KindPermissionDenied, User: u.Name, Call: call,
			msg: fmt.Sprintf("has no %s privilege on channel %s", p, ch)}
	}
	return nil
}

// SeesChannel reports whether the caller of ctx may read the channel ch (subscription-list
// shows only those). Always true for a nil Authenticator.
func (a *Authenticator) SeesChannel(ctx context.Context, ch string) bool {
	return a.AuthorizeChannel(ctx, "", Read, ch) == nil
}

// Authenticated checks that ctx carries a user who is in the users file (calls that any user may
// make, such as gateway-info, and listings that then show only what the user may see).
func (a *Authenticator) Authenticated(ctx context.Context, call string) error {
	if a == nil {
		return nil
	}
	_, err := a.user(ctx, call)
	return err
}

// user returns the users-file entry of the caller of ctx.
func (a *Authenticator) user(ctx context.Context, call string) (*User, error) {
	pr := PrincipalFrom(ctx)
	if pr.Anonymous() {
		return nil, &Error{Kind: KindUnauthenticated, Call: call,
			msg: "is refused: authenticate as a user of the users file (HTTP Basic credentials, or the bearer token of a Flight handshake)"}
	}
	u := a.state.Load().users.Lookup(pr.User)
	if u == nil {
		return nil, &Error{Kind: KindPermissionDenied, User: pr.User, Call: call, msg: "is no longer in the users file"}
	}
	return u, nil
}

// SeesTable reports whether the caller of ctx may read db.table (listings show only those).
// Always true for a nil Authenticator.
func (a *Authenticator) SeesTable(ctx context.Context, db, table string) bool {
	return a.Authorize(ctx, "", Read, db, table) == nil
}

// SeesDatabase reports whether the caller of ctx holds any grant naming database db (listings).
// Always true for a nil Authenticator.
func (a *Authenticator) SeesDatabase(ctx context.Context, db string) bool {
	if a == nil {
		return true
	}
	u, err := a.user(ctx, "")
	return err == nil && u.SeesDatabase(db)
}

// mac keys the cache of verified credentials.
func (a *Authenticator) mac(user, password string) [32]byte {
	h := hmac.New(sha256.New, a.macKey)
	h.Write([]byte(user))
	h.Write([]byte{0})
	h.Write([]byte(password))
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

var (
	dummyOnce sync.Once
	dummy     []byte
)

// dummyHash is a bcrypt hash at DefaultCost of a random password, compared against when the
// user does not exist.
func dummyHash() []byte {
	dummyOnce.Do(func() {
		dummy, _ = bcrypt.GenerateFromPassword([]byte(base64.RawStdEncoding.EncodeToString(randomBytes(16))), DefaultCost)
	})
	return dummy
}

// randomBytes returns n bytes from crypto/rand.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return b
}

// RandomSecret returns n random bytes from crypto/rand, base64url without padding (generated
// credentials such as the embedded NATS server's).
func RandomSecret(n int) string { return base64.RawURLEncoding.EncodeToString(randomBytes(n)) }

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
