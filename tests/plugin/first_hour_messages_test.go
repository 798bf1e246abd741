package plugin_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/offlinelock/offlinelock"
)

// SlipDoc has its lock tag inside the gorm tag, where the plugin never
// reads it.
type SlipDoc struct {
	ID    uint `gorm:"primaryKey;lock:exclusive_write"`
	Title string
}

// BadModeDoc names a mode that does not exist.
type BadModeDoc struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive"`
	Title string
}

// TestFirstHourMessages holds the first words of each error a new user
// meets in the first hour, and the way out each one names, on every
// database: a lock tag the plugin does not read, a mode that does not
// exist, no owner on a write and on a lock call, a record someone else
// holds, a write without a lock, an expired lock, and the guard's refusal
// as psql or mariadb shows it. (The command's connection and privilege
// messages: cmd/offlinelock's open_test.go and readonly_test.go.)
func TestFirstHourMessages(t *testing.T) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := setupModels(t, d, offlinelock.Config{})
			require.NoError(t, admin(db).Create(&Doc{ID: 1, Title: "a"}).Error)
			_, err := p.Acquire(withTTL(db, martin, 2*time.Second), &Doc{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			require.NoError(t, admin(db).Create(&Doc{ID: 2, Title: "free"}).Error)
			models := func(m any) error {
				return d.open(t).Use(offlinelock.New(offlinelock.Config{Table: "ol_" + randomHex(6), Models: []any{m}}))
			}

			cases := []struct {
				name  string
				err   func() error
				is    error
				first string // the message's first words
				way   string // the way out it names
			}{
				{"slipped tag", func() error { return models(&SlipDoc{}) }, offlinelock.ErrInvalid,
					"offlinelock: invalid input: slip_docs is not lockable: no lock tag on its primary key (model SlipDoc;",
					"write it as a tag of its own, `gorm:\"primaryKey\" lock:\"exclusive_write\"`"},
				{"unknown mode", func() error { return models(&BadModeDoc{}) }, offlinelock.ErrInvalid,
					"offlinelock: invalid input: ", "exclusive_write"},
				{"no owner on a write", func() error { return db.WithContext(context.Background()).Save(&Doc{ID: 1, Title: "x"}).Error },
					offlinelock.ErrNoOwner, "offlinelock: no owner in context: the update of docs needs the session that owns the locks",
					"db.WithContext(offlinelock.WithOwner(ctx, owner))"},
				{"no owner on Acquire", func() error {
					_, err := p.Acquire(db.WithContext(context.Background()), &Doc{ID: 1}, offlinelock.Write)
					return err
				}, offlinelock.ErrNoOwner, "offlinelock: no owner in context: this call needs the session that owns the locks", "offlinelock.Bypass(ctx, reason)"},
				{"held by another", func() error {
					_, err := p.Acquire(as(db, david), &Doc{ID: 1}, offlinelock.Write)
					return err
				}, offlinelock.ErrLocked, "docs 1 is locked by martin since ", " until "},
				{"a write of someone else's record", func() error { return as(db, david).Save(&Doc{ID: 1, Title: "x"}).Error },
					offlinelock.ErrLocked, "docs 1 is locked by martin since ", " until "},
				{"a write without a lock", func() error { return as(db, david).Save(&Doc{ID: 2, Title: "x"}).Error },
					offlinelock.ErrNotLocked, "offlinelock: ", "Acquire"},
			}
			for _, c := range cases {
				err := c.err()
				require.ErrorIs(t, err, c.is, c.name)
				assert.True(t, strings.HasPrefix(err.Error(), c.first), "%s: %q does not begin %q", c.name, err, c.first)
				assert.Contains(t, err.Error(), c.way, c.name)
			}

			if d.name != "sqlite" { // the guard's refusal, as a client without the plugin sees it
				require.NoError(t, p.InstallGuard(db))
				err := d.open(t).Exec("UPDATE docs SET title = 'z' WHERE id = 1").Error
				require.Error(t, err)
				assert.Contains(t, err.Error(), "OL423")
				assert.Contains(t, err.Error(), "offlinelock: docs 1 is locked by martin ")
				assert.Contains(t, err.Error(), " until ")
			}

			waitPast(t, db, holderOf(t, db, p, &Doc{ID: 1}).ExpiresAt)
			err = as(db, martin).Save(&Doc{ID: 1, Title: "late"}).Error
			require.ErrorIs(t, err, offlinelock.ErrExpired)
			assert.True(t, strings.HasPrefix(err.Error(), "offlinelock: the lock of this session on docs 1 expired at "), err.Error())
			assert.Contains(t, err.Error(), "take it again with Acquire, and reload the record")
		})
	}
}
