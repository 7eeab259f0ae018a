package gatewaytest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// BinaryPackage is the import path of the `setats` binary.
const BinaryPackage = "github.com/setats/setats/gateway/cmd/setats"

// BuildBinary builds the `setats` binary into dir with `go build` and returns its path. When the
// environment variable SETATS_BIN names a file, that file is used instead (nothing is built).
func BuildBinary(dir string) (string, error) {
	if p := os.Getenv("SETATS_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("SETATS_BIN: %w", err)
		}
		return filepath.Abs(p)
	}
	out := filepath.Join(dir, "setats")
	cmd := exec.Command("go", "build", "-o", out, BinaryPackage)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", BinaryPackage, err, buf.String())
	}
	return out, nil
}

// ReadyInfo is the JSON the gateway writes to --ready-file once it serves.
type ReadyInfo struct {
	FlightAddr string `json:"flight_addr"`
	AdminAddr  string `json:"admin_addr"`
	NatsURL    string `json:"nats_url"`
	Warehouse  string `json:"warehouse"`
}

// Gateway is a running `setats serve` process on a warehouse directory.
type Gateway struct {
	Bin, Warehouse, LogPath string
	ExtraArgs               []string
	Info                    ReadyInfo

	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
}

// StartGateway starts `bin serve` on warehouse with loopback ports chosen by the OS, appends its
// output to logPath, and waits (up to 60 s) for the ready file.
func StartGateway(bin, warehouse, logPath string, extraArgs ...string) (*Gateway, error) {
	g := &Gateway{Bin: bin, Warehouse: warehouse, LogPath: logPath, ExtraArgs: extraArgs}
	return g, g.start()
}

func (g *Gateway) start() error {
	readyFile := g.LogPath + ".ready.json"
	_ = os.Remove(readyFile)
	logf, err := os.OpenFile(g.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "\n==== gatewaytest: start %s at %s ====\n", g.Bin, time.Now().Format(time.RFC3339Nano))
	args := []string{"serve", "--warehouse", g.Warehouse, "--flight-addr", "127.0.0.1:0",
		"--admin-addr", "127.0.0.1:0", "--nats-listen", "127.0.0.1:-1", "--ready-file", readyFile}
	args = append(args, g.ExtraArgs...)
	cmd := exec.Command(g.Bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	g.cmd = cmd
	g.done = make(chan struct{})
	go func() {
		g.waitErr = cmd.Wait()
		logf.Close()
		close(g.done)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := os.ReadFile(readyFile); err == nil && len(b) > 0 {
			var info ReadyInfo
			if err := json.Unmarshal(b, &info); err == nil && info.FlightAddr != "" {
				g.Info = info
				return nil
			}
		}
		select {
		case <-g.done:
			return fmt.Errorf("gateway exited before ready (%v); log tail:\n%s", g.waitErr, g.LogTail(40))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			g.Kill()
			return fmt.Errorf("gateway not ready after 60s; log tail:\n%s", g.LogTail(40))
		}
	}
}

// Pid is the process id.
func (g *Gateway) Pid() int { return g.cmd.Process.Pid }

// Restart starts the binary again on the same warehouse (after Stop or Kill).
func (g *Gateway) Restart() error { return g.start() }

// Stop sends SIGTERM and waits up to timeout; it is an error when the process does not exit 0.
func (g *Gateway) Stop(timeout time.Duration) error {
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-g.done:
	case <-time.After(timeout):
		g.Kill()
		return fmt.Errorf("gateway did not exit within %s of SIGTERM", timeout)
	}
	if g.waitErr != nil {
		return fmt.Errorf("gateway exit after SIGTERM: %v; log tail:\n%s", g.waitErr, g.LogTail(30))
	}
	return nil
}

// Kill sends SIGKILL and waits for the process to end.
func (g *Gateway) Kill() {
	_ = g.cmd.Process.Signal(syscall.SIGKILL)
	<-g.done
}

// Exited reports whether the process has ended.
func (g *Gateway) Exited() bool {
	select {
	case <-g.done:
		return true
	default:
		return false
	}
}

// LogTail returns the last n lines of the gateway's log.
func (g *Gateway) LogTail(n int) string {
	b, _ := os.ReadFile(g.LogPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ProcStatus reads a field in kB (VmRSS, VmHWM) from /proc/<pid>/status, in bytes.
func ProcStatus(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, err
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s", pid, field)
}

// ProcCPU returns the user+system CPU time of a process so far, from /proc/<pid>/stat (clock
// ticks of 10 ms, the Linux USER_HZ).
func ProcCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no comm field", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}
