package plugin_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// TestSQLiteSixteenSessionsNeverSeeBusy: sixteen sessions on one SQLite
// file opened with offlinelock.SQLiteDSN, in two pools (two processes'
// worth: each its own *gorm.DB and plugin on the same lock table), each
// running a bounded number of business transactions (Acquire, verified
// Save and Release of a document; a locked First and the holder's Save;
// a locked Find of 40 rows inside a transaction; a Read lock), all at
// once. Every error must be a refusal (ErrLocked): "database is locked"
// (SQLITE_BUSY) must never reach a caller.
func TestSQLiteSixteenSessionsNeverSeeBusy(t *testing.T) {
	const (
		pools, perPool = 2, 8
		rounds         = 30
		accounts, docs = 64, 8
	)
	path := filepath.Join(t.TempDir(), "busy.db")
	table := "ol_" + randomHex(6)
	var dbs []*gorm.DB
	var plugins []*offlinelock.Plugin
	for range pools {
		db, err := gorm.Open(sqlite.Open(offlinelock.SQLiteDSN(path)), &gorm.Config{Logger: logger.Discard})
		require.NoError(t, err)
		sqlDB, err := db.DB()
		require.NoError(t, err)
		t.Cleanup(func() { sqlDB.Close() })
		db, p := setupOn(t, db, offlinelock.Config{Table: table})
		dbs, plugins = append(dbs, db), append(plugins, p)
	}
	require.NoError(t, dbs[0].AutoMigrate(&Account{}, &Doc{}, &Policy{}))
	seedAccounts(t, dbs[0], accounts)
	for i := uint(1); i <= docs; i++ {
		require.NoError(t, admin(dbs[0]).Create(&Doc{ID: i, Title: "doc"}).Error)
		require.NoError(t, admin(dbs[0]).Create(&Policy{ID: i, Name: "policy"}).Error)
	}

	var (
		mu       sync.Mutex
		failures []error
		done     = map[string]int{}
		wg       sync.WaitGroup
		start    = make(chan struct{})
	)
	fail := func(op string, err error) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, fmt.Errorf("%s: %w", op, err))
	}
	count := func(op string) {
		mu.Lock()
		defer mu.Unlock()
		done[op]++
	}
	// refused says whether err is a refusal, the one error a session may
	// meet here; anything else is a failure.
	refused := func(op string, err error) bool {
		if err == nil {
			count(op)
			return false
		}
		if errors.Is(err, offlinelock.ErrLocked) {
			count(op + " refused")
			return true
		}
		fail(op, err)
		return true
	}
	for w := range pools * perPool {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, p := dbs[w%pools], plugins[w%pools]
			owner := offlinelock.Owner{Session: fmt.Sprintf("S%d", w), User: fmt.Sprintf("user%d", w)}
			s := as(db, owner)
			rng := rand.New(rand.NewPCG(uint64(w), 24))
			<-start
			for range rounds {
				switch rng.IntN(4) {
				case 0: // Acquire, verified Save, Release
					d := &Doc{ID: uint(1 + rng.IntN(docs))}
					if _, err := p.Acquire(s, d, offlinelock.Write); !refused("acquire", err) {
						d.Title = owner.Session
						if !refused("save", s.Save(d).Error) {
							refused("release", p.Release(s, d))
						}
					}
				case 1: // a locked First, then the holder's Save
					var a Account
					if !refused("first", s.First(&a, 1+rng.IntN(accounts)).Error) {
						a.Credit++
						refused("held save", s.Save(&a).Error)
					}
				case 2: // a locked Find of 40 rows in the caller's transaction
					lo := 1 + rng.IntN(accounts-40)
					refused("find in tx", s.Transaction(func(tx *gorm.DB) error {
						var got []Account
						if err := tx.Where("id >= ? AND id < ?", lo, lo+40).Find(&got).Error; err != nil {
							return err
						}
						if len(got) != 40 {
							return fmt.Errorf("found %d rows", len(got))
						}
						return tx.Model(&got[0]).Update("credit", got[0].Credit+1).Error
					}))
				case 3: // a Read lock
					_, err := p.Acquire(s, &Policy{ID: uint(1 + rng.IntN(docs))}, offlinelock.Read)
					refused("read", err)
				}
				if _, err := p.ReleaseAll(s, owner.Session); err != nil {
					fail("release all", err)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	busy := 0
	for _, err := range failures {
		if msg := strings.ToLower(err.Error()); strings.Contains(msg, "database is locked") || strings.Contains(msg, "busy") {
			busy++
		}
		t.Error(err)
	}
	require.Zero(t, busy, "SQLITE_BUSY reached a caller")
	left, err := plugins[0].List(dbs[0], offlinelock.Filter{})
	require.NoError(t, err)
	require.Empty(t, left, "every lock was released")
	t.Logf("%d sessions x %d rounds: %v", pools*perPool, rounds, done)
}
