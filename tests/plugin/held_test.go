package plugin_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// TestHoldersReReadIsOneStatement: once a session holds a record's lock
// (Write for exclusive_read, Read for read_write), its re-read by key is
// the read alone, on every store.
func TestHoldersReReadIsOneStatement(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, admin(db).Create(&Account{ID: 1, Name: "a", Credit: 1}).Error)
		require.NoError(t, admin(db).Create(&Policy{ID: 1, Name: "p"}).Error)
		for _, target := range []any{&Account{}, &Policy{}} {
			require.NoError(t, as(db, martin).First(target, 1).Error)
			c := &counter{Interface: logger.Discard}
			require.NoError(t, as(db, martin).Session(&gorm.Session{Logger: c}).First(target, 1).Error)
			assert.EqualValues(t, 1, c.N.Load(), "%T: the re-read is one statement", target)
		}
		// The one statement still checks: the lock taken away, the same
		// re-read is refused.
		require.NoError(t, admin(db).Exec("DELETE FROM "+lockTableName(t, db, p)).Error)
		require.NoError(t, as(db, david).First(&Account{}, 1).Error)
		require.ErrorIs(t, as(db, martin).First(&Account{}, 1).Error, offlinelock.ErrLocked)
	})
}

// TestHoldersReReadInATransactionSeesTheLatestLock: a re-read inside a
// transaction whose snapshot still shows the session's lock is refused
// once the lock was broken and taken by another session: the check reads
// the latest committed lock row, not the snapshot (InnoDB's REPEATABLE
// READ, the default on MySQL).
func TestHoldersReReadInATransactionSeesTheLatestLock(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			cfg := offlinelock.Config{Table: "ol_" + randomHex(6), Authorize: func(ctx context.Context, _ string, _ offlinelock.Lock) error {
				if o, _ := offlinelock.OwnerFrom(ctx); o.User == "admin" {
					return nil
				}
				return errors.New("admins only")
			}}
			db, _ := setupModels(t, d, cfg)
			other, q := setup(t, d, cfg) // another node: this node's hint stays
			require.NoError(t, admin(db).Create(&Account{ID: 1, Name: "a", Credit: 1}).Error)
			require.NoError(t, as(db, martin).First(&Account{}, 1).Error, "Martin holds the lock")
			err := as(db, martin).Transaction(func(tx *gorm.DB) error {
				// A plain read begins the transaction's snapshot (InnoDB),
				// which shows Martin's lock; it locks no lock row.
				require.NoError(t, tx.Find(&[]Customer{}).Error)
				require.NoError(t, q.ForceRelease(as(other, offlinelock.Owner{Session: "A1", User: "admin"}), "accounts", "1"))
				require.NoError(t, as(other, david).First(&Account{}, 1).Error)
				return tx.First(&Account{}, 1).Error
			})
			require.ErrorIs(t, err, offlinelock.ErrLocked)
		})
	}
}
