// Package dbtest starts real PostgreSQL 15 and MariaDB servers for tests: in temp dirs, on free
// loopback ports, as the postgres / mysql user when the test runs as root. A test is skipped
// when the server binaries are missing, except under CI (CI set), where that fails.
package dbtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// PGBin is where Debian's postgresql-15 puts its server binaries.
var PGBin = envOr("PGBIN", "/usr/lib/postgresql/15/bin")

func envOr(k, d string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return d
}

func missing(t testing.TB, what string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s not found (CI must have it: .ci/install-debian.sh)", what)
	}
	t.Skipf("%s not found", what)
}

// FreePort returns a free loopback TCP port.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// workDir makes a temp dir traversable by the server user and owned by it.
func workDir(t testing.TB, prefix, owner string) (string, []string) {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	_ = os.Chmod(dir, 0o755)
	var as []string
	if os.Geteuid() == 0 {
		u, err := user.Lookup(owner)
		if err != nil {
			t.Fatalf("user %s: %v", owner, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		as = []string{"runuser", "-u", owner, "--"}
	}
	return dir, as
}

func run(t testing.TB, as []string, name string, args ...string) string {
	t.Helper()
	argv := append(append([]string{}, as...), name)
	argv = append(argv, args...)
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return string(out)
}

// Postgres is a running PostgreSQL server.
type Postgres struct {
	Port int
	Dir  string
	as   []string
}

// URL returns the postgres:// URL of database db as user postgres (trust auth).
func (p *Postgres) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.Port, db)
}

// SQL runs statements with psql on database db and returns the unaligned output.
func (p *Postgres) SQL(t testing.TB, db, sql string) string {
	t.Helper()
	return run(t, nil, filepath.Join(PGBin, "psql"), "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", strconv.Itoa(p.Port), "-U", "postgres", "-d", db, "-c", sql)
}

// Stop stops the server (fast shutdown); Start starts it again on the same port.
func (p *Postgres) Stop(t testing.TB) {
	run(t, p.as, filepath.Join(PGBin, "pg_ctl"), "-D", filepath.Join(p.Dir, "data"), "-m", "fast", "-w", "stop")
}

func (p *Postgres) Start(t testing.TB) {
	run(t, p.as, filepath.Join(PGBin, "pg_ctl"), "-D", filepath.Join(p.Dir, "data"), "-l", filepath.Join(p.Dir, "server.log"), "-w", "-t", "60",
		"-o", fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c wal_level=logical -c fsync=off -c max_wal_senders=10 -c max_replication_slots=10", p.Port, p.Dir), "start")
}

// StartPostgres starts PostgreSQL 15 with wal_level=logical and a database "test"; it is stopped
// at the end of the test.
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	if _, err := os.Stat(filepath.Join(PGBin, "initdb")); err != nil {
		missing(t, "PostgreSQL 15 ("+PGBin+"/initdb)")
	}
	dir, as := workDir(t, "setats-pg-", "postgres")
	p := &Postgres{Port: FreePort(t), Dir: dir, as: as}
	run(t, as, filepath.Join(PGBin, "initdb"), "-D", filepath.Join(dir, "data"), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8")
	p.Start(t)
	t.Cleanup(func() {
		argv := append(append([]string{}, as...), filepath.Join(PGBin, "pg_ctl"), "-D", filepath.Join(dir, "data"), "-m", "immediate", "-w", "stop")
		_ = exec.Command(argv[0], argv[1:]...).Run()
	})
	p.SQL(t, "postgres", "CREATE DATABASE test")
	return p
}

// MariaDB is a running MariaDB server with binlog_format=ROW and binlog_row_image=FULL, and a user
// setats/setats with every privilege.
type MariaDB struct {
	Port int
	Dir  string
	as   []string
	cmd  *exec.Cmd
}

// URL returns the mysql:// URL of database db as user setats.
func (m *MariaDB) URL(db string) string {
	return fmt.Sprintf("mysql://setats:setats@127.0.0.1:%d/%s", m.Port, db)
}

// SQL runs statements with the mariadb client as root over the socket.
func (m *MariaDB) SQL(t testing.TB, sql string) string {
	t.Helper()
	return run(t, nil, "mariadb", "--no-defaults", "-S", filepath.Join(m.Dir, "sock"), "-u", "root", "-N", "-B", "-e", sql)
}

// Start starts the server (again, on the same port); Kill kills it with SIGKILL.
func (m *MariaDB) Start(t testing.TB) {
	t.Helper()
	argv := append(append([]string{}, m.as...), "/usr/sbin/mariadbd", "--no-defaults", "--datadir="+filepath.Join(m.Dir, "data"),
		"--socket="+filepath.Join(m.Dir, "sock"), "--port="+strconv.Itoa(m.Port), "--bind-address=127.0.0.1",
		"--log-bin=mysql-bin", "--binlog-format=ROW", "--binlog-row-image=FULL", "--server-id=1",
		"--pid-file="+filepath.Join(m.Dir, "mariadb.pid"), "--log-error="+filepath.Join(m.Dir, "error.log"),
		"--innodb-buffer-pool-size=32M", "--skip-name-resolve", "--innodb-flush-log-at-trx-commit=2")
	m.cmd = exec.Command(argv[0], argv[1:]...)
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if err := exec.Command("mariadb", "--no-defaults", "-S", filepath.Join(m.Dir, "sock"), "-u", "root", "-e", "SELECT 1").Run(); err == nil {
			return
		}
		if i > 300 {
			b, _ := os.ReadFile(filepath.Join(m.Dir, "error.log"))
			t.Fatalf("MariaDB did not start:\n%s", b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (m *MariaDB) Kill() {
	// The server's own pid: under runuser the child process is runuser, not mariadbd.
	if b, err := os.ReadFile(filepath.Join(m.Dir, "mariadb.pid")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
		_ = os.Remove(filepath.Join(m.Dir, "mariadb.pid"))
	}
	if m.cmd != nil && m.cmd.Process != nil {
		_ = m.cmd.Process.Kill()
		_ = m.cmd.Wait()
		m.cmd = nil
	}
}

// StartMariaDB starts MariaDB (Debian's mariadb-server); it is killed at the end of the test.
func StartMariaDB(t testing.TB) *MariaDB {
	t.Helper()
	if _, err := os.Stat("/usr/sbin/mariadbd"); err != nil {
		missing(t, "MariaDB (/usr/sbin/mariadbd)")
	}
	dir, as := workDir(t, "setats-mariadb-", "mysql")
	m := &MariaDB{Port: FreePort(t), Dir: dir, as: as}
	args := []string{"--no-defaults", "--datadir=" + filepath.Join(dir, "data"), "--auth-root-authentication-method=socket", "--skip-test-db"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=mysql")
	}
	run(t, nil, "mariadb-install-db", args...)
	m.Start(t)
	t.Cleanup(m.Kill)
	m.SQL(t, "CREATE USER 'setats'@'%' IDENTIFIED BY 'setats'; GRANT ALL PRIVILEGES ON *.* TO 'setats'@'%'; FLUSH PRIVILEGES")
	return m
}
