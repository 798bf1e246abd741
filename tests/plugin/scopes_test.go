package plugin_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// TestScopes: As, For and Bypassed do for one statement what WithOwner,
// WithTTL and Bypass do for a context, on loads and writes.
func TestScopes(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedAccounts(t, db, 2)
		require.ErrorIs(t, db.First(&Account{}, 1).Error, offlinelock.ErrNoOwner, "no owner, no scope")

		var a Account
		before := dbNow(t, db)
		require.NoError(t, db.Scopes(offlinelock.As(martin), offlinelock.For(time.Hour)).First(&a, 1).Error)
		h, err := p.Holders(db, &Account{ID: 1})
		require.NoError(t, err)
		require.Len(t, h, 1)
		assert.Equal(t, martin, h[0].Owner)
		assert.WithinDuration(t, before.Add(time.Hour), h[0].ExpiresAt, time.Minute, "For(time.Hour) set the lock's lifetime")

		require.ErrorIs(t, db.Scopes(offlinelock.As(david)).First(&Account{}, 1).Error, offlinelock.ErrLocked)
		require.ErrorIs(t, db.Scopes(offlinelock.As(david)).Model(&Account{ID: 1}).Update("name", "david's").Error, offlinelock.ErrLocked)
		require.NoError(t, db.Scopes(offlinelock.As(martin)).Model(&Account{ID: 1}).Update("name", "martin's").Error)
		require.NoError(t, db.Model(&Account{}).Scopes(offlinelock.As(martin)).Where("id = ?", 1).Update("credit", 7).Error)

		var b Account
		require.NoError(t, db.Scopes(offlinelock.Bypassed("test: read past the lock")).First(&b, 1).Error)
		assert.Equal(t, Account{ID: 1, Name: "martin's", Credit: 7}, b)
		h, err = p.Holders(db, &Account{ID: 2})
		require.NoError(t, err)
		assert.Empty(t, h)
		var c Account
		require.NoError(t, db.Scopes(offlinelock.Bypassed("test: no lock taken")).First(&c, 2).Error)
		h, err = p.Holders(db, &Account{ID: 2})
		require.NoError(t, err)
		assert.Empty(t, h, "a bypassed load took a lock")

		// The last scope wins over the context it is given, as a later
		// WithOwner would.
		require.ErrorIs(t, as(db, martin).Scopes(offlinelock.As(david)).First(&Account{}, 1).Error, offlinelock.ErrLocked)
	})
}
