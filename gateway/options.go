package gateway

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/setats/setats/catalog"
)

// Defaults of Options, filled in by Options.SetDefaults (SPEC section 1: everything works with
// defaults, no flag is needed for a first run).
const (
	// DefaultFlightAddr and DefaultAdminAddr are loopback: other hosts reach the gateway only
	// once it is told so, with --users-file or --allow-anonymous (SPEC section 14).
	DefaultFlightAddr         = "127.0.0.1:8815"
	DefaultAdminAddr          = "127.0.0.1:8816"
	DefaultWarehouse          = "./warehouse"
	DefaultBucketCount        = int32(4)
	DefaultChangelogRetention = 24 * time.Hour
	DefaultRetentionInterval  = time.Minute
	DefaultNATSListen         = "127.0.0.1:4222"
	DefaultMaxMessageBytes    = 64 << 20
	DefaultBlockCacheBytes    = int64(192 << 20)
	// DefaultStagingBudgetBytes bounds the exactly-once rows staged and not yet committed, over
	// all tables (SPEC section 10): 1 GiB.
	DefaultStagingBudgetBytes = int64(1 << 30)
	DefaultLogLevel           = "info"
	DefaultLogFormat          = "text"
	DefaultShutdownTimeout    = 10 * time.Second
	// DefaultSnapshotLease is how long a snapshot view lives without a read (--snapshot-lease).
	DefaultSnapshotLease = 10 * time.Minute
	// DefaultMaxBatchRows is the rows per DoGet record batch when a ChangelogTicket leaves
	// max_batch_rows at 0 (proto ChangelogTicket.max_batch_rows).
	DefaultMaxBatchRows = 4096
	// MaxBatchRows caps max_batch_rows: DoGet reads at most this many rows of the store at a
	// time (memory), so no record batch holds more.
	MaxBatchRows = 1 << 16
	// MaxBatchBytes is about the most row data (bytes, Arrow buffers) a DoGet record batch holds,
	// whatever max_batch_rows says (at most half of MaxMessageBytes); a larger row goes alone. It
	// keeps batches of large rows within gRPC's default 4 MiB receive limit of clients.
	MaxBatchBytes = 1 << 20
	// EnvPrefix prefixes the environment variable of every flag: --flight-addr is read from
	// SETATS_FLIGHT_ADDR when the flag is not given on the command line.
	EnvPrefix = "SETATS_"
)

// Options configures a gateway. It is a plain struct: the `setats serve` flags bind to its fields
// (RegisterFlags), environment variables fill fields whose flag was not given (ApplyEnv), and
// SetDefaults fills every zero field with its default. Tests build one directly.
type Options struct {
	// FlightAddr is the host:port the Arrow Flight gRPC server listens on. Port 0 binds any free
	// port; Server.FlightAddr reports the bound address. Default "127.0.0.1:8815"; a host beyond
	// loopback needs UsersFile or AllowAnonymous.
	FlightAddr string
	// AdminAddr is the host:port of the admin HTTP server (/healthz, /readyz, /metrics). Port 0
	// binds any free port; Server.AdminAddr reports it. Default "127.0.0.1:8816"; a host beyond
	// loopback needs UsersFile or AllowAnonymous.
	AdminAddr string
	// Warehouse is the root of catalog metadata and table data: a plain path (relative paths are
	// resolved against the working directory) or "file:///abs/path". Default "./warehouse".
	Warehouse string
	// DefaultBucketCount is the bucket count of tables created with bucket_count <= 0. Default 4.
	DefaultBucketCount int32
	// ChangelogRetention is how long changelog rows are kept unless a table sets
	// changelog.retention.ms (SPEC section 4). Default 24h.
	ChangelogRetention time.Duration
	// RetentionInterval is how often retention runs over every table. Default 1m.
	RetentionInterval time.Duration
	// NATSURL, when set, is the URL of an external NATS server to publish notifications to
	// (nats://host:port, comma separated for several). Empty starts an embedded NATS server.
	NATSURL string
	// NATSListen is the host:port of the embedded NATS server (NATSURL empty). Port 0 or -1 binds
	// any free port; Server.NATSURL reports it. Default "127.0.0.1:4222".
	NATSListen string
	// MaxMessageBytes is the largest gRPC message the Flight server accepts, in bytes; a larger
	// record batch fails its DoPut with ResourceExhausted. Default 64 MiB.
	MaxMessageBytes int
	// BlockCacheBytes is the size in bytes of the Pebble block cache shared by the tables'
	// stores. Pebble charges each store's memtables against it (up to 2 x 32 MiB per table being
	// written; store.DefaultCacheBytes), the rest holds blocks. Default 192 MiB.
	BlockCacheBytes int64
	// StagingBudgetBytes bounds the bytes of exactly-once rows staged and not yet committed,
	// over all tables (SPEC section 10): while the staged bytes are at or above it, staging
	// DoPut batches wait (back pressure) until commits, aborts or expiry free some. Default 1 GiB.
	StagingBudgetBytes int64
	// LogLevel is debug, info, warn or error. Default info. Ignored when Logger is set.
	LogLevel string
	// LogFormat is text or json. Default text. Ignored when Logger is set.
	LogFormat string
	// ReadyFile, when set, is a path where Start writes, atomically, once every listener serves,
	// the JSON object {"flight_addr","admin_addr","nats_url","warehouse"} (see ReadyInfo).
	ReadyFile string
	// ShutdownTimeout bounds how long Shutdown waits for in-flight calls (writes) to finish before
	// it cuts the remaining ones. Idle DoPut streams end at once. Default 10s.
	ShutdownTimeout time.Duration
	// SnapshotLease is how long a snapshot view (SPEC section 13: pinned by GetFlightInfo or
	// opened by a snapshot DoGet) lives without a read before the retention pass releases it
	// (checked every RetentionInterval). Default 10m.
	SnapshotLease time.Duration
	// StoreFS is the filesystem the table stores use; nil is the operating system's. Tests inject
	// fault-injecting ones (Pebble's vfs/errorfs). Not a flag.
	StoreFS vfs.FS

	// Security: users, tokens, TLS and NATS credentials (options_security.go, SPEC section 14).
	Security
	// Limits: open tables, in-flight DoPut bytes, key index memory (options_limits.go).
	Limits

	// Logger receives the gateway's logs. Nil builds one from LogLevel and LogFormat on stderr.
	// Not a flag.
	Logger *slog.Logger
	// Clock returns the current time in ms since the epoch; it stamps commits and drives
	// retention. Nil is the wall clock. Tests inject a fake clock. Not a flag.
	Clock func() int64
	// Version is reported by the gateway-info action. Empty is the build's Version. Not a flag.
	Version string
}

// SetDefaults fills every zero field of o with its default. It is the only place defaults live.
func (o *Options) SetDefaults() {
	if o.FlightAddr == "" {
		o.FlightAddr = DefaultFlightAddr
	}
	if o.AdminAddr == "" {
		o.AdminAddr = DefaultAdminAddr
	}
	if o.Warehouse == "" {
		o.Warehouse = DefaultWarehouse
	}
	if o.DefaultBucketCount == 0 {
		o.DefaultBucketCount = DefaultBucketCount
	}
	if o.ChangelogRetention == 0 {
		o.ChangelogRetention = DefaultChangelogRetention
	}
	if o.RetentionInterval == 0 {
		o.RetentionInterval = DefaultRetentionInterval
	}
	if o.NATSListen == "" {
		o.NATSListen = DefaultNATSListen
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.BlockCacheBytes == 0 {
		o.BlockCacheBytes = DefaultBlockCacheBytes
	}
	if o.StagingBudgetBytes == 0 {
		o.StagingBudgetBytes = DefaultStagingBudgetBytes
	}
	if o.LogLevel == "" {
		o.LogLevel = DefaultLogLevel
	}
	if o.LogFormat == "" {
		o.LogFormat = DefaultLogFormat
	}
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
	if o.SnapshotLease == 0 {
		o.SnapshotLease = DefaultSnapshotLease
	}
	o.Security.setDefaults()
	o.Limits.setDefaults()
	if o.Clock == nil {
		o.Clock = func() int64 { return time.Now().UnixMilli() }
	}
	if o.Version == "" {
		o.Version = Version
	}
}

// Validate reports the first invalid field of o (after SetDefaults) as an error naming its flag.
func (o *Options) Validate() error {
	if o.DefaultBucketCount < 1 || o.DefaultBucketCount > catalog.MaxBucketCount {
		return fmt.Errorf("--default-bucket-count must be in 1..%d, got %d", catalog.MaxBucketCount, o.DefaultBucketCount)
	}
	if o.ChangelogRetention < time.Millisecond {
		return fmt.Errorf("--changelog-retention must be >= 1ms, got %s", o.ChangelogRetention)
	}
	if o.RetentionInterval < time.Millisecond {
		return fmt.Errorf("--retention-interval must be >= 1ms, got %s", o.RetentionInterval)
	}
	if o.MaxMessageBytes < 1024 {
		return fmt.Errorf("--max-message-bytes must be >= 1024, got %d", o.MaxMessageBytes)
	}
	if o.StagingBudgetBytes < 0 {
		return fmt.Errorf("--staging-budget-bytes must be >= 0, got %d", o.StagingBudgetBytes)
	}
	if o.BlockCacheBytes < 0 {
		return fmt.Errorf("--block-cache-bytes must be >= 0, got %d", o.BlockCacheBytes)
	}
	if _, err := parseLevel(o.LogLevel); err != nil {
		return err
	}
	if o.LogFormat != "text" && o.LogFormat != "json" {
		return fmt.Errorf("--log-format must be text or json, got %q", o.LogFormat)
	}
	if o.NATSURL == "" {
		if _, _, err := natsListenHostPort(o.NATSListen); err != nil {
			return err
		}
	}
	if o.SnapshotLease < time.Millisecond {
		return fmt.Errorf("--snapshot-lease must be >= 1ms, got %s", o.SnapshotLease)
	}
	if o.ShutdownTimeout < 0 {
		return fmt.Errorf("shutdown timeout must be >= 0, got %s", o.ShutdownTimeout)
	}
	if err := o.Limits.validate(); err != nil {
		return err
	}
	return o.validateSecurity()
}

// RegisterFlags binds the `setats serve` flags to the fields of o on fs, with the defaults as
// flag defaults. Call ApplyEnv after fs.Parse so that environment variables fill the flags the
// command line left out.
func (o *Options) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.FlightAddr, "flight-addr", DefaultFlightAddr, "Arrow Flight listen address (host:port; port 0 = any free port)")
	fs.StringVar(&o.AdminAddr, "admin-addr", DefaultAdminAddr, "admin HTTP listen address for /healthz, /readyz, /metrics (port 0 = any free port)")
	fs.StringVar(&o.Warehouse, "warehouse", DefaultWarehouse, "warehouse: a path or file:///abs/path holding catalog metadata and table data")
	fs.Func("default-bucket-count", fmt.Sprintf("`n`: buckets per partition of tables created without a bucket count (default %d)", DefaultBucketCount), func(s string) error {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return err
		}
		o.DefaultBucketCount = int32(n)
		return nil
	})
	o.DefaultBucketCount = DefaultBucketCount
	fs.DurationVar(&o.ChangelogRetention, "changelog-retention", DefaultChangelogRetention, "how long changelog rows are kept unless a table sets changelog.retention.ms (Go duration)")
	fs.DurationVar(&o.RetentionInterval, "retention-interval", DefaultRetentionInterval, "how often retention runs (Go duration)")
	fs.StringVar(&o.NATSURL, "nats-url", "", "external NATS server URL; empty starts an embedded NATS server")
	fs.StringVar(&o.NATSListen, "nats-listen", DefaultNATSListen, "embedded NATS listen address (port 0 or -1 = any free port)")
	fs.IntVar(&o.MaxMessageBytes, "max-message-bytes", DefaultMaxMessageBytes, "largest gRPC message accepted, in bytes")
	fs.Int64Var(&o.StagingBudgetBytes, "staging-budget-bytes", DefaultStagingBudgetBytes, "bytes of exactly-once rows staged and not yet committed, over all tables; staging writes wait beyond it")
	fs.Int64Var(&o.BlockCacheBytes, "block-cache-bytes", DefaultBlockCacheBytes, "Pebble block cache size in bytes, shared by all tables (their memtables, up to 64 MiB per written table, count against it)")
	fs.StringVar(&o.LogLevel, "log-level", DefaultLogLevel, "log level: debug, info, warn, error")
	fs.StringVar(&o.LogFormat, "log-format", DefaultLogFormat, "log format: text or json")
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", DefaultShutdownTimeout, "on SIGTERM, how long batches in flight may take to finish before the remaining calls are cut (Go duration); idle streams end at once")
	fs.DurationVar(&o.SnapshotLease, "snapshot-lease", DefaultSnapshotLease, "how long a snapshot view lives without a read before it is released (Go duration; checked every --retention-interval)")
	fs.StringVar(&o.ReadyFile, "ready-file", "", "when set, write {flight_addr, admin_addr, nats_url, warehouse} as JSON to this path once serving")
	o.Security.registerFlags(fs)
	o.Limits.registerFlags(fs)
}

// EnvName returns the environment variable read for a flag: SETATS_ + the flag name in upper
// snake case ("flight-addr" -> "SETATS_FLIGHT_ADDR").
func EnvName(flagName string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// ApplyEnv sets every flag of fs that was not given on the command line from its environment
// variable (EnvName), when that variable is set and not empty. Flags win over the environment.
// lookup is os.LookupEnv in the binary; nil means os.LookupEnv. A bad value is an error naming
// the variable.
func ApplyEnv(fs *flag.FlagSet, lookup func(string) (string, bool)) error {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || given[f.Name] {
			return
		}
		name := EnvName(f.Name)
		v, ok := lookup(name)
		if !ok || v == "" {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = fmt.Errorf("environment variable %s=%q: %v", name, v, e)
		}
	})
	return err
}

// parseLevel maps a --log-level value to a slog.Level.
func parseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("--log-level must be debug, info, warn or error, got %q", s)
}

// NewLogger builds the logger described by o.LogLevel and o.LogFormat, writing to stderr.
func (o *Options) NewLogger() (*slog.Logger, error) {
	lvl, err := parseLevel(o.LogLevel)
	if err != nil {
		return nil, err
	}
	ho := &slog.HandlerOptions{Level: lvl}
	switch o.LogFormat {
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, ho)), nil
	case "text", "":
		return slog.New(slog.NewTextHandler(os.Stderr, ho)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, got %q", o.LogFormat)
}
