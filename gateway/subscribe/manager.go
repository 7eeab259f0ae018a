package subscribe

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of Options.
const (
	DefaultRetentionMs       = int64(24 * time.Hour / time.Millisecond)
	DefaultHeartbeatInterval = time.Second
	DefaultRetentionInterval = time.Minute
	// ClusterIDFile is the file under the warehouse that holds the cluster id.
	ClusterIDFile = "cluster-id"
	// ChannelsDir is the directory under the warehouse that holds one directory per channel.
	ChannelsDir = "_subscriptions"
)

// Options configures a Manager.
type Options struct {
	// WarehouseDir is the gateway's warehouse directory: channels live in WarehouseDir/_subscriptions,
	// the cluster id in WarehouseDir/cluster-id.
	WarehouseDir string
	// Sources maps a source URL scheme ("postgres", "postgresql", "mysql", "mariadb") to its factory.
	Sources map[string]SourceFactory
	Log     *slog.Logger
	// Clock returns the gateway time in ms; nil = wall clock.
	Clock func() int64
	// HeartbeatInterval: a HEARTBEAT is appended when a channel had no record for this long (1s).
	HeartbeatInterval time.Duration
	// RetentionInterval: how often retention runs over the channels (1m).
	RetentionInterval time.Duration
	// Registerer receives the channel metrics; nil = none.
	Registerer prometheus.Registerer
	// RetryMax bounds the capture retry backoff (30s).
	RetryMax time.Duration
}

// Manager owns the channels of a warehouse and their capture (SPEC section 11).
type Manager struct {
	opts      Options
	log       *slog.Logger
	dir       string
	clusterID string
	met       *channelMetrics

	mu    sync.Mutex
	chans map[string]*running

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// running is an open channel and its capture.
type running struct {
	ch     *Channel
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	up      bool
	lastErr string
	downMs  int64
}

// SourceStatus is the capture state of a channel.
type SourceStatus struct {
	Up bool
	// Error is the last capture error ("" when none since the last connect).
	Error string
	// DownSinceMs is when the source was first seen down (0 while up).
	DownSinceMs int64
}

var channelName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// Open reads (creating when missing) the cluster id, opens every channel under the warehouse and
// starts its capture, the heartbeats and the retention loop.
func Open(opts Options) (*Manager, error) {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = func() int64 { return time.Now().UnixMilli() }
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if opts.RetentionInterval <= 0 {
		opts.RetentionInterval = DefaultRetentionInterval
	}
	if opts.RetryMax <= 0 {
		opts.RetryMax = 30 * time.Second
	}
	m := &Manager{opts: opts, log: opts.Log.With("component", "subscribe"), dir: filepath.Join(opts.WarehouseDir, ChannelsDir), chans: map[string]*running{}}
	m.met = newChannelMetrics(opts.Registerer)
	var err error
	if m.clusterID, err = loadClusterID(filepath.Join(opts.WarehouseDir, ClusterIDFile)); err != nil {
		return nil, err
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	entries, err := os.ReadDir(m.dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, Errorf(Internal, "read %s: %v", m.dir, err)
	}
	for _, e := range entries {
		if !e.IsDir() || !channelName.MatchString(e.Name()) {
			continue
		}
		ch, err := openChannel(filepath.Join(m.dir, e.Name()), nil, m.log)
		if err != nil {
			m.log.Error("channel not opened", "channel", e.Name(), "err", err)
			continue
		}
		m.start(ch)
	}
	m.wg.Add(2)
	go m.heartbeatLoop()
	go m.retentionLoop()
	return m, nil
}

// loadClusterID reads the cluster id file, writing a new random id (atomically) when missing.
func loadClusterID(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			return id, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", Errorf(Internal, "read cluster id %s: %v", path, err)
	}
	id := uuid.NewString()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", Errorf(Internal, "write cluster id: %v", err)
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err == nil {
		_, err = f.WriteString(id + "\n")
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return "", Errorf(Internal, "write cluster id %s: %v", path, err)
	}
	return id, nil
}

// ClusterID returns the warehouse's stable cluster id (SPEC section 11).
func (m *Manager) ClusterID() string { return m.clusterID }

// ClusterChanged is the error of a consumer whose state names another cluster id (SPEC
// section 11): FailedPrecondition with exactly the seed's message.
func ClusterChanged(old, cur string) error {
	return Errorf(FailedPrecondition, "Cluster changed from %s to %s, consumer require restart", old, cur)
}

// sourceKind returns the URL scheme of a source URL, normalised (postgres, mysql).
func sourceKind(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", Errorf(InvalidArgument, "source URL %q: want postgres://user:password@host:port/database or mysql://user:password@host:port/database", truncate(RedactURL(raw), 200))
	}
	switch s := strings.ToLower(u.Scheme); s {
	case "postgres", "postgresql":
		return "postgres", nil
	case "mysql", "mariadb":
		return "mysql", nil
	default:
		return s, nil
	}
}

// RedactURL returns the URL with its password replaced by "xxxxx".
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

func (m *Manager) source(spec Spec) (Source, error) {
	kind, err := sourceKind(spec.SourceURL)
	if err != nil {
		return nil, err
	}
	f := m.opts.Sources[kind]
	if f == nil {
		return nil, Errorf(InvalidArgument, "source URL %s: scheme %q is not supported (postgres, mysql)", RedactURL(spec.SourceURL), kind)
	}
	return f(SourceConfig{Spec: spec, Log: m.log.With("channel", spec.Name)})
}

// Create creates channel spec.Name capturing spec.Tables from spec.SourceURL, starting at start
// ("" or "latest" = the source's current position). The source is checked first (FailedPrecondition
// saying what to set); an existing channel is AlreadyExists.
func (m *Manager) Create(ctx context.Context, spec Spec, start string) (*Channel, error) {
	if !channelName.MatchString(spec.Name) {
		return nil, Errorf(InvalidArgument, "channel name %q: want 1-128 characters of letters, digits, '_', '.', '-'", truncate(spec.Name, 200))
	}
	if len(spec.Tables) == 0 {
		return nil, Errorf(InvalidArgument, "channel %s: no tables to capture (tables: db.table, comma separated)", spec.Name)
	}
	for _, t := range spec.Tables {
		if db, tb, ok := strings.Cut(t, "."); !ok || db == "" || tb == "" {
			return nil, Errorf(InvalidArgument, "channel %s: table %q: want db.table (schema.table for PostgreSQL)", spec.Name, truncate(t, 200))
		}
	}
	if spec.RetentionMs <= 0 {
		spec.RetentionMs = DefaultRetentionMs
	}
	spec.CreatedMs = m.opts.Clock()
	m.mu.Lock()
	if _, ok := m.chans[spec.Name]; ok {
		m.mu.Unlock()
		return nil, Errorf(AlreadyExists, "channel %s already exists", spec.Name)
	}
	m.chans[spec.Name] = nil // reserved while it is created
	m.mu.Unlock()
	ch, err := m.create(ctx, spec, start)
	m.mu.Lock()
	delete(m.chans, spec.Name)
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	m.start(ch)
	m.log.Info("channel created", "channel", spec.Name, "source", RedactURL(spec.SourceURL), "tables", spec.Tables, "position", ch.Position())
	return ch, nil
}

func (m *Manager) create(ctx context.Context, spec Spec, start string) (*Channel, error) {
	src, err := m.source(spec)
	if err != nil {
		return nil, err
	}
	if err := src.Check(ctx); err != nil {
		return nil, err
	}
	if start == "latest" {
		start = ""
	}
	p, err := src.Prepare(ctx, start)
	if err != nil {
		return nil, err
	}
	spec.Slot, spec.Publication = p.Slot, p.Publication
	spec.CreatedSlot, spec.CreatedPublication = p.CreatedSlot, p.CreatedPublication
	dir := filepath.Join(m.dir, spec.Name)
	undo := func() {
		_ = os.RemoveAll(dir)
		if err := src.Drop(context.Background()); err != nil {
			m.log.Warn("drop source objects of a channel not created", "channel", spec.Name, "err", err)
		}
	}
	if _, err := os.Stat(dir); err == nil {
		_ = os.RemoveAll(dir) // left by a crash during create or drop
	}
	if err := os.MkdirAll(m.dir, 0o755); err != nil {
		undo()
		return nil, Errorf(Internal, "create %s: %v", m.dir, err)
	}
	ch, err := openChannel(dir, &spec, m.log)
	if err != nil {
		undo()
		return nil, err
	}
	if err := ch.Append(nil, p.Position, m.opts.Clock()); err != nil {
		_ = ch.close()
		undo()
		return nil, err
	}
	return ch, nil
}

// start runs the capture of ch in the background.
func (m *Manager) start(ch *Channel) {
	ctx, cancel := context.WithCancel(m.ctx)
	r := &running{ch: ch, cancel: cancel, done: make(chan struct{})}
	m.mu.Lock()
	m.chans[ch.Name()] = r
	m.mu.Unlock()
	m.met.sourceUp.WithLabelValues(ch.Name()).Set(0)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer close(r.done)
		m.capture(ctx, r)
	}()
}

// sink is the Sink of one running channel.
type sink struct {
	m *Manager
	r *running
}

func (s sink) Commit(recs []Record, pos string) error {
	recv := s.m.opts.Clock()
	began := time.Now()
	if err := s.r.ch.Append(recs, pos, recv); err != nil {
		return err
	}
	took := time.Since(began)
	name := s.r.ch.Name()
	for i := range recs {
		s.m.met.records.WithLabelValues(name, recs[i].Op.String()).Inc()
	}
	if len(recs) > 0 && recs[len(recs)-1].Op == OpCommit {
		commitMs := recs[len(recs)-1].TimestampMs
		s.m.met.receiveLag.WithLabelValues(name).Observe(float64(recv-commitMs) / 1000)
		s.m.met.appendSeconds.WithLabelValues(name).Observe(took.Seconds())
		s.m.met.captureLag.WithLabelValues(name).Observe(float64(recv+took.Milliseconds()-commitMs) / 1000)
	}
	first, next := s.r.ch.Bounds()
	s.m.met.nextID.WithLabelValues(name).Set(float64(next))
	s.m.met.firstID.WithLabelValues(name).Set(float64(first))
	return nil
}

func (s sink) Connected() {
	s.r.mu.Lock()
	s.r.up, s.r.lastErr, s.r.downMs = true, "", 0
	s.r.mu.Unlock()
	s.m.met.sourceUp.WithLabelValues(s.r.ch.Name()).Set(1)
}

// capture runs the channel's source until ctx ends, reconnecting with a backoff (500 ms doubling
// up to RetryMax) after each failure; each run resumes from the channel's durable position.
func (m *Manager) capture(ctx context.Context, r *running) {
	name := r.ch.Name()
	backoff := 500 * time.Millisecond
	for ctx.Err() == nil {
		began := time.Now()
		src, err := m.source(r.ch.Spec())
		if err == nil {
			err = src.Run(ctx, r.ch.Position(), sink{m, r})
		}
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("source stream ended")
		}
		r.mu.Lock()
		r.up, r.lastErr = false, err.Error()
		if r.downMs == 0 {
			r.downMs = m.opts.Clock()
		}
		r.mu.Unlock()
		m.met.sourceUp.WithLabelValues(name).Set(0)
		m.met.sourceErrors.WithLabelValues(name).Inc()
		if time.Since(began) > m.opts.RetryMax {
			backoff = 500 * time.Millisecond
		}
		m.log.Warn("channel source down; retrying", "channel", name, "err", err, "retry_in", backoff.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, m.opts.RetryMax)
	}
}

// Get returns the open channel name, NotFound when there is none.
func (m *Manager) Get(name string) (*Channel, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.chans[name]
	if r == nil {
		return nil, Errorf(NotFound, "channel %s does not exist", truncate(name, 200))
	}
	return r.ch, nil
}

// Status returns the capture state of channel name.
func (m *Manager) Status(name string) SourceStatus {
	m.mu.Lock()
	r := m.chans[name]
	m.mu.Unlock()
	if r == nil {
		return SourceStatus{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return SourceStatus{Up: r.up, Error: r.lastErr, DownSinceMs: r.downMs}
}

// List returns the open channels sorted by name.
func (m *Manager) List() []*Channel {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*Channel
	for _, r := range m.chans {
		if r != nil {
			out = append(out, r.ch)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// Outages returns, per channel whose source is down, the last error (for /readyz).
func (m *Manager) Outages() map[string]string {
	out := map[string]string{}
	for _, ch := range m.List() {
		if st := m.Status(ch.Name()); !st.Up {
			msg := st.Error
			if msg == "" {
				msg = "connecting"
			}
			out[ch.Name()] = msg
		}
	}
	return out
}

// Drop stops the channel's capture, drops the slot and publication the gateway created and
// removes the channel's records and groups. A missing channel is NotFound unless ignoreIfNotExists.
func (m *Manager) Drop(ctx context.Context, name string, ignoreIfNotExists bool) error {
	m.mu.Lock()
	r := m.chans[name]
	if r == nil {
		m.mu.Unlock()
		if ignoreIfNotExists {
			return nil
		}
		return Errorf(NotFound, "channel %s does not exist", truncate(name, 200))
	}
	delete(m.chans, name)
	m.mu.Unlock()
	r.cancel()
	<-r.done
	spec := r.ch.Spec()
	_ = r.ch.close()
	if src, err := m.source(spec); err == nil {
		if err := src.Drop(ctx); err != nil {
			m.log.Warn("drop source objects of channel", "channel", name, "err", err)
		}
	}
	if err := os.RemoveAll(filepath.Join(m.dir, name)); err != nil {
		return Errorf(Internal, "remove channel %s: %v", name, err)
	}
	m.met.forget(name)
	m.log.Info("channel dropped", "channel", name)
	return nil
}

// heartbeatLoop appends a HEARTBEAT to every channel that had no record for HeartbeatInterval.
func (m *Manager) heartbeatLoop() {
	defer m.wg.Done()
	tick := time.NewTicker(m.opts.HeartbeatInterval / 4)
	defer tick.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-tick.C:
		}
		now := m.opts.Clock()
		for _, ch := range m.List() {
			if now-ch.lastAppendMs() < m.opts.HeartbeatInterval.Milliseconds() {
				continue
			}
			if err := ch.AppendHeartbeat(now); err != nil {
				m.log.Warn("heartbeat not appended", "channel", ch.Name(), "err", err)
				continue
			}
			m.met.records.WithLabelValues(ch.Name(), OpHeartbeat.String()).Inc()
		}
	}
}

// RunRetention applies every channel's retention as of the gateway clock; returns records removed.
func (m *Manager) RunRetention() int64 {
	var total int64
	now := m.opts.Clock()
	for _, ch := range m.List() {
		n, err := ch.ApplyRetention(now)
		if err != nil {
			m.log.Warn("channel retention failed", "channel", ch.Name(), "err", err)
		}
		total += n
		first, _ := ch.Bounds()
		m.met.firstID.WithLabelValues(ch.Name()).Set(float64(first))
	}
	return total
}

func (m *Manager) retentionLoop() {
	defer m.wg.Done()
	tick := time.NewTicker(m.opts.RetentionInterval)
	defer tick.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-tick.C:
			m.RunRetention()
		}
	}
}

// Close stops every capture and closes the channels. Safe to call twice.
func (m *Manager) Close() {
	m.cancel()
	m.wg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.chans {
		if r != nil {
			_ = r.ch.close()
		}
	}
}

// channelMetrics are the Prometheus series of the channels.
type channelMetrics struct {
	records      *prometheus.CounterVec
	sourceUp     *prometheus.GaugeVec
	sourceErrors *prometheus.CounterVec
	nextID       *prometheus.GaugeVec
	firstID      *prometheus.GaugeVec
	captureLag   *prometheus.HistogramVec
	// receiveLag: source commit -> the capture received the transaction's COMMIT; appendSeconds:
	// the synced append of a transaction. captureLag is about their sum.
	receiveLag    *prometheus.HistogramVec
	appendSeconds *prometheus.HistogramVec
}

func newChannelMetrics(reg prometheus.Registerer) *channelMetrics {
	m := &channelMetrics{
		records: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "setats_channel_records_total",
			Help: "Records appended to subscription channels, per channel and operation."}, []string{"channel", "operation"}),
		sourceUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "setats_channel_source_up",
			Help: "1 while the channel's source database is connected and streaming, 0 during an outage."}, []string{"channel"}),
		sourceErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "setats_channel_source_errors_total",
			Help: "Capture failures (source down, connection lost), per channel."}, []string{"channel"}),
		nextID: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "setats_channel_next_id",
			Help: "Id the next record of the channel gets."}, []string{"channel"}),
		firstID: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "setats_channel_first_id",
			Help: "Oldest retained record id of the channel."}, []string{"channel"}),
		captureLag: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "setats_channel_capture_lag_seconds",
			Help:    "Time from a transaction's source commit to its records being durable in the channel, in seconds.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}, []string{"channel"}),
		receiveLag: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "setats_channel_receive_lag_seconds",
			Help:    "Time from a transaction's source commit to the capture receiving its COMMIT, in seconds (source and gateway clocks).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}, []string{"channel"}),
		appendSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "setats_channel_append_seconds",
			Help:    "Duration of the durable (synced) append of one captured transaction to its channel, in seconds.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18)}, []string{"channel"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.records, m.sourceUp, m.sourceErrors, m.nextID, m.firstID, m.captureLag, m.receiveLag, m.appendSeconds} {
			reg.MustRegister(c)
		}
	}
	return m
}

func (m *channelMetrics) forget(name string) {
	l := prometheus.Labels{"channel": name}
	m.records.DeletePartialMatch(l)
	m.sourceUp.DeletePartialMatch(l)
	m.sourceErrors.DeletePartialMatch(l)
	m.nextID.DeletePartialMatch(l)
	m.firstID.DeletePartialMatch(l)
	m.captureLag.DeletePartialMatch(l)
	m.receiveLag.DeletePartialMatch(l)
	m.appendSeconds.DeletePartialMatch(l)
}

// String describes a status for logs.
func (s SourceStatus) String() string {
	if s.Up {
		return "up"
	}
	return fmt.Sprintf("down since %d: %s", s.DownSinceMs, s.Error)
}
