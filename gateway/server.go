package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/experimental"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/setats/setats/catalog"
	"github.com/setats/setats/gateway/auth"
	"github.com/setats/setats/gateway/subscribe"
)

// CatalogTypes are the catalog types this gateway serves (CatalogContext.catalog_type; "" means
// hadoop; "hive" is the Hive Metastore at CatalogContext.uri, SPEC section 12).
var CatalogTypes = catalog.CatalogTypes()

// Server is a Setats gateway: Flight service, catalog, table stores, NATS and admin HTTP for one
// warehouse. Build it with NewServer, run it with Start, stop it with Shutdown.
type Server struct {
	opts    Options
	log     *slog.Logger
	metrics *metrics
	mem     memory.Allocator

	cat catalog.Catalog
	// catalogs holds the catalogs requests select besides cat (catalog-type hive).
	catalogs catalogSet
	nats     *notifier
	tables   *tableRegistry
	// subs owns the subscription channels (SPEC section 11).
	subs *subscribe.Manager
	// removeMu serialises catalog RemoveData calls (drop-table, retention loop).
	removeMu sync.Mutex
	// cache is the Pebble block cache shared by the table stores (--block-cache-bytes).
	cache *pebble.Cache
	// views holds the snapshot views pinned by GetFlightInfo (flight_snapshot_plan.go).
	views pinnedViews
	// limits bound in-flight DoPut bytes and key index memory (limits.go).
	limits serverLimits
	// budget bounds the staged exactly-once bytes of all tables (--staging-budget-bytes).
	budget *stagingBudget

	// auth checks users and grants (nil without --users-file: everything allowed); tls is the
	// TLS material (nil without --tls-cert). See server_security.go.
	auth *auth.Authenticator
	tls  *auth.TLSFiles

	grpc      *grpc.Server
	flightLis net.Listener
	adminLis  net.Listener
	http      *http.Server

	// quit is closed when Shutdown begins: following DoGet streams and watch streams end.
	quit         chan struct{}
	serving      atomic.Bool
	shuttingDown atomic.Bool
	started      atomic.Bool
	wroteReady   bool           // the ready file was written; Shutdown removes it
	bg           sync.WaitGroup // retention loop and serve goroutines
	shutdownOnce sync.Once
	shutdownDone chan struct{}
	// failed receives the first storage failure of a table (Failed).
	failed chan error
}

// NewServer validates opts (after filling defaults, see Options.SetDefaults) and returns a
// server that is not yet started. Errors name the offending flag.
func NewServer(opts Options) (*Server, error) {
	opts.SetDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if _, err := catalog.NormalizeWarehouse(opts.Warehouse); err != nil {
		return nil, fmt.Errorf("--warehouse %q: %v", opts.Warehouse, err)
	}
	log := opts.Logger
	if log == nil {
		var err error
		if log, err = opts.NewLogger(); err != nil {
			return nil, err
		}
	}
	return &Server{
		opts:         opts,
		log:          log,
		metrics:      newMetrics(),
		mem:          memory.DefaultAllocator,
		quit:         make(chan struct{}),
		shutdownDone: make(chan struct{}),
		failed:       make(chan error, 1),
	}, nil
}

// SetAllocator sets the Arrow allocator used for DoPut decoding and DoGet encoding (tests pass
// a memory.CheckedAllocator). Call before Start.
func (s *Server) SetAllocator(mem memory.Allocator) { s.mem = mem }

// Start opens the catalog, starts (or connects to) NATS, binds the Flight and admin listeners,
// serves them in the background, starts the retention loop and writes the ready file. It does not
// block. On error everything it started is stopped again. Start may be called once.
func (s *Server) Start() (err error) {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("gateway: Start called twice")
	}
	defer func() {
		if err != nil {
			s.Shutdown()
		}
	}()
	cat, err := catalog.Open("hadoop", catalog.Options{
		Warehouse:          s.opts.Warehouse,
		DefaultBucketCount: s.opts.DefaultBucketCount,
	})
	if err != nil {
		return fmt.Errorf("open catalog at %s: %w", s.opts.Warehouse, err)
	}
	s.cat = cat
	s.cache = pebble.NewCache(s.opts.BlockCacheBytes)
	s.budget = newStagingBudget(s.opts.StagingBudgetBytes)
	s.tables = newTableRegistry(s)
	s.metrics.reg.MustRegister(newPebbleCollector(s.tables.openStores))
	s.initLimits()
	whDir, err := catalog.WarehouseDir(s.cat.Warehouse())
	if err != nil {
		return err
	}
	if err := s.openSubscriptions(whDir); err != nil {
		return fmt.Errorf("open subscription channels: %w", err)
	}

	if err := s.startSecurity(); err != nil {
		return err
	}
	if s.nats, err = startNATS(&s.opts, s.log, s.metrics); err != nil {
		return err
	}
	s.metrics.registerNATSConnected(s.nats.connected)
	if !s.nats.connected() {
		s.log.Warn("NATS server unreachable at start; serving anyway, notifications are published once it is reachable (/readyz reports nats_connected)",
			"nats_url", s.nats.url)
	}

	// A plain grpc.Server (rather than flight.NewServerWithMiddleware) so that Shutdown can bound
	// GracefulStop with a timeout and fall back to Stop.
	s.grpc = grpc.NewServer(append([]grpc.ServerOption{
		grpc.MaxRecvMsgSize(s.opts.MaxMessageBytes),
		grpc.MaxSendMsgSize(s.opts.MaxMessageBytes),
		experimental.BufferPool(messageBufferPool), // grpc_buffers.go
		grpc.ChainUnaryInterceptor(s.unaryInterceptor, s.authUnaryInterceptor),
		grpc.ChainStreamInterceptor(s.streamInterceptor, s.authStreamInterceptor),
	}, s.grpcSecurityOptions()...)...)
	flight.RegisterFlightServiceServer(s.grpc, &flightService{s: s})
	if s.flightLis, err = net.Listen("tcp", s.opts.FlightAddr); err != nil {
		return fmt.Errorf("--flight-addr %s: %w", s.opts.FlightAddr, err)
	}
	if s.adminLis, err = net.Listen("tcp", s.opts.AdminAddr); err != nil {
		return fmt.Errorf("--admin-addr %s: %w", s.opts.AdminAddr, err)
	}
	s.adminLis = s.adminListener(s.adminLis)
	s.http = &http.Server{Handler: s.adminHandler(), ReadHeaderTimeout: 10 * time.Second}

	s.bg.Add(3)
	go func() {
		defer s.bg.Done()
		if err := s.grpc.Serve(s.flightLis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			s.log.Error("flight server stopped", "err", err)
		}
	}()
	go func() {
		defer s.bg.Done()
		if err := s.http.Serve(s.adminLis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("admin server stopped", "err", err)
		}
	}()
	go func() {
		defer s.bg.Done()
		s.retentionLoop()
	}()
	s.serving.Store(true)

	if s.opts.ReadyFile != "" {
		if r := s.readiness(); !r.Ready {
			return fmt.Errorf("--ready-file %s: not ready: %+v", s.opts.ReadyFile, r)
		}
		if err := writeReadyFile(s.opts.ReadyFile, s.ReadyInfo()); err != nil {
			return fmt.Errorf("--ready-file %s: %w", s.opts.ReadyFile, err)
		}
		s.wroteReady = true
	}
	s.log.Info("setats gateway serving",
		"version", s.opts.Version,
		"flight_addr", s.FlightAddr(),
		"admin_addr", s.AdminAddr(),
		"nats_url", s.NATSURL(),
		"nats_embedded", s.nats.ns != nil,
		"warehouse", s.cat.Warehouse(),
		"default_bucket_count", s.opts.DefaultBucketCount,
		"changelog_retention", s.opts.ChangelogRetention.String(),
		"users_file", s.opts.UsersFile,
		"tls", s.tls != nil)
	return nil
}

// Shutdown stops the gateway: /readyz turns unready, following DoGet and watch streams end,
// the Flight server stops accepting calls and waits up to Options.ShutdownTimeout for in-flight
// calls (writes) to finish before cutting the rest, then the table stores are closed, NATS is
// drained and stopped and the admin server closes. It is safe to call more than once and from
// several goroutines; every call returns once the gateway is stopped.
func (s *Server) Shutdown() {
	s.shutdownOnce.Do(func() {
		defer close(s.shutdownDone)
		s.shuttingDown.Store(true)
		close(s.quit)
		if s.grpc != nil {
			stopped := make(chan struct{})
			go func() {
				s.grpc.GracefulStop()
				close(stopped)
			}()
			select {
			case <-stopped:
			case <-time.After(s.opts.ShutdownTimeout):
				s.log.Warn("flight calls still running after shutdown timeout; stopping them",
					"timeout", s.opts.ShutdownTimeout.String())
				s.grpc.Stop()
				<-stopped
			}
		}
		if s.flightLis != nil {
			_ = s.flightLis.Close() // when Start failed before Serve; else already closed
		}
		s.serving.Store(false)
		if s.subs != nil {
			s.subs.Close()
		}
		if s.tables != nil {
			s.tables.closeAll()
			s.catalogs.closeAll()
		}
		if s.cache != nil {
			s.cache.Unref()
		}
		s.nats.close()
		s.auth.Close()
		if s.http != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = s.http.Shutdown(ctx)
			cancel()
		}
		if s.adminLis != nil {
			_ = s.adminLis.Close()
		}
		s.bg.Wait()
		if s.wroteReady {
			_ = os.Remove(s.opts.ReadyFile)
		}
		s.log.Info("setats gateway stopped")
	})
	<-s.shutdownDone
}

// FlightAddr returns the address the Flight server is bound to, as host:port that a client on
// this machine can dial (an unspecified host such as ":0" or "0.0.0.0" is reported as
// 127.0.0.1). Empty before Start.
func (s *Server) FlightAddr() string { return dialable(s.flightLis) }

// AdminAddr returns the bound admin HTTP address, like FlightAddr. Empty before Start.
func (s *Server) AdminAddr() string { return dialable(s.adminLis) }

// NATSURL returns the URL of the NATS server notifications go to: the embedded server's client
// URL, or Options.NATSURL. Empty before Start.
func (s *Server) NATSURL() string {
	if s.nats == nil {
		return ""
	}
	return s.nats.url
}

// Warehouse returns the normalised warehouse URI ("file:///abs/path"). Empty before Start.
func (s *Server) Warehouse() string {
	if s.cat == nil {
		return ""
	}
	return s.cat.Warehouse()
}

// ReadyInfo is the JSON object of the ready file (Options.ReadyFile).
type ReadyInfo struct {
	// FlightAddr is the Flight address as dialable host:port, e.g. "127.0.0.1:40123".
	FlightAddr string `json:"flight_addr"`
	// AdminAddr is the admin HTTP address as dialable host:port.
	AdminAddr string `json:"admin_addr"`
	// NATSURL is the NATS URL notifications are published to, e.g. "nats://127.0.0.1:4222".
	NATSURL string `json:"nats_url"`
	// Warehouse is the normalised warehouse URI, "file:///abs/path".
	Warehouse string `json:"warehouse"`
}

// ReadyInfo returns the bound addresses of a started server.
func (s *Server) ReadyInfo() ReadyInfo {
	return ReadyInfo{FlightAddr: s.FlightAddr(), AdminAddr: s.AdminAddr(), NATSURL: s.NATSURL(), Warehouse: s.Warehouse()}
}

// Failed returns a channel that receives the first storage failure of a table (a failed WAL
// write or fsync, store/failure.go): from then on the table refuses writes and /readyz is 503
// naming it. The table cannot recover in this process; `setats serve` then shuts down and exits
// 1 so that a restart recovers it (gateway/README.md, "Storage failures").
func (s *Server) Failed() <-chan error { return s.failed }

// storageFailed is the store's failure hook (store.Options.OnFailure) of table label.
func (s *Server) storageFailed(label string, err error) {
	s.tables.setFailed(label, err)
	s.log.Error("table storage failed: its writes are refused and /readyz is unready until the gateway restarts",
		"table", label, "err", err)
	select {
	case s.failed <- err:
	default:
	}
}

// Done returns a channel closed once Shutdown has completed.
func (s *Server) Done() <-chan struct{} { return s.shutdownDone }

// dialable renders a listener's address as host:port with an unspecified host mapped to
// 127.0.0.1.
func dialable(l net.Listener) string {
	if l == nil {
		return ""
	}
	a, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return l.Addr().String()
	}
	host := a.IP.String()
	if a.IP == nil || a.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, strconv.Itoa(a.Port))
}

// writeReadyFile writes info as JSON to path atomically: a temporary file in the same directory,
// fsynced, then renamed over path.
func writeReadyFile(path string, info ReadyInfo) error {
	b, err := json.Marshal(info)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// Logger returns the server's logger.
func (s *Server) Logger() *slog.Logger { return s.log }
