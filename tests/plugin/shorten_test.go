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

// TestShortenCutsTheHoldersLease: Shorten sets the holder's Write lock to
// end ttl from now on the database clock (what a page that is left asks
// for), returns the stored expiry and the lease left, never lengthens a
// lease, and changes nothing for anyone but the holder or for bad input.
func TestShortenCutsTheHoldersLease(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		held, err := p.Acquire(withTTL(db, martin, 10*time.Minute), &Doc{ID: 1}, offlinelock.Write)
		require.NoError(t, err)
		stored := func() offlinelock.Lock {
			t.Helper()
			hs, err := p.Holders(db, &Doc{ID: 1})
			require.NoError(t, err)
			require.Len(t, hs, 1)
			return hs[0]
		}
		before := stored()

		// Bad input and other sessions change nothing.
		for name, call := range map[string]struct {
			db   *gorm.DB
			ttl  time.Duration
			want error
		}{
			"another user":             {as(db, david), time.Second, offlinelock.ErrNotLocked},
			"the same user, other tab": {as(db, offlinelock.Owner{Session: "M2", User: martin.User}), time.Second, offlinelock.ErrNotLocked},
			"a zero ttl":               {as(db, martin), 0, offlinelock.ErrInvalid},
			"a negative ttl":           {as(db, martin), -time.Second, offlinelock.ErrInvalid},
			"no owner":                 {db.WithContext(context.Background()), time.Second, offlinelock.ErrNoOwner},
		} {
			l, left, err := p.Shorten(call.db, &Doc{ID: 1}, call.ttl)
			require.ErrorIs(t, err, call.want, name)
			assert.Nil(t, l, name)
			assert.Zero(t, left, name)
			assert.Equal(t, before, stored(), "%s: the lock is unchanged", name)
		}

		// A longer lease than the one left is no cut: the lease stands.
		l, left, err := p.Shorten(as(db, martin), &Doc{ID: 1}, time.Hour)
		require.NoError(t, err)
		assert.Equal(t, before.ExpiresAt, l.ExpiresAt)
		assert.Greater(t, left, 9*time.Minute)
		assert.LessOrEqual(t, left, 10*time.Minute)

		// The holder's cut: the stored expiry is now+2s on the database's
		// clock, and what Shorten returns is what is stored.
		start := dbNow(t, db)
		l, left, err = p.Shorten(as(db, martin), &Doc{ID: 1}, 2*time.Second)
		end := dbNow(t, db)
		require.NoError(t, err)
		after := stored()
		assert.Equal(t, after.ExpiresAt, l.ExpiresAt, "the stored expiry")
		assert.False(t, l.ExpiresAt.Before(start.Add(2*time.Second-time.Millisecond)), "%v is before %v+2s", l.ExpiresAt, start)
		assert.False(t, l.ExpiresAt.After(end.Add(2*time.Second)), "%v is after %v+2s", l.ExpiresAt, end)
		assert.Greater(t, left, time.Duration(0))
		assert.LessOrEqual(t, left, 2*time.Second)
		assert.Equal(t, held.Generation, l.Generation, "the same lock")
		assert.Equal(t, martin, l.Owner)
		assert.Empty(t, l.Token, "never a token")
		byToken, err := p.LockByToken(db, held.Token)
		require.NoError(t, err, "the holder's token still stands")
		assert.Equal(t, l.ExpiresAt, byToken.ExpiresAt)

		// Still the holder's until then, free for anyone after.
		_, err = p.Acquire(as(db, david), &Doc{ID: 1}, offlinelock.Write)
		require.ErrorIs(t, err, offlinelock.ErrLocked)
		waitPast(t, db, l.ExpiresAt)
		taken, err := p.Acquire(as(db, david), &Doc{ID: 1}, offlinelock.Write)
		require.NoError(t, err)
		assert.Greater(t, taken.Generation, held.Generation)
		_, _, err = p.Shorten(as(db, martin), &Doc{ID: 1}, time.Second)
		require.ErrorIs(t, err, offlinelock.ErrNotLocked, "an ended lock is not cut")

		// A Read lock is not a lease Shorten cuts.
		_, err = p.Acquire(as(db, martin), &Doc{ID: 2}, offlinelock.Read)
		require.NoError(t, err)
		_, _, err = p.Shorten(as(db, martin), &Doc{ID: 2}, time.Second)
		require.ErrorIs(t, err, offlinelock.ErrNotLocked)
	})
}
