package plugin_test

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

// nextOf is the next event of ch of kind, passing over expiring events (a
// short lease's warning may come first).
func nextOf(t *testing.T, ch <-chan offlinelock.Event, kind offlinelock.EventKind) offlinelock.Event {
	t.Helper()
	for {
		e := next(t, ch)
		if e.Kind == offlinelock.EventExpiring && kind != offlinelock.EventExpiring {
			continue
		}
		require.Equal(t, kind, e.Kind, "%+v", e)
		return e
	}
}

// TestReleasedSaysWhy: a watch starts with the record's state (released,
// without a lock or a reason, for a free record), and each released
// event says how the lock ended: released by its holder (or by
// ReleaseAll), its session ended (EndSession), an admin removed it (ForceRelease), its lease ran
// out, or was cut by its holder (Shorten) and ran out; the event carries
// the generation of the lock that ended.
func TestReleasedSaysWhy(t *testing.T) {
	onlyBoss := func(ctx context.Context, action string, _ offlinelock.Lock) error {
		if o, _ := offlinelock.OwnerFrom(ctx); o.User == boss.User {
			return nil
		}
		return errors.New("boss only")
	}
	eachDBWithModels(t, offlinelock.Config{Authorize: onlyBoss, WatchEvery: 20 * time.Millisecond}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		events, err := p.Watch(ctx, db, &Doc{ID: 1})
		require.NoError(t, err)
		first := nextOf(t, events, offlinelock.EventReleased)
		assert.Nil(t, first.Lock)
		assert.Empty(t, first.Reason)

		for _, c := range []struct {
			reason string
			ttl    time.Duration
			end    func(l *offlinelock.Lock)
		}{
			{offlinelock.ReasonReleased, time.Minute, func(*offlinelock.Lock) {
				require.NoError(t, p.Release(as(db, martin), &Doc{ID: 1}))
			}},
			{offlinelock.ReasonReleased, time.Minute, func(*offlinelock.Lock) { // ReleaseAll notes nothing: a bounded number of statements
				n, err := p.ReleaseAll(as(db, martin), martin.Session)
				require.NoError(t, err)
				assert.EqualValues(t, 1, n)
			}},
			{offlinelock.ReasonSignedOut, time.Minute, func(*offlinelock.Lock) {
				_, err := p.EndSession(as(db, david), martin.Session)
				require.ErrorIs(t, err, offlinelock.ErrForbidden, "another session's end is an admin's")
				n, err := p.EndSession(as(db, martin), martin.Session)
				require.NoError(t, err)
				assert.EqualValues(t, 1, n)
			}},
			{offlinelock.ReasonForceReleased, time.Minute, func(*offlinelock.Lock) {
				require.ErrorIs(t, p.ForceRelease(as(db, david), "docs", "1"), offlinelock.ErrForbidden, "refused: nothing noted")
				require.NoError(t, p.ForceRelease(as(db, boss), "docs", "1"))
			}},
			{offlinelock.ReasonExpired, time.Second, func(l *offlinelock.Lock) { waitPast(t, db, l.ExpiresAt) }},
			{offlinelock.ReasonExpired, time.Minute, func(*offlinelock.Lock) {
				cut, _, err := p.Shorten(as(db, martin), &Doc{ID: 1}, time.Second)
				require.NoError(t, err)
				waitPast(t, db, cut.ExpiresAt)
			}},
		} {
			l, err := p.Acquire(withTTL(db, martin, c.ttl), &Doc{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			assert.Equal(t, l.Generation, nextOf(t, events, offlinelock.EventLocked).Lock.Generation)
			c.end(l)
			e := nextOf(t, events, offlinelock.EventReleased)
			assert.Equal(t, c.reason, e.Reason)
			require.NotNil(t, e.Lock, c.reason)
			assert.Equal(t, l.Generation, e.Lock.Generation, c.reason)
		}
		// A ReleaseAll of a session that holds nothing tells nothing, and
		// the released record stays told as free.
		_, err = p.ReleaseAll(as(db, martin), martin.Session)
		require.NoError(t, err)
		second, err := p.Watch(ctx, db, &Doc{ID: 1})
		require.NoError(t, err)
		assert.Equal(t, offlinelock.EventReleased, nextOf(t, second, offlinelock.EventReleased).Kind)
	})
}

// TestAFloodOfRequestsHidesNoTakeOver: more requests to edit than one
// poll reads (here 1,100 notes of another record within the minute a
// poll looks back on) neither delay nor hide a take-over of a watched
// record: take-overs are read apart from requests.
func TestAFloodOfRequestsHidesNoTakeOver(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{Authorize: onlyBossTakesOver, WatchEvery: 50 * time.Millisecond}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		_, err := p.Acquire(as(db, martin), &Doc{ID: 1}, offlinelock.Write)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		events, err := p.Watch(ctx, db, &Doc{ID: 1})
		require.NoError(t, err)
		require.Equal(t, offlinelock.EventLocked, next(t, events).Kind)

		flood(t, db, p, "2", "u", 1100)

		taken, err := p.TakeOver(as(db, boss), &Doc{ID: 1}, "urgent")
		require.NoError(t, err)
		e := nextOf(t, events, offlinelock.EventTakenOver)
		assert.Equal(t, taken.Generation, e.Lock.Generation)
		assert.Equal(t, "urgent", e.Reason)
		assert.WithinDuration(t, time.Now(), e.At, 2*time.Second, "told within the 2 s promise")
	})
}

// nextViewers is the next EventViewers of ch, passing over lock events.
func nextViewers(t *testing.T, ch <-chan offlinelock.Event) []string {
	t.Helper()
	for {
		e := next(t, ch)
		if e.Kind != offlinelock.EventViewers {
			continue
		}
		var users []string
		for _, v := range e.Viewers {
			users = append(users, v.User)
			assert.False(t, v.Since.IsZero())
		}
		return users
	}
}

// TestViewersAreTold: a View is told to every Watch of the record, on
// any node, as the list of users who have it open (each once, in the
// order they came); a View that ends is gone at the next poll; bad input
// is refused and views nothing.
func TestViewersAreTold(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{WatchEvery: 50 * time.Millisecond}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		events, err := p.Watch(ctx, db, &Doc{ID: 1})
		require.NoError(t, err)
		require.Equal(t, offlinelock.EventReleased, next(t, events).Kind)

		require.ErrorIs(t, p.View(ctx, db, &Doc{ID: 1}, ""), offlinelock.ErrInvalid)
		require.ErrorIs(t, p.View(ctx, db, &Doc{ID: 1}, "bad\x00name"), offlinelock.ErrInvalid)

		martinViews, endMartin := context.WithCancel(ctx)
		require.NoError(t, p.View(martinViews, db, &Doc{ID: 1}, "martin"))
		assert.Equal(t, []string{"martin"}, nextViewers(t, events))
		davidViews, endDavid := context.WithCancel(ctx)
		require.NoError(t, p.View(davidViews, db, &Doc{ID: 1}, "david"))
		require.NoError(t, p.View(davidViews, db, &Doc{ID: 1}, "david"), "a second tab of david's")
		assert.Equal(t, []string{"martin", "david"}, nextViewers(t, events))
		require.NoError(t, p.View(ctx, db, &Doc{ID: 2}, "eve"), "another record's viewer is not told here")

		// A second watch of the record starts with the record's state and
		// its viewers.
		second, err := p.Watch(ctx, db, &Doc{ID: 1})
		require.NoError(t, err)
		assert.Equal(t, offlinelock.EventReleased, next(t, second).Kind)
		assert.Equal(t, []string{"martin", "david"}, nextViewers(t, second))

		endMartin()
		assert.Equal(t, []string{"david"}, nextViewers(t, events))
		endDavid()
		assert.Empty(t, nextViewers(t, events), "nobody has it open")
	})
}

// TestAViewerWhoseNodeStoppedIsGone: a view whose node stopped refreshing
// it (its process died: the row stays) no longer counts after
// ViewerGone.
func TestAViewerWhoseNodeStoppedIsGone(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{WatchEvery: 50 * time.Millisecond}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		require.NoError(t, p.View(ctx, db, &Doc{ID: 1}, "martin")) // makes the table
		type viewer struct {
			ID, Resource, LockID, UserName string
			Since, Seen                    time.Time
		}
		stale := time.Now().UTC().Add(-offlinelock.ViewerGone - time.Second)
		require.NoError(t, db.Table(lockTableOf(p)+"_viewers").Create(&viewer{ID: "dead-node-view", Resource: "docs", LockID: "1",
			UserName: "david", Since: stale, Seen: stale}).Error)
		events, err := p.Watch(ctx, db, &Doc{ID: 1})
		require.NoError(t, err)
		assert.Equal(t, []string{"martin"}, nextViewers(t, events), "the stopped node's viewer does not count")
	})
}

// TestATakeOverShorterThanAPollIsToldAsTheReason: a take-over whose own
// lock ended before a poll saw it (taken over and released in one
// transaction here) is the reason of the old lock's release, naming who
// took it.
func TestATakeOverShorterThanAPollIsToldAsTheReason(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{Authorize: onlyBossTakesOver, WatchEvery: 50 * time.Millisecond}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		held, err := p.Acquire(as(db, martin), &Doc{ID: 1}, offlinelock.Write)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		events, err := p.Watch(ctx, db, &Doc{ID: 1})
		require.NoError(t, err)
		require.Equal(t, offlinelock.EventLocked, next(t, events).Kind)

		require.NoError(t, as(db, boss).Transaction(func(tx *gorm.DB) error {
			if _, err := p.TakeOver(tx, &Doc{ID: 1}, "quick fix"); err != nil {
				return err
			}
			return p.Release(tx, &Doc{ID: 1})
		}))
		e := nextOf(t, events, offlinelock.EventReleased)
		assert.Equal(t, offlinelock.ReasonTakenOver, e.Reason)
		assert.Equal(t, boss.User, e.By)
		assert.Equal(t, held.Generation, e.Lock.Generation, "martin's lock ended")
	})
}

// TestANewWatchIsToldOfATakeOver: a watch added to a watched record just
// before a take-over is told it as a take-over (who, why), whether the
// poll that sees the take-over is also the one that tells the new watch
// its first event (the record's state, which is then that take-over) or
// a later one.
func TestANewWatchIsToldOfATakeOver(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{Authorize: onlyBossTakesOver, WatchEvery: time.Second}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		held, err := p.Acquire(as(db, martin), &Doc{ID: 1}, offlinelock.Write)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		first, err := p.Watch(ctx, db, &Doc{ID: 1})
		require.NoError(t, err)
		require.Equal(t, offlinelock.EventLocked, next(t, first).Kind)

		events, err := p.Watch(ctx, db, &Doc{ID: 1}) // told by the next poll
		require.NoError(t, err)
		taken, err := p.TakeOver(as(db, boss), &Doc{ID: 1}, "urgent")
		require.NoError(t, err)
		e := next(t, events)
		if e.Kind == offlinelock.EventLocked { // a poll came between the watch and the take-over
			require.Equal(t, held.Generation, e.Lock.Generation, "%+v", e)
			e = nextOf(t, events, offlinelock.EventTakenOver)
		}
		require.Equal(t, offlinelock.EventTakenOver, e.Kind, "%+v", e)
		assert.Equal(t, []any{boss.User, "urgent", taken.Generation}, []any{e.By, e.Reason, e.Lock.Generation})
		assert.Equal(t, offlinelock.EventTakenOver, nextOf(t, first, offlinelock.EventTakenOver).Kind, "the first watch too")
	})
}
