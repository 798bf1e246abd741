package offlinelock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// TestSQLiteLoadsOfManyKeysDecideAsTheSerialisedPath: a load of several
// keys on SQLite (grantAll: the new keys inserted without RETURNING, the
// others read back) decides every key as the serialised path, which
// decides exactly, does: the session's own locks kept with their
// generation, another session's live lock or reader refused with nothing
// granted, an expired lock taken over, the only reader upgraded, and
// everything undone with the caller's transaction. The same story runs
// through the serialised path alone, and must end the same.
func TestSQLiteLoadsOfManyKeysDecideAsTheSerialisedPath(t *testing.T) {
	type outcome struct {
		refusals []string // the records named by each refusal
		held     []int    // locks per session at the end: Martin, David
	}
	story := func(t *testing.T, grantAll bool) outcome {
		db, p := setupModels(t, database{"sqlite", openSQLite}, offlinelock.Config{})
		offlinelock.SetSQLiteGrantAll(p, db, grantAll)
		seedAccounts(t, db, 200)
		m, d := as(db, martin), as(db, david)
		find := func(s *gorm.DB, lo, hi int) error {
			var got []Account
			err := s.Where("id >= ? AND id <= ?", lo, hi).Find(&got).Error
			if err == nil && len(got) != hi-lo+1 {
				t.Fatalf("found %d rows of %d..%d", len(got), lo, hi)
			}
			return err
		}
		gens := func(s offlinelock.Owner) map[string]int64 {
			out := map[string]int64{}
			locks, err := p.List(db, offlinelock.Filter{Session: s.Session})
			require.NoError(t, err)
			for _, l := range locks {
				out[l.ID] = l.Generation
			}
			return out
		}
		var o outcome
		refused := func(err error) {
			var le *offlinelock.LockedError
			require.True(t, errors.As(err, &le), "want a refusal, got %v", err)
			o.refusals = append(o.refusals, le.Resource+" "+le.ID)
		}

		// Martin's own locks among new keys: kept.
		require.NoError(t, find(m, 1, 10))
		before := gens(martin)
		require.NoError(t, find(m, 1, 100))
		after := gens(martin)
		require.Len(t, after, 100)
		for id, g := range before {
			assert.Equal(t, g, after[id], "account %s keeps its generation", id)
		}
		for id, g := range after {
			if g <= before["10"] && before[id] == 0 {
				t.Errorf("account %s got generation %d, not a fresh one", id, g)
			}
		}
		// David's load over Martin's locks: refused, nothing granted.
		refused(find(d, 51, 150))
		assert.Empty(t, gens(david))

		// An expired lock among them is taken over.
		require.NoError(t, find(withTTL(db, david, 50*time.Millisecond), 101, 110))
		waitPast(t, db, dbNow(t, db).Add(60*time.Millisecond))
		require.NoError(t, find(m, 101, 150))
		assert.Len(t, gens(martin), 150)
		assert.Empty(t, gens(david), "David's expired locks were taken over")

		// A reader among them: refused; the only reader: upgraded.
		_, err := p.Acquire(d, &Account{ID: 160}, offlinelock.Read)
		require.NoError(t, err)
		refused(find(m, 151, 200))
		assert.Len(t, gens(martin), 150)
		_, err = p.Acquire(m, &Account{ID: 170}, offlinelock.Read)
		require.NoError(t, err)
		require.NoError(t, p.Release(d, &Account{ID: 160}))
		require.NoError(t, find(m, 151, 200))
		assert.Len(t, gens(martin), 200)

		// Inside the caller's transaction, and rolled back with it.
		require.NoError(t, p.Release(m, &Account{ID: 1}))
		err = m.Transaction(func(tx *gorm.DB) error {
			require.NoError(t, find(tx, 1, 60))
			return errors.New("roll back")
		})
		require.Error(t, err)
		assert.Len(t, gens(martin), 199, "account 1's lock went with the rollback")

		for _, s := range []offlinelock.Owner{martin, david} {
			o.held = append(o.held, len(gens(s)))
		}
		return o
	}
	var runs []outcome
	for _, c := range []struct {
		name     string
		grantAll bool
	}{{"grantAll", true}, {"serialised", false}} {
		t.Run(c.name, func(t *testing.T) { runs = append(runs, story(t, c.grantAll)) })
	}
	if len(runs) == 2 {
		assert.Equal(t, runs[1].refusals, runs[0].refusals)
		assert.Equal(t, runs[1].held, runs[0].held)
	}
}

// TestSQLiteOnePooledConnection: a pool of one connection, as SQLite
// applications often keep, serves the plugin's prepared statements inside
// and outside a transaction without waiting for a second connection.
func TestSQLiteOnePooledConnection(t *testing.T) {
	db, p := setupModels(t, database{"sqlite", openSQLite}, offlinelock.Config{})
	sqlDB, err := db.DB()
	require.NoError(t, err)
	sqlDB.SetMaxOpenConns(1)
	seedAccounts(t, db, 50)
	ctx, cancel := context.WithTimeout(offlinelock.WithOwner(context.Background(), martin), 10*time.Second)
	defer cancel()
	m := db.WithContext(ctx)
	require.NoError(t, m.Transaction(func(tx *gorm.DB) error {
		var got []Account
		if err := tx.Where("id <= ?", 40).Find(&got).Error; err != nil {
			return err
		}
		_, err := p.Acquire(tx, &Doc{ID: 1}, offlinelock.Write)
		return err
	}))
	var a Account
	require.NoError(t, m.First(&a, 45).Error) // locks
	require.NoError(t, m.First(&a, 45).Error) // the holder's re-read
	var got []Account
	require.NoError(t, m.Find(&got).Error)
	held, err := p.List(m, offlinelock.Filter{Session: martin.Session})
	require.NoError(t, err)
	assert.Len(t, held, 51)
}
