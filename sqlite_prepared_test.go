package offlinelock_test

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

// TestSQLiteFoldedSaveRunsPrepared: on SQLite the holder's Save, whose
// fence rides in its UPDATE, runs that UPDATE prepared (kept in the
// store's statement cache) rather than compiled on every call; and the
// prepared statement still checks the lock as it stands at each call: a
// lock taken over or released since the statement was prepared fails the
// save and changes nothing.
func TestSQLiteFoldedSaveRunsPrepared(t *testing.T) {
	db, p := setupModels(t, database{"sqlite", openSQLite}, offlinelock.Config{
		Authorize: func(context.Context, string, offlinelock.Lock) error { return nil }})
	require.NoError(t, admin(db).Create(&Doc{ID: 1, Title: "t"}).Error)
	_, err := p.Acquire(as(db, martin), &Doc{ID: 1}, offlinelock.Write)
	require.NoError(t, err)
	for _, title := range []string{"a", "b", "c"} {
		require.NoError(t, as(db, martin).Save(&Doc{ID: 1, Title: title}).Error)
	}
	require.NoError(t, as(db, martin).Transaction(func(tx *gorm.DB) error {
		return tx.Save(&Doc{ID: 1, Title: "d"}).Error
	}))
	cached, err := offlinelock.SQLiteCachedStatements(p, db)
	require.NoError(t, err)
	folded := 0
	for _, q := range cached {
		if strings.HasPrefix(q, "UPDATE `docs`") && strings.Contains(q, "EXISTS (SELECT 1 FROM") {
			folded++
		}
	}
	assert.Equal(t, 1, folded, "the folded UPDATE, one text for every save of a Doc: %q", cached)

	ops := offlinelock.Owner{Session: "A1", User: "admin"}
	require.NoError(t, p.ForceRelease(as(db, ops), "docs", "1"))
	_, err = p.Acquire(as(db, david), &Doc{ID: 1}, offlinelock.Write)
	require.NoError(t, err)
	var le *offlinelock.LockedError
	if assert.ErrorAs(t, as(db, martin).Save(&Doc{ID: 1, Title: "x"}).Error, &le) && assert.Len(t, le.Holders, 1) {
		assert.Equal(t, david.Session, le.Holders[0].Owner.Session)
	}
	require.NoError(t, p.ForceRelease(as(db, ops), "docs", "1"))
	assert.ErrorIs(t, as(db, martin).Save(&Doc{ID: 1, Title: "y"}).Error, offlinelock.ErrNotLocked)
	var got Doc
	require.NoError(t, admin(db).First(&got, 1).Error)
	assert.Equal(t, "d", got.Title, "no save after the lock was lost landed")
}

// TestSQLiteFoldedSaveOnePooledConnection: with a pool of one connection
// the holder's Save, in GORM's transaction and in the caller's, neither
// waits for a second connection to prepare its UPDATE nor fails.
func TestSQLiteFoldedSaveOnePooledConnection(t *testing.T) {
	db, p := setupModels(t, database{"sqlite", openSQLite}, offlinelock.Config{})
	sqlDB, err := db.DB()
	require.NoError(t, err)
	sqlDB.SetMaxOpenConns(1)
	require.NoError(t, admin(db).Create(&Doc{ID: 1, Title: "t"}).Error)
	ctx, cancel := context.WithTimeout(offlinelock.WithOwner(context.Background(), martin), 10*time.Second)
	defer cancel()
	m := db.WithContext(ctx)
	_, err = p.Acquire(m, &Doc{ID: 1}, offlinelock.Write)
	require.NoError(t, err)
	require.NoError(t, m.Save(&Doc{ID: 1, Title: "a"}).Error)
	require.NoError(t, m.Transaction(func(tx *gorm.DB) error { return tx.Save(&Doc{ID: 1, Title: "b"}).Error }))
	require.NoError(t, m.Save(&Doc{ID: 1, Title: "c"}).Error)
	var got Doc
	require.NoError(t, admin(db).First(&got, 1).Error)
	assert.Equal(t, "c", got.Title)
}
