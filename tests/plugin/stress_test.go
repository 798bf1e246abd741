package plugin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// Counters of the stress test, one model per mode, and an aggregate whose
// items are counted under their box's lock.
type EWCounter struct {
	ID uint `gorm:"primaryKey" lock:"exclusive_write"`
	N  int
}
type ERCounter struct {
	ID uint `gorm:"primaryKey" lock:"exclusive_read"`
	N  int
}
type RWCounter struct {
	ID uint `gorm:"primaryKey" lock:"read_write"`
	N  int
}
type Box struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_read"`
	Items []Item
}
type Item struct {
	ID    uint `gorm:"primaryKey"`
	BoxID uint `lock:"root"`
	N     int
}

var stressModels = []any{&EWCounter{}, &ERCounter{}, &RWCounter{}, &Box{}, &Item{}}

const (
	stressKeys     = 8 // per counter model; boxes too
	itemsPerBox    = 4
	workerEnv      = "OFFLINELOCK_STRESS_WORKER"
	stressSecsEnv  = "OFFLINELOCK_STRESS_SECONDS"
	workerRoutines = 16
)

// workerConfig is what the parent hands each worker process.
type workerConfig struct {
	Dialect string // "postgres" or "mysql"
	DSN     string
	Table   string
	Proc    int
	Seconds float64
}

// call is one recorded lock call: what was asked, what came back, and when
// (wall clock nanoseconds: the processes share one machine's clock).
type call struct {
	Client  int
	Key     string // "ew:3", "box:2": the lock it is about
	Kind    string // acquire, release, renew
	Session string
	Access  string
	OK      bool
	Call    int64
	Return  int64
}

// workerResult is a worker's report: business transactions done per counter
// row, refusals, failures, and its calls.
type workerResult struct {
	Done    map[string]int
	Refused int
	Failed  []string
	Calls   []call
}

func TestMain(m *testing.M) {
	if cfg := os.Getenv(workerEnv); cfg != "" {
		os.Exit(runWorker(cfg))
	}
	os.Exit(m.Run())
}

// runWorker is one process of the stress test: 16 goroutines, each a
// session running business transactions the way a web app does.
func runWorker(raw string) int {
	var cfg workerConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	db, err := gorm.Open(testkit.DialectorOf(cfg.Dialect, cfg.DSN), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	sqlDB, _ := db.DB()
	sqlDB.SetMaxOpenConns(workerRoutines) // 4 processes x 16 stay well under max_connections (100)
	p := offlinelock.New(offlinelock.Config{Table: cfg.Table, TTL: time.Hour, Models: stressModels, Logger: slog.New(slog.DiscardHandler)})
	if err := db.Use(p); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	deadline := time.Now().Add(time.Duration(cfg.Seconds * float64(time.Second)))
	var mu sync.Mutex
	res := workerResult{Done: map[string]int{}}
	var wg sync.WaitGroup
	for g := 0; g < workerRoutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &worker{p: p, db: db, client: cfg.Proc*workerRoutines + g, rng: rand.New(rand.NewPCG(uint64(cfg.Proc), uint64(g))),
				owner: offlinelock.Owner{Session: fmt.Sprintf("p%d-g%d", cfg.Proc, g), User: fmt.Sprintf("user%d.%d", cfg.Proc, g)},
				done:  map[string]int{}}
			for time.Now().Before(deadline) {
				w.businessTransaction()
			}
			mu.Lock()
			defer mu.Unlock()
			for k, n := range w.done {
				res.Done[k] += n
			}
			res.Refused += w.refused
			res.Failed = append(res.Failed, w.failed...)
			res.Calls = append(res.Calls, w.calls...)
		}()
	}
	wg.Wait()
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 2
	}
	return 0
}

type worker struct {
	p       *offlinelock.Plugin
	db      *gorm.DB
	client  int
	rng     *rand.Rand
	owner   offlinelock.Owner
	done    map[string]int
	refused int
	failed  []string
	calls   []call
}

func (w *worker) sdb() *gorm.DB {
	return w.db.WithContext(offlinelock.WithOwner(context.Background(), w.owner))
}

// record runs f, a lock call on key, and records it. A refusal is a
// result; any other error is a failure of the test.
func (w *worker) record(key, kind string, access offlinelock.Access, f func() error) bool {
	c := call{Client: w.client, Key: key, Kind: kind, Session: w.owner.Session, Access: string(access), Call: time.Now().UnixNano()}
	err := f()
	c.Return = time.Now().UnixNano()
	switch {
	case err == nil:
		c.OK = true
	case errors.Is(err, offlinelock.ErrLocked) || kind == "release" && errors.Is(err, offlinelock.ErrNotLocked):
	default:
		w.failed = append(w.failed, fmt.Sprintf("%s %s %s: %v", w.owner.Session, kind, key, err))
		return false
	}
	w.calls = append(w.calls, c)
	return c.OK
}

// think is the user's pause, in a system transaction of its own.
func (w *worker) think() {
	w.db.Transaction(func(tx *gorm.DB) error {
		time.Sleep(time.Duration(w.rng.IntN(2000)) * time.Microsecond)
		return nil
	})
}

func (w *worker) renew(key string) {
	w.record(key, "renew", "", func() error {
		n, err := w.p.Renew(w.sdb(), w.owner.Session)
		if err == nil && n < 1 {
			return fmt.Errorf("%w: renewed nothing", offlinelock.ErrLocked)
		}
		return err
	})
}

// businessTransaction: lock (implicitly by a load, or explicitly), think,
// read-modify-write the counter in a later system transaction, release.
func (w *worker) businessTransaction() {
	k := uint(1 + w.rng.IntN(stressKeys))
	switch w.rng.IntN(4) {
	case 0: // exclusive_write: lock explicitly at edit start
		key := fmt.Sprintf("ew:%d", k)
		if !w.record(key, "acquire", offlinelock.Write, func() error {
			_, err := w.p.Acquire(w.sdb(), &EWCounter{ID: k}, offlinelock.Write)
			return err
		}) {
			w.refused++
			return
		}
		w.think()
		w.renew(key)
		w.rmw(key, &EWCounter{ID: k}, nil)
	case 1: // exclusive_read: the load takes the lock
		key := fmt.Sprintf("er:%d", k)
		if !w.record(key, "acquire", offlinelock.Write, func() error { return w.sdb().First(&ERCounter{}, k).Error }) {
			w.refused++
			return
		}
		w.think()
		w.rmw(key, &ERCounter{ID: k}, offlinelock.Write)
	case 2: // read_write: the load reads, the edit upgrades
		key := fmt.Sprintf("rw:%d", k)
		if !w.record(key, "acquire", offlinelock.Read, func() error { return w.sdb().First(&RWCounter{}, k).Error }) {
			w.refused++
			return
		}
		if !w.record(key, "acquire", offlinelock.Write, func() error {
			_, err := w.p.Acquire(w.sdb(), &RWCounter{ID: k}, offlinelock.Write)
			return err
		}) {
			w.refused++
			w.record(key, "release", "", func() error { return w.p.Release(w.sdb(), &RWCounter{ID: k}) })
			return
		}
		w.think()
		w.rmw(key, &RWCounter{ID: k}, offlinelock.Read)
	case 3: // an aggregate: loading an item locks its box
		item := uint(1 + w.rng.IntN(stressKeys*itemsPerBox))
		box := (item-1)/itemsPerBox + 1
		key := fmt.Sprintf("box:%d", box)
		if !w.record(key, "acquire", offlinelock.Write, func() error { return w.sdb().First(&Item{}, item).Error }) {
			w.refused++
			return
		}
		w.think()
		w.renew(key)
		w.rmwItem(key, item)
	}
}

// rmw reads the counter and writes n+1 in one system transaction, then
// releases. loadAccess is the lock the load inside takes (nil: none).
func (w *worker) rmw(key string, target any, loadAccess any) {
	err := w.sdb().Transaction(func(tx *gorm.DB) error {
		var n int
		load := func() error {
			return tx.Model(target).Select("n").Where(target).Take(&n).Error
		}
		var err error
		if access, ok := loadAccess.(offlinelock.Access); ok {
			w.record(key, "acquire", access, func() error { err = load(); return err })
		} else {
			err = load()
		}
		if err != nil {
			return err
		}
		return tx.Model(target).Update("n", n+1).Error
	})
	if err != nil {
		w.failed = append(w.failed, fmt.Sprintf("%s update %s: %v", w.owner.Session, key, err))
	} else {
		w.done[key]++
	}
	w.record(key, "release", "", func() error { return w.p.Release(w.sdb(), target) })
}

func (w *worker) rmwItem(key string, id uint) {
	err := w.sdb().Transaction(func(tx *gorm.DB) error {
		var it Item
		var err error
		w.record(key, "acquire", offlinelock.Write, func() error { err = tx.First(&it, id).Error; return err })
		if err != nil {
			return err
		}
		return tx.Model(&it).Update("n", it.N+1).Error
	})
	item := fmt.Sprintf("item:%d", id)
	if err != nil {
		w.failed = append(w.failed, fmt.Sprintf("%s update %s: %v", w.owner.Session, item, err))
	} else {
		w.done[item]++
	}
	w.record(key, "release", "", func() error { return w.p.Release(w.sdb(), &Item{ID: id}) })
}

// TestNoLostUpdateManyProcesses starts 4 processes of this test binary,
// each with 16 sessions, running business transactions on PostgreSQL under
// all three modes and an aggregate, with long TTLs. Afterwards every
// counter equals the business transactions that reported success for it
// (Jepsen's lost-update check, ShedLock's counter), and the recorded lock
// calls of all processes, merged, are linearizable against a sequential
// model of the lock table (porcupine). A history that is not is written as
// porcupine's HTML visualisation under the test's temp dir.
func TestNoLostUpdateManyProcesses(t *testing.T) {
	for _, d := range databases()[1:] {
		t.Run(d.name, func(t *testing.T) { noLostUpdateManyProcesses(t, d) })
	}
}

func noLostUpdateManyProcesses(t *testing.T, d database) {
	name := "ol_" + testkit.RandomHex(6) // named here: the newest ol_ table may be another package's
	db, _ := setup(t, d, offlinelock.Config{Table: name, Models: stressModels})
	dsn := testkit.DSNOf(d.name)
	require.NoError(t, db.Migrator().DropTable(stressModels...))
	require.NoError(t, db.AutoMigrate(stressModels...))
	t.Cleanup(func() { db.Migrator().DropTable(stressModels...) })
	seed := admin(db)
	for k := uint(1); k <= stressKeys; k++ {
		require.NoError(t, seed.Create(&EWCounter{ID: k}).Error)
		require.NoError(t, seed.Create(&ERCounter{ID: k}).Error)
		require.NoError(t, seed.Create(&RWCounter{ID: k}).Error)
		require.NoError(t, seed.Create(&Box{ID: k}).Error)
		for i := uint(1); i <= itemsPerBox; i++ {
			require.NoError(t, seed.Create(&Item{ID: (k-1)*itemsPerBox + i, BoxID: k}).Error)
		}
	}
	seconds := 6.0
	if s, err := strconv.ParseFloat(os.Getenv(stressSecsEnv), 64); err == nil && s > 0 {
		seconds = s
	}
	const procs = 4
	results := make([]workerResult, procs)
	errs := make([]error, procs)
	var wg sync.WaitGroup
	for i := 0; i < procs; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg, _ := json.Marshal(workerConfig{Dialect: d.name, DSN: dsn, Table: name, Proc: i, Seconds: seconds})
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds+120)*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), workerEnv+"="+string(cfg))
			var out, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &stderr
			if err := cmd.Run(); err != nil {
				errs[i] = fmt.Errorf("worker %d: %v: %s", i, err, stderr.String())
				return
			}
			errs[i] = json.Unmarshal(out.Bytes(), &results[i])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}

	done, refused := map[string]int{}, 0
	var calls []call
	for _, r := range results {
		for _, f := range r.Failed {
			t.Error(f)
		}
		for k, n := range r.Done {
			done[k] += n
		}
		refused += r.Refused
		calls = append(calls, r.Calls...)
	}
	exact := true
	check := func(kind string, k uint, got int) {
		if want := done[fmt.Sprintf("%s:%d", kind, k)]; got != want {
			exact = false
			t.Errorf("counter %s:%d is %d, but %d business transactions succeeded on it", kind, k, got, want)
		}
	}
	total := 0
	for _, n := range done {
		total += n
	}
	for k := uint(1); k <= stressKeys; k++ {
		var ew EWCounter
		var er ERCounter
		var rw RWCounter
		require.NoError(t, seed.First(&ew, k).Error)
		require.NoError(t, seed.First(&er, k).Error)
		require.NoError(t, seed.First(&rw, k).Error)
		check("ew", k, ew.N)
		check("er", k, er.N)
		check("rw", k, rw.N)
		for i := uint(1); i <= itemsPerBox; i++ {
			var it Item
			require.NoError(t, seed.First(&it, (k-1)*itemsPerBox+i).Error)
			check("item", it.ID, it.N)
		}
	}
	assert.Positive(t, total)

	linearizable, path := checkLinearizable(t, calls)
	assert.True(t, linearizable, "the lock calls are not linearizable; see %s", path)
	t.Logf("RELIABILITY stress: %d processes x %d sessions x %.0f s on %s: %d business transactions, %d refusals, counters exact: %v; %d lock calls checked linearizable: %v",
		procs, workerRoutines, seconds, d.name, total, refused, exact, len(calls), linearizable)
}

// lockState is the sequential model of one key of the lock table.
type lockState struct {
	writer  string
	readers string // sorted, comma-separated sessions
}

func (s lockState) reads(session string) bool {
	return s.readers != "" && strings.Contains(","+s.readers+",", ","+session+",")
}

func (s lockState) othersRead(session string) bool {
	for _, r := range strings.Split(s.readers, ",") {
		if r != "" && r != session {
			return true
		}
	}
	return false
}

func withReader(readers, session string, add bool) string {
	var out []string
	for _, r := range strings.Split(readers, ",") {
		if r != "" && r != session {
			out = append(out, r)
		}
	}
	if add {
		out = append(out, session)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

var lockModelPorcupine = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(call).Key
			if _, ok := by[k]; !ok {
				keys = append(keys, k)
			}
			by[k] = append(by[k], op)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, by[k])
		}
		return out
	},
	Init: func() any { return lockState{} },
	Step: func(state, input, output any) (bool, any) {
		s, c, ok := state.(lockState), input.(call), output.(bool)
		held := s.writer == c.Session || s.reads(c.Session)
		switch c.Kind {
		case "acquire":
			grantable := !(s.writer != "" && s.writer != c.Session) && !(c.Access == "write" && s.othersRead(c.Session))
			if ok != grantable {
				return false, s
			}
			switch {
			case !ok || s.writer == c.Session:
			case c.Access == "write":
				s = lockState{writer: c.Session}
			default:
				s.readers = withReader(s.readers, c.Session, true)
			}
			return true, s
		case "release":
			if ok != held {
				return false, s
			}
			if s.writer == c.Session {
				s.writer = ""
			}
			s.readers = withReader(s.readers, c.Session, false)
			return true, s
		case "renew":
			return ok == held, s
		}
		return false, s
	},
	DescribeOperation: func(input, output any) string {
		c := input.(call)
		return fmt.Sprintf("%s %s %s -> %v", c.Session, c.Kind, c.Access, output)
	},
	DescribeState: func(state any) string {
		s := state.(lockState)
		return fmt.Sprintf("writer=%q readers=%q", s.writer, s.readers)
	},
}

// checkLinearizable checks calls with porcupine; a failing history is
// written as HTML and its path returned.
func checkLinearizable(t *testing.T, calls []call) (bool, string) {
	ops := make([]porcupine.Operation, len(calls))
	for i, c := range calls {
		ops[i] = porcupine.Operation{ClientId: c.Client, Input: c, Call: c.Call, Output: c.OK, Return: c.Return}
	}
	res, info := porcupine.CheckOperationsVerbose(lockModelPorcupine, ops, 2*time.Minute)
	if res == porcupine.Ok {
		return true, ""
	}
	path := filepath.Join(t.TempDir(), "history.html")
	if err := porcupine.VisualizePath(lockModelPorcupine, info, path); err != nil {
		t.Logf("visualisation: %v", err)
	}
	t.Logf("porcupine says %v; the history is at %s", res, path)
	return false, path
}
