package testkit

// Real topologies on loopback for the replica, failover, pooler and
// cluster tests (docs/scaling.md): started by the project's scripts in
// scripts/, each with its own ports and data directory under a temp dir,
// stopped by PID. They run under CI=true (and fail when an instance cannot
// start) or with OFFLINELOCK_TOPOLOGY=1; a plain go test skips them. The
// root package's tests and the tests module both start them from here.

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// scriptsDir is the repository's scripts/ directory, found from this
// file's place, so that a test of any module or package can run them.
func scriptsDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "scripts")
}

// NeedTopology skips t unless topology tests are asked for.
func NeedTopology(t testing.TB) {
	t.Helper()
	if os.Getenv("CI") != "true" && os.Getenv("OFFLINELOCK_TOPOLOGY") != "1" {
		t.Skip("topology tests run under CI=true or OFFLINELOCK_TOPOLOGY=1")
	}
}

// FreePorts returns n loopback ports nobody listens on now.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// Script runs one of scripts/, failing t with its output.
func Script(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(scriptsDir(), name), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TopologyDir is a fresh directory for a topology's data, removed by the
// script that stops it.
func TopologyDir(t testing.TB, kind string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "offlinelock-"+kind+"-")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// PGPair is a PostgreSQL primary with a streaming hot standby
// (scripts/pg-pair).
type PGPair struct {
	Dir                      string
	PrimaryPort, StandbyPort int
}

// StartPGPair starts a pair, stopped when t ends.
func StartPGPair(t testing.TB) *PGPair {
	t.Helper()
	NeedTopology(t)
	ports := FreePorts(t, 2)
	pp := &PGPair{Dir: TopologyDir(t, "pg"), PrimaryPort: ports[0], StandbyPort: ports[1]}
	t.Cleanup(func() { exec.Command(filepath.Join(scriptsDir(), "pg-pair"), "stop", pp.Dir).Run() })
	Script(t, "pg-pair", "start", pp.Dir, strconv.Itoa(pp.PrimaryPort), strconv.Itoa(pp.StandbyPort))
	return pp
}

// PGDSN is the DSN of the topology server listening on port.
func PGDSN(port int) string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=test sslmode=disable", port)
}

// PrimaryDSN and StandbyDSN are the DSNs of the pair's two servers.
func (pp *PGPair) PrimaryDSN() string { return PGDSN(pp.PrimaryPort) }
func (pp *PGPair) StandbyDSN() string { return PGDSN(pp.StandbyPort) }

// OpenPG opens GORM, without the plugin, on port.
func OpenPG(t testing.TB, dsn string) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(postgres.Open(dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := db.DB()
	t.Cleanup(func() { sqlDB.Close() })
	return db
}

// Exec runs SQL on port with a connection of its own.
func (pp *PGPair) Exec(t testing.TB, port int, sql string) {
	t.Helper()
	db := OpenPG(t, PGDSN(port))
	if err := db.Exec(sql).Error; err != nil {
		t.Fatalf("%s on %d: %v", sql, port, err)
	}
	sqlDB, _ := db.DB()
	sqlDB.Close()
}

// CaughtUp waits until the standby has replayed everything the primary
// wrote so far.
func (pp *PGPair) CaughtUp(t testing.TB) {
	t.Helper()
	primary, standby := OpenPG(t, pp.PrimaryDSN()), OpenPG(t, pp.StandbyDSN())
	var lsn string
	if err := primary.Raw(`SELECT pg_current_wal_lsn()::text`).Scan(&lsn).Error; err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var done bool
		if err := standby.Raw(`SELECT pg_last_wal_replay_lsn() >= ?::pg_lsn`, lsn).Scan(&done).Error; err != nil {
			t.Fatal(err)
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the standby does not catch up")
		}
		time.Sleep(20 * time.Millisecond) // polling the standby's progress, not standing in for it
	}
}

// PauseReplay stops the standby applying the WAL it receives.
func (pp *PGPair) PauseReplay(t testing.TB) {
	pp.Exec(t, pp.StandbyPort, `SELECT pg_wal_replay_pause()`)
}

// CutStandby stops the standby receiving WAL: what the primary commits from
// now on never reaches it (an asynchronous standby that falls behind).
func (pp *PGPair) CutStandby(t *testing.T) {
	pp.Exec(t, pp.StandbyPort, `ALTER SYSTEM SET primary_conninfo = ''`)
	pp.Exec(t, pp.StandbyPort, `SELECT pg_reload_conf()`)
	primary := OpenPG(t, pp.PrimaryDSN())
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := primary.Raw(`SELECT count(*) FROM pg_stat_replication`).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the standby still streams")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill stops the server of dir/role (primary or standby) at once, by PID:
// a crash.
func (pp *PGPair) Kill(t *testing.T, role string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(pp.Dir, role, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	if err != nil {
		t.Fatal(err)
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	p.Kill()
	p.Wait() // not our child: returns at once; the port is polled below
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := exec.Command("kill", "-0", strconv.Itoa(pid)).Run(); err != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) does not stop", role, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Promote makes the standby a primary and waits until it takes writes.
func (pp *PGPair) Promote(t *testing.T) {
	t.Helper()
	pp.Exec(t, pp.StandbyPort, `SELECT pg_promote(true, 60)`)
}

// Sync makes the standby synchronous (on) or asynchronous.
func (pp *PGPair) Sync(t *testing.T, on bool) {
	t.Helper()
	arg := "off"
	if on {
		arg = "on"
	}
	Script(t, "pg-pair", "sync", pp.Dir, arg)
}

// StartPgBouncer starts PgBouncer in transaction mode in front of the main
// PostgreSQL server (scripts/pgbouncer) and returns its port.
func StartPgBouncer(t *testing.T) int {
	t.Helper()
	NeedTopology(t)
	OpenPostgres(t) // the upstream must answer (and, under CI=true, must exist)
	port := FreePorts(t, 1)[0]
	dir := TopologyDir(t, "pgbouncer")
	t.Cleanup(func() { exec.Command(filepath.Join(scriptsDir(), "pgbouncer"), "stop", dir).Run() })
	Script(t, "pgbouncer", "start", dir, strconv.Itoa(port), "5432")
	return port
}

// StartGalera starts a 3-node MariaDB Galera cluster (scripts/galera) and
// returns a DSN for each node.
func StartGalera(t *testing.T) []string {
	t.Helper()
	NeedTopology(t)
	ports := append(FreePorts(t, 3), GaleraBases(t)...)
	dir := TopologyDir(t, "galera")
	t.Cleanup(func() { exec.Command(filepath.Join(scriptsDir(), "galera"), "stop", dir).Run() })
	args := []string{"start", dir}
	for _, p := range ports {
		args = append(args, strconv.Itoa(p))
	}
	Script(t, "galera", args...)
	var dsns []string
	for _, p := range ports[:3] {
		dsns = append(dsns, fmt.Sprintf("root@tcp(127.0.0.1:%d)/test?parseTime=true", p))
	}
	return dsns
}

// GaleraBases picks three Galera base ports g whose g+1 and g+2 (IST and
// SST) are free too, and far from each other.
func GaleraBases(t *testing.T) []int {
	t.Helper()
	free := func(p int) bool {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err == nil {
			l.Close()
		}
		return err == nil
	}
	var out []int
	for _, p := range FreePorts(t, 12) {
		if p+2 < 65536 && free(p+1) && free(p+2) && (len(out) == 0 || abs(p-out[len(out)-1]) > 2) {
			out = append(out, p)
		}
		if len(out) == 3 {
			return out
		}
	}
	t.Fatal("no free Galera ports")
	return nil
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
