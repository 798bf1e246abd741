package plugin_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

var boss = testkit.Boss

// onlyBossTakesOver is a Config.Authorize that lets boss take over and
// refuses everything else.
func onlyBossTakesOver(ctx context.Context, action string, l offlinelock.Lock) error {
	return testkit.OnlyBossTakesOver(ctx, action, l)
}

func TestTakeOver(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{Authorize: onlyBossTakesOver}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, admin(db).Create(&Doc{ID: 1, Title: "old"}).Error)
		held, err := p.Acquire(as(db, martin), &Doc{ID: 1}, offlinelock.Write)
		require.NoError(t, err)

		_, err = p.TakeOver(as(db, david), &Doc{ID: 1}, "I need it")
		require.ErrorIs(t, err, offlinelock.ErrForbidden, "another user, not allowed")
		holders, err := p.Holders(db, &Doc{ID: 1})
		require.NoError(t, err)
		require.Len(t, holders, 1)
		assert.Equal(t, martin, holders[0].Owner, "a refused take-over changes nothing")
		assert.Equal(t, held.Generation, holders[0].Generation)

		_, err = p.TakeOver(as(db, boss), &Doc{ID: 1}, "bad\x00reason")
		require.ErrorIs(t, err, offlinelock.ErrInvalid)
		_, err = p.TakeOver(db.WithContext(context.Background()), &Doc{ID: 1}, "")
		require.ErrorIs(t, err, offlinelock.ErrNoOwner)
		holders, err = p.Holders(db, &Doc{ID: 1})
		require.NoError(t, err)
		assert.Equal(t, martin, holders[0].Owner, "bad input changes nothing")

		l, err := p.TakeOver(as(db, boss), &Doc{ID: 1}, "martin is on holiday")
		require.NoError(t, err)
		assert.Equal(t, boss, l.Owner)
		assert.Equal(t, offlinelock.Write, l.Access)
		assert.Greater(t, l.Generation, held.Generation)
		assert.NotEmpty(t, l.Token)
		assert.NotEqual(t, held.Token, l.Token)
		assert.Equal(t, "martin is on holiday", l.Reason)

		// The old holder is fenced: its session and its token hold nothing.
		err = as(db, martin).Save(&Doc{ID: 1, Title: "martin's"}).Error
		require.ErrorIs(t, err, offlinelock.ErrLocked)
		_, err = p.LockByToken(db, held.Token)
		require.ErrorIs(t, err, offlinelock.ErrNotLocked)
		require.NoError(t, as(db, boss).Save(&Doc{ID: 1, Title: "boss's"}).Error)
		var got Doc
		require.NoError(t, db.First(&got, 1).Error)
		assert.Equal(t, "boss's", got.Title)

		// The same user in another session (a tab, a reload) needs no
		// permission.
		tab := offlinelock.Owner{Session: "B2", User: "boss"}
		l2, err := p.TakeOver(as(db, tab), &Doc{ID: 1}, "")
		require.NoError(t, err)
		assert.Equal(t, tab, l2.Owner)
		assert.Greater(t, l2.Generation, l.Generation)
		require.ErrorIs(t, as(db, boss).Save(&Doc{ID: 1, Title: "old tab"}).Error, offlinelock.ErrLocked, "the old tab is fenced")

		// A free record is simply locked; the holder's own is renewed.
		free, err := p.TakeOver(as(db, david), &Doc{ID: 2}, "")
		require.NoError(t, err)
		assert.Equal(t, david, free.Owner)
		again, err := p.TakeOver(as(db, david), &Doc{ID: 2}, "")
		require.NoError(t, err)
		assert.Equal(t, free.Generation, again.Generation)
	})
}

// TestTakeOverIfJudgesTheHolderItTakes: the application's policy is asked
// inside the take-over's transaction about the lock it takes, not the one
// the caller saw before: martin's lock, seen by the page, was released and
// david took the record since; a policy that allows taking over martin
// only refuses, david keeps the lock, and the policy's error comes back
// as it is. Locks of the caller's own session are not its to judge.
func TestTakeOverIfJudgesTheHolderItTakes(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, admin(db).Create(&Doc{ID: 1, Title: "old"}).Error)
		_, err := p.Acquire(as(db, martin), &Doc{ID: 1}, offlinelock.Write)
		require.NoError(t, err)
		seen, err := p.Holders(db, &Doc{ID: 1})
		require.NoError(t, err)
		require.Equal(t, martin, seen[0].Owner, "what the page saw")
		require.NoError(t, p.Release(as(db, martin), &Doc{ID: 1}))
		held, err := p.Acquire(as(db, david), &Doc{ID: 1}, offlinelock.Write)
		require.NoError(t, err)

		refused := errors.New("only martin's locks may be taken over")
		var judged []offlinelock.Owner
		onlyMartins := func(h offlinelock.Lock) error {
			judged = append(judged, h.Owner)
			if h.Owner.User != martin.User {
				return refused
			}
			return nil
		}
		mine := offlinelock.Owner{Session: "M2", User: martin.User}
		_, err = p.TakeOverIf(as(db, mine), &Doc{ID: 1}, "", onlyMartins)
		require.ErrorIs(t, err, refused)
		assert.Equal(t, []offlinelock.Owner{david}, judged, "the holder in the transaction")
		holders, err := p.Holders(db, &Doc{ID: 1})
		require.NoError(t, err)
		require.Len(t, holders, 1)
		assert.Equal(t, david, holders[0].Owner)
		assert.Equal(t, held.Generation, holders[0].Generation, "a refused take-over changes nothing")

		require.NoError(t, p.Release(as(db, david), &Doc{ID: 1}))
		_, err = p.Acquire(as(db, martin), &Doc{ID: 1}, offlinelock.Write)
		require.NoError(t, err)
		judged = nil
		l, err := p.TakeOverIf(as(db, mine), &Doc{ID: 1}, "my other tab", onlyMartins)
		require.NoError(t, err)
		assert.Equal(t, mine, l.Owner)
		assert.Equal(t, []offlinelock.Owner{martin}, judged)
		judged = nil
		_, err = p.TakeOverIf(as(db, mine), &Doc{ID: 1}, "", onlyMartins)
		require.NoError(t, err, "its own lock: a renewal")
		assert.Empty(t, judged)
	})
}

func TestRequestEdit(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.ErrorIs(t, p.RequestEdit(as(db, david), &Doc{ID: 1}), offlinelock.ErrNotLocked, "nobody to ask")
		_, err := p.Acquire(as(db, martin), &Doc{ID: 1}, offlinelock.Write)
		require.NoError(t, err)
		require.ErrorIs(t, p.RequestEdit(as(db, martin), &Doc{ID: 1}), offlinelock.ErrHeldByYou)
		require.ErrorIs(t, p.RequestEdit(db.WithContext(context.Background()), &Doc{ID: 1}), offlinelock.ErrNoOwner)
		require.NoError(t, p.RequestEdit(as(db, david), &Doc{ID: 1}))
		holders, err := p.Holders(db, &Doc{ID: 1})
		require.NoError(t, err)
		assert.Equal(t, martin, holders[0].Owner, "asking takes nothing")
	})
}

// next is the next event of ch, within a bound far above the watch
// interval.
func next(t *testing.T, ch <-chan offlinelock.Event) offlinelock.Event { return testkit.Next(t, ch) }

// TestWatchTellsEveryChange: a watch on one node (its own Plugin on the
// same lock table) sees what another node does.
func TestWatchTellsEveryChange(t *testing.T) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			cfg := offlinelock.Config{Authorize: onlyBossTakesOver, WatchEvery: 50 * time.Millisecond}
			db, p := setupModels(t, d, cfg)
			cfg.Table = lockTableOf(p)
			other := secondNode(t, d, db)
			q := offlinelock.New(cfg)
			require.NoError(t, other.Use(q))

			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			events, err := q.Watch(ctx, other, &Doc{ID: 7})
			require.NoError(t, err)
			e := next(t, events)
			assert.Equal(t, offlinelock.EventReleased, e.Kind, "a watch starts with the record's state: free")
			assert.Nil(t, e.Lock)
			assert.Empty(t, e.Reason, "no lock ended")

			held, err := p.Acquire(as(db, martin), &Doc{ID: 7}, offlinelock.Write)
			require.NoError(t, err)
			e = next(t, events)
			assert.Equal(t, offlinelock.EventLocked, e.Kind)
			assert.Equal(t, "7", e.ID)
			assert.Equal(t, martin.User, e.Lock.Owner.User)
			assert.Equal(t, held.Generation, e.Lock.Generation)
			assert.Empty(t, e.Lock.Token, "events never carry tokens")

			require.NoError(t, p.RequestEdit(as(db, david), &Doc{ID: 7}))
			e = next(t, events)
			assert.Equal(t, offlinelock.EventRequested, e.Kind)
			assert.Equal(t, "david", e.By)

			taken, err := p.TakeOver(as(db, boss), &Doc{ID: 7}, "urgent fix")
			require.NoError(t, err)
			e = next(t, events)
			assert.Equal(t, offlinelock.EventTakenOver, e.Kind)
			assert.Equal(t, "boss", e.By)
			assert.Equal(t, "urgent fix", e.Reason)
			assert.Equal(t, taken.Generation, e.Lock.Generation)

			require.NoError(t, p.Release(as(db, boss), &Doc{ID: 7}))
			e = next(t, events)
			assert.Equal(t, offlinelock.EventReleased, e.Kind)
			assert.Equal(t, offlinelock.ReasonReleased, e.Reason)
			assert.Equal(t, taken.Generation, e.Lock.Generation, "the lock that ended")

			// A second watch of the record shares the poll and starts with
			// the lock as it is.
			short, err := p.Acquire(withTTL(db, david, 2*time.Second), &Doc{ID: 7}, offlinelock.Write)
			require.NoError(t, err)
			assert.Equal(t, offlinelock.EventLocked, next(t, events).Kind)
			ctx2, cancel2 := context.WithCancel(context.Background())
			second, err := q.Watch(ctx2, other, &Doc{ID: 7})
			require.NoError(t, err)
			e = next(t, second)
			assert.Equal(t, offlinelock.EventLocked, e.Kind)
			assert.Equal(t, short.Generation, e.Lock.Generation)
			cancel2()
			for range second {
			}

			e = next(t, events)
			assert.Equal(t, offlinelock.EventExpiring, e.Kind, "no renewal came")
			e = next(t, events)
			assert.Equal(t, offlinelock.EventReleased, e.Kind)
			assert.Equal(t, offlinelock.ReasonExpired, e.Reason)

			cancel()
			for range events {
			}
		})
	}
}

func TestWatchBadInput(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		for _, target := range []any{Doc{ID: 1}, &Doc{}, nil} {
			_, err := p.Watch(t.Context(), db, target)
			require.ErrorIs(t, err, offlinelock.ErrInvalid, "%#v", target)
		}
	})
}

// secondNode opens db's database again, as another application node
// would: the same file for SQLite.
func secondNode(t *testing.T, d database, db *gorm.DB) *gorm.DB {
	t.Helper()
	if d.name != "sqlite" {
		return d.open(t)
	}
	var rows []struct{ Name, File string }
	require.NoError(t, db.Raw("PRAGMA database_list").Scan(&rows).Error)
	other, err := gorm.Open(sqlite.Open(offlinelock.SQLiteDSN(rows[0].File)), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	sqlDB, _ := other.DB()
	t.Cleanup(func() { sqlDB.Close() })
	return other
}

// TestTakeOverInTheCallersTransaction: the first TakeOver on a database
// may run in the caller's transaction (the notes table is made then), and
// commits or rolls back with it.
func TestTakeOverInTheCallersTransaction(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{Authorize: onlyBossTakesOver}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		_, err := p.Acquire(as(db, martin), &Doc{ID: 3}, offlinelock.Write)
		require.NoError(t, err)
		rollback := errors.New("rolled back")
		err = as(db, boss).Transaction(func(tx *gorm.DB) error {
			if _, err := p.TakeOver(tx, &Doc{ID: 3}, "in a transaction"); err != nil {
				return err
			}
			return rollback
		})
		require.ErrorIs(t, err, rollback)
		assert.Equal(t, martin, holderOf(t, db, p, &Doc{ID: 3}).Owner, "rolled back with the caller")
		require.NoError(t, as(db, boss).Transaction(func(tx *gorm.DB) error {
			_, err := p.TakeOver(tx, &Doc{ID: 3}, "in a transaction")
			return err
		}))
		assert.Equal(t, boss, holderOf(t, db, p, &Doc{ID: 3}).Owner)
	})
}
