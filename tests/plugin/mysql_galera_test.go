package plugin_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// TestMySQLGalera: sessions on the three nodes of a Galera cluster load
// overlapping sets of accounts at once. A load that lost certification at
// COMMIT (1213) was rolled back whole and is counted, not failed.
//
// The overlapping loads failed with grants by the one-statement upsert of
// grantBulk (a node gave a record a generation below its last one, and
// two sessions held one record at once): on Galera the store keeps the
// serialised path, which takes generations after it has read the key
// rows with a locking read.
func TestMySQLGalera(t *testing.T) {
	dbs, ps := galeraNodes(t)
	require.NoError(t, dbs[0].AutoMigrate(&Account{}))
	seedAccounts(t, dbs[0], 40)

	t.Run("one winner when two nodes load the same rows at once", func(t *testing.T) {
		// The loser's transaction is often rolled back by its node while
		// its SELECT of the accounts runs (the applier of the winner's
		// write set needs its key rows): MariaDB reports that as a
		// warning, returns the rows, and the COMMIT that follows has
		// nothing to commit. Before the store read its grants back, both
		// loads succeeded within a few hundred rounds, the loser holding
		// nothing (internal/lockstore/galera.go).
		for round := 0; round < 200; round++ {
			ids := []int{1 + round%40, 1 + (round+7)%40, 1 + (round+13)%40}
			var wg sync.WaitGroup
			errs := make([]error, 2)
			start := make(chan struct{})
			for n := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					o := offlinelock.Owner{Session: fmt.Sprintf("W%d-%d", round, n), User: "w"}
					errs[n] = as(dbs[n], o).Where("id IN ?", ids).Find(&[]Account{}).Error
				}()
			}
			close(start)
			wg.Wait()
			for n, err := range errs {
				session := fmt.Sprintf("W%d-%d", round, n)
				held, lerr := ps[n].List(as(dbs[n], offlinelock.Owner{Session: session, User: "w"}), offlinelock.Filter{Session: session})
				require.NoError(t, lerr)
				if err == nil {
					// A load that returned holds every row it read, on
					// its own node, where its commit was applied.
					require.Len(t, held, len(ids), "round %d: node %d's load returned without its locks", round, n+1)
					continue
				}
				require.Empty(t, held, "round %d: node %d's refused load", round, n+1)
				if !errors.Is(err, offlinelock.ErrLocked) && !strings.Contains(err.Error(), "1213") && !errors.Is(err, offlinelock.ErrTxLost) {
					t.Fatalf("round %d: node %d: %v", round, n+1, err)
				}
			}
			require.False(t, errs[0] == nil && errs[1] == nil, "round %d: both loads returned", round)
			for n := range 2 {
				_, err := ps[n].ReleaseAll(dbs[n], fmt.Sprintf("W%d-%d", round, n))
				require.NoError(t, err)
			}
		}
	})

	t.Run("a write guarded by @@in_transaction runs in a transaction only", func(t *testing.T) {
		// What the store's lock-table writes on Galera count on
		// (galeraPutConflict): a statement that runs after its
		// transaction was rolled back runs in autocommit mode, where
		// @@in_transaction is 0, and the guard fails it.
		sqlDB, err := dbs[0].DB()
		require.NoError(t, err)
		_, err = sqlDB.Exec("CREATE TABLE galera_guard (k INT PRIMARY KEY, v BIGINT NOT NULL)")
		require.NoError(t, err)
		_, err = sqlDB.Exec("INSERT INTO galera_guard VALUES (1, 0)")
		require.NoError(t, err)
		guarded := "INSERT INTO galera_guard VALUES (1, ?) ON DUPLICATE KEY UPDATE v = IF(@@in_transaction = 1, VALUES(v), 9223372036854775807 + (v >= 0))"
		_, err = sqlDB.Exec(guarded, 2)
		require.ErrorContains(t, err, "Error 1690")
		tx, err := sqlDB.Begin()
		require.NoError(t, err)
		_, err = tx.Exec(guarded, 3)
		require.NoError(t, err)
		require.NoError(t, tx.Commit())
		var v int64
		require.NoError(t, sqlDB.QueryRow("SELECT v FROM galera_guard WHERE k = 1").Scan(&v))
		require.Equal(t, int64(3), v)
	})

	t.Run("overlapping loads on three nodes", func(t *testing.T) {
		manyRowLoads(t, dbs, ps, "galera")
	})
}

// TestMySQLLoadsOfManyRowsOverlap is TestMySQLGalera's overlapping loads
// on one server, each "node" a connection pool of the plugin's.
func TestMySQLLoadsOfManyRowsOverlap(t *testing.T) {
	db, p := setupModels(t, mysqlDatabase(), offlinelock.Config{})
	seedAccounts(t, db, 24)
	manyRowLoads(t, []*gorm.DB{db, db, db}, []*offlinelock.Plugin{p, p, p}, "one server")
}

// manyRowLoads: no account is ever held by two sessions, and each
// account's generation only grows, whichever node granted it.
func manyRowLoads(t *testing.T, dbs []*gorm.DB, ps []*offlinelock.Plugin, where string) {
	const rows, sessions = 24, 9
	for i, db := range dbs {
		var n int64
		require.NoError(t, db.Connection(func(c *gorm.DB) error {
			if err := c.Exec("SET SESSION wsrep_sync_wait = 1").Error; err != nil && !strings.Contains(err.Error(), "1193") {
				return err // 1193: not a Galera node
			}
			return admin(c).Raw("SELECT COUNT(*) FROM accounts").Scan(&n).Error
		}))
		require.GreaterOrEqual(t, n, int64(rows), "node %d sees the accounts", i+1)
	}
	var (
		holder    [rows + 1]atomic.Int64
		lastGen   [rows + 1]atomic.Int64
		loads     atomic.Int64
		refusals  atomic.Int64
		conflicts atomic.Int64
		failures  = make(chan error, sessions)
		deadline  = time.Now().Add(4 * time.Second)
		wg        sync.WaitGroup
	)
	for w := 1; w <= sessions; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := w % len(dbs)
			o := offlinelock.Owner{Session: fmt.Sprintf("G%d", w), User: fmt.Sprintf("g%d", w)}
			s, p := as(dbs[n], o), ps[n]
			rng := rand.New(rand.NewPCG(uint64(w), 24))
			for time.Now().Before(deadline) {
				ids := rng.Perm(rows)[:2+rng.IntN(4)]
				for i := range ids {
					ids[i]++
				}
				var got []Account
				err := s.Where("id IN ?", ids).Find(&got).Error
				switch {
				case errors.Is(err, offlinelock.ErrLocked):
					refusals.Add(1)
					continue
				case err != nil && (strings.Contains(err.Error(), "1213") || errors.Is(err, offlinelock.ErrTxLost)):
					conflicts.Add(1)
					continue
				case err != nil:
					failures <- fmt.Errorf("node %d: %w", n+1, err)
					return
				}
				loads.Add(1)
				held, err := p.List(s, offlinelock.Filter{Session: o.Session})
				if err != nil {
					failures <- err
					return
				}
				if len(held) != len(ids) {
					// A load that returned holds every row it read.
					failures <- fmt.Errorf("node %d: a load of accounts %v returned holding %d locks", n+1, ids, len(held))
				}
				for _, l := range held {
					var id int
					fmt.Sscan(l.ID, &id)
					if !holder[id].CompareAndSwap(0, int64(w)) {
						failures <- fmt.Errorf("account %d held by sessions %d and %d", id, holder[id].Load(), w)
					}
					if prev := lastGen[id].Swap(l.Generation); l.Generation <= prev {
						failures <- fmt.Errorf("account %d granted generation %d after %d", id, l.Generation, prev)
					}
				}
				for _, l := range held {
					var id int
					fmt.Sscan(l.ID, &id)
					holder[id].Store(0)
				}
				if _, err := p.ReleaseAll(s, o.Session); err != nil {
					failures <- fmt.Errorf("node %d release all: %w", n+1, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(failures)
	for err := range failures {
		t.Error(err)
	}
	assert.Positive(t, loads.Load())
	t.Logf("%s: %d sessions on 3 pools: %d loads, %d refusals, %d certification conflicts", where, sessions, loads.Load(), refusals.Load(), conflicts.Load())
}
