package plugin_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// TestAnExpiredLockSaysWhenItExpired: a write after the session's own lock
// expired is an *ExpiredError (errors.Is ErrExpired and ErrNotLocked)
// naming the record and its expiry; a write never locked is a plain
// ErrNotLocked; a lock taken over since is ErrLocked.
func TestAnExpiredLockSaysWhenItExpired(t *testing.T) {
	writes := []struct {
		name, op string
		write    func(tx *gorm.DB) error
	}{
		{"Save", "update", func(tx *gorm.DB) error { return tx.Save(&Doc{ID: 1, Title: "late"}).Error }},
		{"Model.Update", "update", func(tx *gorm.DB) error { return tx.Model(&Doc{ID: 1}).Update("title", "late").Error }},
		{"Where.Updates", "update", func(tx *gorm.DB) error {
			return tx.Model(&Doc{}).Where("id = ?", 1).Updates(map[string]any{"title": "late"}).Error
		}},
		{"Delete", "delete", func(tx *gorm.DB) error { return tx.Delete(&Doc{ID: 1}).Error }},
	}
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		for _, w := range writes {
			t.Run(w.name, func(t *testing.T) {
				fcReset(t, db, p)
				require.NoError(t, admin(db).Save(&Doc{ID: 1, Title: "draft"}).Error)
				err := w.write(as(db, martin))
				require.ErrorIs(t, err, offlinelock.ErrNotLocked)
				assert.False(t, errors.Is(err, offlinelock.ErrExpired), "never locked is not expired: %v", err)

				l, err := p.Acquire(withTTL(db, martin, time.Second), &Doc{ID: 1}, offlinelock.Write)
				require.NoError(t, err)
				waitPast(t, db, l.ExpiresAt)
				err = w.write(as(db, martin))
				require.ErrorIs(t, err, offlinelock.ErrExpired)
				require.ErrorIs(t, err, offlinelock.ErrNotLocked)
				var ee *offlinelock.ExpiredError
				require.ErrorAs(t, err, &ee)
				assert.Equal(t, "docs", ee.Resource)
				assert.Equal(t, "1", ee.ID)
				assert.Equal(t, w.op, ee.Op)
				assert.WithinDuration(t, l.ExpiresAt, ee.ExpiredAt, time.Millisecond)
				assert.Contains(t, err.Error(), "expired at "+l.ExpiresAt.UTC().Format("2006-01-02 15:04:05"))
				var d Doc
				require.NoError(t, admin(db).First(&d, 1).Error)
				assert.Equal(t, "draft", d.Title, "the refused write changed the row")

				_, err = p.Acquire(as(db, david), &Doc{ID: 1}, offlinelock.Write)
				require.NoError(t, err)
				require.ErrorIs(t, w.write(as(db, martin)), offlinelock.ErrLocked, "taken over since")
			})
		}
	})
}
