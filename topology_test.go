package offlinelock_test

// Real topologies on loopback for the replica, failover, pooler and
// cluster tests (docs/scaling.md): started by the project's scripts in
// scripts/, each with its own ports and data directory under a temp dir,
// stopped by PID. They run under CI=true (and fail when an instance cannot
// start) or with OFFLINELOCK_TOPOLOGY=1; a plain go test skips them.

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// needTopology skips t unless topology tests are asked for.
func needTopology(t testing.TB) {
	t.Helper()
	if os.Getenv("CI") != "true" && os.Getenv("OFFLINELOCK_TOPOLOGY") != "1" {
		t.Skip("topology tests run under CI=true or OFFLINELOCK_TOPOLOGY=1")
	}
}

// freePorts returns n loopback ports nobody listens on now.
func freePorts(t testing.TB, n int) []int {
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

// script runs one of scripts/, failing t with its output.
func script(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join("scripts", name), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// topologyDir is a fresh directory for a topology's data, removed by the
// script that stops it.
func topologyDir(t testing.TB, kind string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "offlinelock-"+kind+"-")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// pgPair is a PostgreSQL primary with a streaming hot standby
// (scripts/pg-pair).
type pgPair struct {
	dir                      string
	primaryPort, standbyPort int
}

func startPGPair(t testing.TB) *pgPair {
	t.Helper()
	needTopology(t)
	ports := freePorts(t, 2)
	pp := &pgPair{dir: topologyDir(t, "pg"), primaryPort: ports[0], standbyPort: ports[1]}
	t.Cleanup(func() { exec.Command("scripts/pg-pair", "stop", pp.dir).Run() })
	script(t, "pg-pair", "start", pp.dir, strconv.Itoa(pp.primaryPort), strconv.Itoa(pp.standbyPort))
	return pp
}

func pgDSN(port int) string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=test sslmode=disable", port)
}

func (pp *pgPair) primaryDSN() string { return pgDSN(pp.primaryPort) }
func (pp *pgPair) standbyDSN() string { return pgDSN(pp.standbyPort) }

// open opens GORM, without the plugin, on port.
func openPG(t testing.TB, dsn string) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(postgres.Open(dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := db.DB()
	t.Cleanup(func() { sqlDB.Close() })
	return db
}

// exec runs SQL on port with a connection of its own.
func (pp *pgPair) exec(t testing.TB, port int, sql string) {
	t.Helper()
	db := openPG(t, pgDSN(port))
	if err := db.Exec(sql).Error; err != nil {
		t.Fatalf("%s on %d: %v", sql, port, err)
	}
	sqlDB, _ := db.DB()
	sqlDB.Close()
}

// caughtUp waits until the standby has replayed everything the primary
// wrote so far.
func (pp *pgPair) caughtUp(t testing.TB) {
	t.Helper()
	primary, standby := openPG(t, pp.primaryDSN()), openPG(t, pp.standbyDSN())
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

func (pp *pgPair) pauseReplay(t testing.TB) {
	pp.exec(t, pp.standbyPort, `SELECT pg_wal_replay_pause()`)
}

// cutStandby stops the standby receiving WAL: what the primary commits from
// now on never reaches it (an asynchronous standby that falls behind).
func (pp *pgPair) cutStandby(t *testing.T) {
	pp.exec(t, pp.standbyPort, `ALTER SYSTEM SET primary_conninfo = ''`)
	pp.exec(t, pp.standbyPort, `SELECT pg_reload_conf()`)
	primary := openPG(t, pp.primaryDSN())
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

// kill stops the server of dir/role (primary or standby) at once, by PID:
// a crash.
func (pp *pgPair) kill(t *testing.T, role string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(pp.dir, role, "postmaster.pid"))
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

// promote makes the standby a primary and waits until it takes writes.
func (pp *pgPair) promote(t *testing.T) {
	t.Helper()
	pp.exec(t, pp.standbyPort, `SELECT pg_promote(true, 60)`)
}

func (pp *pgPair) sync(t *testing.T, on bool) {
	t.Helper()
	arg := "off"
	if on {
		arg = "on"
	}
	script(t, "pg-pair", "sync", pp.dir, arg)
}

// startPgBouncer starts PgBouncer in transaction mode in front of the main
// PostgreSQL server (scripts/pgbouncer) and returns its port.
func startPgBouncer(t *testing.T) int {
	t.Helper()
	needTopology(t)
	openPostgres(t) // the upstream must answer (and, under CI=true, must exist)
	port := freePorts(t, 1)[0]
	dir := topologyDir(t, "pgbouncer")
	t.Cleanup(func() { exec.Command("scripts/pgbouncer", "stop", dir).Run() })
	script(t, "pgbouncer", "start", dir, strconv.Itoa(port), "5432")
	return port
}

// startGalera starts a 3-node MariaDB Galera cluster (scripts/galera) and
// returns a DSN for each node.
func startGalera(t *testing.T) []string {
	t.Helper()
	needTopology(t)
	ports := append(freePorts(t, 3), galeraBases(t)...)
	dir := topologyDir(t, "galera")
	t.Cleanup(func() { exec.Command("scripts/galera", "stop", dir).Run() })
	args := []string{"start", dir}
	for _, p := range ports {
		args = append(args, strconv.Itoa(p))
	}
	script(t, "galera", args...)
	var dsns []string
	for _, p := range ports[:3] {
		dsns = append(dsns, fmt.Sprintf("root@tcp(127.0.0.1:%d)/test?parseTime=true", p))
	}
	return dsns
}

// galeraBases picks three Galera base ports g whose g+1 and g+2 (IST and
// SST) are free too, and far from each other.
func galeraBases(t *testing.T) []int {
	t.Helper()
	free := func(p int) bool {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err == nil {
			l.Close()
		}
		return err == nil
	}
	var out []int
	for _, p := range freePorts(t, 12) {
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
