package plugin_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// TestRequestEditIsToldOnceAndBounded: asking again for the same lock
// within a minute tells the holder nothing more (one note, one event), a
// new lock of the record may be asked for again, and one user's requests
// past RequestsPerMinute are ErrTooManyRequests, writing nothing.
func TestRequestEditIsToldOnceAndBounded(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		notes := func() (n int64) {
			require.NoError(t, db.Table(lockTableOf(p)+"_notes").Where("kind = ?", "requested").Count(&n).Error)
			return n
		}
		for id := uint(1); id <= offlinelock.RequestsPerMinute+1; id++ {
			_, err := p.Acquire(as(db, martin), &Doc{ID: id}, offlinelock.Write)
			require.NoError(t, err)
		}
		require.NoError(t, p.RequestEdit(as(db, david), &Doc{ID: 1}))
		require.NoError(t, p.RequestEdit(as(db, david), &Doc{ID: 1}), "asked again")
		require.Equal(t, int64(1), notes(), "told once")

		require.NoError(t, p.Release(as(db, martin), &Doc{ID: 1}))
		_, err := p.Acquire(as(db, martin), &Doc{ID: 1}, offlinelock.Write)
		require.NoError(t, err)
		require.NoError(t, p.RequestEdit(as(db, david), &Doc{ID: 1}), "a new lock")
		require.Equal(t, int64(2), notes())

		for id := uint(2); id < offlinelock.RequestsPerMinute; id++ {
			require.NoError(t, p.RequestEdit(as(db, david), &Doc{ID: id}))
		}
		require.Equal(t, int64(offlinelock.RequestsPerMinute), notes())
		err = p.RequestEdit(as(db, david), &Doc{ID: offlinelock.RequestsPerMinute})
		require.ErrorIs(t, err, offlinelock.ErrTooManyRequests)
		require.Equal(t, int64(offlinelock.RequestsPerMinute), notes(), "a refused request writes nothing")
		require.NoError(t, p.RequestEdit(as(db, eve), &Doc{ID: offlinelock.RequestsPerMinute}), "another user")
	})
}

var eve = offlinelock.Owner{Session: "E1", User: "eve"}

// TestWatchTellsANoteCommittedLate: a take-over whose transaction commits
// after a later note (its id is smaller than one a poll has already read)
// is still told as a take-over, not as a release and a new lock.
// PostgreSQL and MariaDB: SQLite runs one writing transaction at a time.
func TestWatchTellsANoteCommittedLate(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := setupModels(t, d, offlinelock.Config{Authorize: onlyBossTakesOver, WatchEvery: 20 * time.Millisecond})
			for _, id := range []uint{1, 2} {
				_, err := p.Acquire(as(db, martin), &Doc{ID: id}, offlinelock.Write)
				require.NoError(t, err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			one, err := p.Watch(ctx, db, &Doc{ID: 1})
			require.NoError(t, err)
			two, err := p.Watch(ctx, db, &Doc{ID: 2})
			require.NoError(t, err)
			require.Equal(t, offlinelock.EventLocked, next(t, one).Kind)
			require.Equal(t, offlinelock.EventLocked, next(t, two).Kind)

			tx := as(db, boss).Begin()
			require.NoError(t, tx.Error)
			taken, err := p.TakeOver(tx, &Doc{ID: 1}, "late")
			require.NoError(t, err, "its note has the smaller id, uncommitted")
			require.NoError(t, p.RequestEdit(as(db, david), &Doc{ID: 2}))
			e := next(t, two)
			require.Equal(t, offlinelock.EventRequested, e.Kind, "a poll has read the later note")
			require.NoError(t, tx.Commit().Error)

			e = next(t, one)
			assert.Equal(t, offlinelock.EventTakenOver, e.Kind)
			assert.Equal(t, "boss", e.By)
			assert.Equal(t, "late", e.Reason)
			assert.Equal(t, taken.Generation, e.Lock.Generation)
			cancel()
			for range one {
			}
			for range two {
			}
		})
	}
}

// TestNotesTableMadeByManyAtOnce: the first Watch of several nodes at once
// each finds the notes table missing and makes it; PostgreSQL fails the
// second of two CREATE TABLEs at once, which must not fail that Watch (the
// browser scene's events stream failed so, now and then).
func TestNotesTableMadeByManyAtOnce(t *testing.T) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			cfg := offlinelock.Config{}
			db, p := setupModels(t, d, cfg)
			cfg.Table = lockTableOf(p)
			const nodes = 6
			plugins := make([]*offlinelock.Plugin, nodes)
			dbs := make([]*gorm.DB, nodes)
			for i := range nodes {
				dbs[i] = secondNode(t, d, db)
				plugins[i] = offlinelock.New(cfg)
				require.NoError(t, dbs[i].Use(plugins[i]))
			}
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			start := make(chan struct{})
			errs := make(chan error, nodes)
			for i := range nodes {
				go func() {
					<-start
					_, err := plugins[i].Watch(ctx, dbs[i], &Doc{ID: 7})
					errs <- err
				}()
			}
			close(start)
			for range nodes {
				require.NoError(t, <-errs)
			}
		})
	}
}
