package gateway

import (
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestOptionsFlagsEnv(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		check func(t *testing.T, o *Options)
		err   string
	}{
		{
			name: "defaults",
			check: func(t *testing.T, o *Options) {
				want := Options{FlightAddr: "127.0.0.1:8815", AdminAddr: "127.0.0.1:8816", Warehouse: "./warehouse", DefaultBucketCount: 4,
					ChangelogRetention: 24 * time.Hour, RetentionInterval: time.Minute, NATSListen: "127.0.0.1:4222",
					MaxMessageBytes: 64 << 20, BlockCacheBytes: 192 << 20, StagingBudgetBytes: 1 << 30, LogLevel: "info", LogFormat: "text",
					ShutdownTimeout: 10 * time.Second, SnapshotLease: 10 * time.Minute, Version: Version,
					Security: Security{TokenTTL: time.Hour, UsersReloadInterval: 2 * time.Second},
					Limits:   Limits{MaxOpenTables: 512, MaxInflightPutBytes: 256 << 20, KeyIndexBytes: 256 << 20}}
				got := *o
				got.Clock, got.Logger = nil, nil
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("defaults:\n got %+v\nwant %+v", got, want)
				}
			},
		},
		{
			name: "flags",
			args: []string{"--flight-addr", "127.0.0.1:0", "--admin-addr=127.0.0.1:0", "--warehouse", "/tmp/w",
				"--default-bucket-count", "7", "--changelog-retention", "90m", "--retention-interval", "5s",
				"--nats-url", "nats://h:1", "--nats-listen", "127.0.0.1:-1", "--max-message-bytes", "2048",
				"--block-cache-bytes", "100", "--log-level", "debug", "--log-format", "json", "--ready-file", "/tmp/r",
				"--max-open-tables", "9", "--max-inflight-put-bytes", "4096", "--key-index-bytes", "-1"},
			check: func(t *testing.T, o *Options) {
				if o.FlightAddr != "127.0.0.1:0" || o.AdminAddr != "127.0.0.1:0" || o.Warehouse != "/tmp/w" ||
					o.DefaultBucketCount != 7 || o.ChangelogRetention != 90*time.Minute || o.RetentionInterval != 5*time.Second ||
					o.NATSURL != "nats://h:1" || o.NATSListen != "127.0.0.1:-1" || o.MaxMessageBytes != 2048 ||
					o.BlockCacheBytes != 100 || o.LogLevel != "debug" || o.LogFormat != "json" || o.ReadyFile != "/tmp/r" ||
					o.MaxOpenTables != 9 || o.MaxInflightPutBytes != 4096 || o.KeyIndexBytes != -1 {
					t.Fatalf("flags not bound: %+v", *o)
				}
			},
		},
		{
			name: "env fills what flags leave out; flags win",
			args: []string{"--flight-addr", "127.0.0.1:1"},
			env: map[string]string{"SETATS_FLIGHT_ADDR": "127.0.0.1:2", "SETATS_DEFAULT_BUCKET_COUNT": "9",
				"SETATS_CHANGELOG_RETENTION": "1h", "SETATS_NATS_URL": "nats://x:4222", "SETATS_READY_FILE": "/r"},
			check: func(t *testing.T, o *Options) {
				if o.FlightAddr != "127.0.0.1:1" {
					t.Fatalf("flag must win over env: %q", o.FlightAddr)
				}
				if o.DefaultBucketCount != 9 || o.ChangelogRetention != time.Hour || o.NATSURL != "nats://x:4222" || o.ReadyFile != "/r" {
					t.Fatalf("env not applied: %+v", *o)
				}
			},
		},
		{
			name: "bad env value names the variable",
			env:  map[string]string{"SETATS_RETENTION_INTERVAL": "soon"},
			err:  "SETATS_RETENTION_INTERVAL",
		},
		{
			name: "validate names the flag",
			args: []string{"--log-format", "xml"},
			err:  "--log-format",
		},
		{
			name: "bad bucket count",
			args: []string{"--default-bucket-count", "-1"},
			err:  "--default-bucket-count",
		},
		{
			name: "bad nats listen",
			args: []string{"--nats-listen", "nohost"},
			err:  "--nats-listen",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var o Options
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			o.RegisterFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := ApplyEnv(fs, func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if err == nil {
				o.SetDefaults()
				err = o.Validate()
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one naming %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, &o)
		})
	}
}

func TestEnvName(t *testing.T) {
	for flagName, want := range map[string]string{
		"flight-addr": "SETATS_FLIGHT_ADDR", "nats-url": "SETATS_NATS_URL", "block-cache-bytes": "SETATS_BLOCK_CACHE_BYTES",
	} {
		if got := EnvName(flagName); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", flagName, got, want)
		}
	}
}

func TestNATSListenHostPort(t *testing.T) {
	for _, tc := range []struct {
		in   string
		host string
		port int
	}{
		{"127.0.0.1:4222", "127.0.0.1", 4222},
		{"127.0.0.1:0", "127.0.0.1", -1},
		{"127.0.0.1:-1", "127.0.0.1", -1},
		{":5222", "0.0.0.0", 5222},
	} {
		h, p, err := natsListenHostPort(tc.in)
		if err != nil || h != tc.host || p != tc.port {
			t.Errorf("natsListenHostPort(%q) = %q, %d, %v; want %q, %d", tc.in, h, p, err, tc.host, tc.port)
		}
	}
}
