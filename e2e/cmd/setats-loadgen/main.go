// Command setats-loadgen runs issue 2's gateway benchmark and prints the figures with their
// targets: (a) DoPut upsert ingest rows/s, (b) raw Pebble batch-write rows/s as the baseline and
// (a)/(b), (c) DoGet changelog read from earliest rows/s, (d) write-to-reader latency p50/p99 at a
// steady rate, (e) gateway RSS at the ingested key count.
//
// By default it builds the `setats` binary (or uses -bin) and runs it as a separate process on a
// fresh warehouse; -inprocess runs the gateway inside this process instead (for -cpuprofile and
// -memprofile; RSS is then this whole process, load generator included).
//
//	go run ./e2e/cmd/setats-loadgen                 # 1M keys, the size
//	go run ./e2e/cmd/setats-loadgen -keys 100000    # quicker
//	go run ./e2e/cmd/setats-loadgen -inprocess -cpuprofile ingest.pprof -profile-phase ingest
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"time"

	"github.com/setats/setats/e2e/gatewaytest"
	"github.com/setats/setats/gateway"
)

func main() {
	var cfg gatewaytest.BenchConfig
	flag.IntVar(&cfg.Keys, "keys", 1_000_000, "distinct keys written by the ingest phase")
	flag.IntVar(&cfg.UpdatePct, "update-pct", 20, "percentage of ingest writes that update an existing key")
	flag.IntVar(&cfg.BatchRows, "batch-rows", 4096, "rows per DoPut record batch (and per raw Pebble batch)")
	flag.IntVar(&cfg.Writers, "writers", 2, "concurrent DoPut streams / raw Pebble writers / DoGet readers")
	flag.IntVar(&cfg.Partitions, "partitions", 4, "distinct dt values")
	flag.IntVar(&cfg.Buckets, "buckets", 4, "bucket count per partition")
	flag.IntVar(&cfg.LatencyRate, "latency-rate", 10_000, "steady write rate of the latency phase, rows/s")
	flag.IntVar(&cfg.LatencyBatchRows, "latency-batch-rows", 100, "rows per batch in the latency phase")
	flag.DurationVar(&cfg.LatencyDuration, "latency-duration", 10*time.Second, "measured length of the latency phase (after 1s warm-up)")
	flag.BoolVar(&cfg.SkipRaw, "skip-raw", false, "skip the raw Pebble baseline (b)")
	seed := flag.Uint64("seed", 1, "workload seed")
	bin := flag.String("bin", "", "setats binary to run (default: go build it into the work dir)")
	workDir := flag.String("workdir", "", "work directory (default: a new temp dir, removed afterwards)")
	inProcess := flag.Bool("inprocess", false, "run the gateway in this process (for profiles)")
	gatewayArgs := flag.String("gateway-args", "", "extra `setats serve` flags, space separated (binary mode)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of -profile-phase to this file (needs -inprocess to see gateway code)")
	memProfile := flag.String("memprofile", "", "write a heap profile after the ingest phase (needs -inprocess)")
	traceOut := flag.String("trace", "", "write a runtime/trace of -profile-phase to this file (needs -inprocess)")
	profilePhase := flag.String("profile-phase", "ingest", "phase to profile: raw, ingest, read, latency")
	jsonOut := flag.String("json", "", "also write the figures as JSON to this file")
	flag.Parse()
	cfg.Seed = *seed
	cfg.Logf = func(f string, a ...any) {
		fmt.Fprintf(os.Stderr, "%s "+f+"\n", append([]any{time.Now().Format("15:04:05.000")}, a...)...)
	}

	if err := run(cfg, *bin, *workDir, *inProcess, *gatewayArgs, *cpuProfile, *memProfile, *traceOut, *profilePhase, *jsonOut); err != nil {
		fmt.Fprintln(os.Stderr, "setats-loadgen:", err)
		os.Exit(1)
	}
}

func run(cfg gatewaytest.BenchConfig, bin, workDir string, inProcess bool, gatewayArgs, cpuProfile, memProfile, traceOut, profilePhase, jsonOut string) error {
	if workDir == "" {
		d, err := os.MkdirTemp("", "setats-loadgen-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		workDir = d
	}
	var cpuFile, traceFile *os.File
	cfg.OnPhase = func(phase string, begin bool) {
		if phase == profilePhase && traceOut != "" {
			if begin {
				f, err := os.Create(traceOut)
				if err == nil && trace.Start(f) == nil {
					traceFile = f
				}
			} else if traceFile != nil {
				trace.Stop()
				traceFile.Close()
				traceFile = nil
			}
		}
		if phase != profilePhase {
			if phase == "ingest" && !begin && memProfile != "" {
				writeHeap(memProfile)
			}
			return
		}
		if cpuProfile != "" && begin {
			f, err := os.Create(cpuProfile)
			if err == nil && pprof.StartCPUProfile(f) == nil {
				cpuFile = f
			}
		} else if cpuFile != nil && !begin {
			pprof.StopCPUProfile()
			cpuFile.Close()
			cpuFile = nil
		}
		if phase == "ingest" && !begin && memProfile != "" {
			writeHeap(memProfile)
		}
	}
	ctx := context.Background()
	warehouse := filepath.Join(workDir, "warehouse")
	var target gatewaytest.BenchTarget
	var stop func() error
	mode := "binary"
	if inProcess {
		mode = "in-process"
		srv, err := gateway.NewServer(gateway.Options{Warehouse: warehouse, FlightAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0",
			NATSListen: "127.0.0.1:-1", Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		if err != nil {
			return err
		}
		if err := srv.Start(); err != nil {
			return err
		}
		target = selfTarget{addr: srv.FlightAddr()}
		stop = func() error { srv.Shutdown(); return nil }
	} else {
		if bin == "" {
			var err error
			if bin, err = gatewaytest.BuildBinary(workDir); err != nil {
				return err
			}
		}
		gw, err := gatewaytest.StartGateway(bin, warehouse, filepath.Join(workDir, "gateway.log"), strings.Fields(gatewayArgs)...)
		if err != nil {
			return err
		}
		defer func() {
			if !gw.Exited() {
				gw.Kill()
			}
		}()
		target = gatewaytest.BinaryTarget{G: gw}
		stop = func() error {
			if err := gw.Stop(time.Minute); err != nil {
				return err
			}
			return nil
		}
		cfg.Logf("gateway pid %d, flight %s, log %s", gw.Pid(), gw.Info.FlightAddr, gw.LogPath)
		defer func() {
			if !gw.Exited() {
				fmt.Fprintf(os.Stderr, "gateway log tail:\n%s\n", gw.LogTail(30))
			}
		}()
	}
	res, err := gatewaytest.RunBench(ctx, cfg, target, workDir)
	if err != nil {
		return err
	}
	if err := stop(); err != nil {
		return err
	}
	cfg.SetDefaults()
	fmt.Printf("setats-loadgen (%s gateway; GOMAXPROCS %d; %d writers, %d-row batches, %d partitions x %d buckets)\n",
		mode, runtime.GOMAXPROCS(0), cfg.Writers, cfg.BatchRows, cfg.Partitions, cfg.Buckets)
	fmt.Print(res.Report())
	if jsonOut != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		return os.WriteFile(jsonOut, b, 0o644)
	}
	return nil
}

func writeHeap(path string) {
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	runtime.GC()
	_ = pprof.WriteHeapProfile(f)
}

// selfTarget is an in-process gateway: RSS is this process's.
type selfTarget struct{ addr string }

func (s selfTarget) FlightAddr() string { return s.addr }

func (s selfTarget) RSS() (int64, int64, error) {
	rss, err := gatewaytest.ProcStatus(os.Getpid(), "VmRSS")
	if err != nil {
		return 0, 0, err
	}
	hwm, err := gatewaytest.ProcStatus(os.Getpid(), "VmHWM")
	return rss, hwm, err
}

func (s selfTarget) CPU() (time.Duration, error) { return gatewaytest.ProcCPU(os.Getpid()) }
