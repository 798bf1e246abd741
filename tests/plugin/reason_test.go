package plugin_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// TestALockKeepsItsReason: the reason given with Acquire is shown with
// the lock (Holders, List); taken again without one it stays, with a new
// one it changes; a lock taken over after expiry shows none; a bad reason
// is ErrInvalid and locks nothing.
func TestALockKeepsItsReason(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		because := func(o offlinelock.Owner, reason string, ttl time.Duration) *gorm.DB {
			return db.WithContext(offlinelock.WithReason(offlinelock.WithTTL(offlinelock.WithOwner(context.Background(), o), ttl), reason))
		}
		reasonOf := func(target any) string {
			h, err := p.Holders(db, target)
			require.NoError(t, err)
			require.Len(t, h, 1)
			return h[0].Reason
		}
		l, err := p.Acquire(because(martin, "editing the price list", time.Second), &Doc{ID: 1}, offlinelock.Write)
		require.NoError(t, err)
		assert.Equal(t, "editing the price list", l.Reason)
		assert.Equal(t, "editing the price list", reasonOf(&Doc{ID: 1}))
		all, err := p.List(db, offlinelock.Filter{Session: martin.Session})
		require.NoError(t, err)
		require.Len(t, all, 1)
		assert.Equal(t, "editing the price list", all[0].Reason)

		_, err = p.Acquire(withTTL(db, martin, time.Second), &Doc{ID: 1}, offlinelock.Write)
		require.NoError(t, err)
		assert.Equal(t, "editing the price list", reasonOf(&Doc{ID: 1}), "taken again without a reason: kept")
		l, err = p.Acquire(because(martin, "checkout", time.Second), &Doc{ID: 1}, offlinelock.Write)
		require.NoError(t, err)
		assert.Equal(t, "checkout", reasonOf(&Doc{ID: 1}), "taken again with one: changed")

		waitPast(t, db, l.ExpiresAt)
		_, err = p.Acquire(as(db, david), &Doc{ID: 1}, offlinelock.Write)
		require.NoError(t, err)
		assert.Empty(t, reasonOf(&Doc{ID: 1}), "taken over: the old holder's reason is not david's")

		_, err = p.Acquire(because(martin, "shared read", time.Minute), &Account{ID: 1}, offlinelock.Read)
		require.NoError(t, err)
		assert.Equal(t, "shared read", reasonOf(&Account{ID: 1}), "a Read lock's reason")

		for _, bad := range []string{strings.Repeat("x", offlinelock.MaxReason+1), "two\nlines", "bell\a", "\xff\xfe"} {
			_, err := p.Acquire(because(martin, bad, time.Minute), &Doc{ID: 2}, offlinelock.Write)
			require.ErrorIs(t, err, offlinelock.ErrInvalid, "%q", bad)
			h, err := p.Holders(db, &Doc{ID: 2})
			require.NoError(t, err)
			assert.Empty(t, h, "a refused reason locked the record")
		}
		_, err = p.Acquire(because(martin, strings.Repeat("é", offlinelock.MaxReason/2), time.Minute), &Doc{ID: 2}, offlinelock.Write)
		require.NoError(t, err, "MaxReason bytes of UTF-8")
		assert.Equal(t, strings.Repeat("é", offlinelock.MaxReason/2), reasonOf(&Doc{ID: 2}))
	})
}

// TestAnOlderLockTableGetsTheReasonColumn: a lock table made before the
// reason column existed gets it at db.Use, and keeps its locks.
func TestAnOlderLockTableGetsTheReasonColumn(t *testing.T) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db := d.open(t)
			table := "ol_old_" + strings.ToLower(d.name)
			require.NoError(t, db.Migrator().DropTable(table))
			t.Cleanup(func() { db.Migrator().DropTable(table) })
			p := offlinelock.New(offlinelock.Config{Table: table})
			require.NoError(t, db.Use(p))
			require.NoError(t, db.Exec("ALTER TABLE "+table+" DROP COLUMN reason").Error, "the table as an older version made it")
			require.False(t, db.Migrator().HasColumn(table, "reason"))

			again := d.open(t)
			if d.name == "sqlite" {
				again = openSQLiteLike(t, db)
			}
			p2 := offlinelock.New(offlinelock.Config{Table: table})
			require.NoError(t, again.Use(p2))
			assert.True(t, again.Migrator().HasColumn(table, "reason"))
			require.NoError(t, again.AutoMigrate(&Doc{}))
			_, err := p2.Acquire(again.WithContext(offlinelock.WithReason(offlinelock.WithOwner(context.Background(), martin), "upgraded")), &Doc{ID: 9}, offlinelock.Write)
			require.NoError(t, err)
			h, err := p2.Holders(again, &Doc{ID: 9})
			require.NoError(t, err)
			require.Len(t, h, 1)
			assert.Equal(t, "upgraded", h[0].Reason)
		})
	}
}
