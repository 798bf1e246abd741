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

var reprice = offlinelock.Owner{Session: "job:reprice:1", User: "reprice job"}

// TestDo: the job helper takes the lock, runs the edit in a transaction,
// renews the lock while it runs, releases it with the edit, refuses a
// record a person holds at once, and cancels the edit when the lock is
// lost.
func TestDo(t *testing.T) {
	allow := func(context.Context, string, offlinelock.Lock) error { return nil }
	eachDBWithModels(t, offlinelock.Config{Authorize: allow}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		title := func() string {
			var d Doc
			require.NoError(t, admin(db).First(&d, 1).Error)
			return d.Title
		}
		jobLocks := func() int {
			l, err := p.List(db, offlinelock.Filter{Session: reprice.Session})
			require.NoError(t, err)
			return len(l)
		}
		reset := func() {
			fcReset(t, db, p)
			_, err := p.ReleaseAll(db, reprice.Session)
			require.NoError(t, err)
			require.NoError(t, admin(db).Save(&Doc{ID: 1, Title: "draft"}).Error)
		}

		t.Run("the edit lands and the lock is released with it", func(t *testing.T) {
			reset()
			err := p.Do(as(db, reprice), &Doc{ID: 1}, func(tx *gorm.DB) error {
				return tx.Model(&Doc{ID: 1}).Update("title", "repriced").Error
			})
			require.NoError(t, err)
			assert.Equal(t, "repriced", title())
			assert.Zero(t, jobLocks())
		})
		t.Run("a record a person holds is refused at once", func(t *testing.T) {
			reset()
			_, err := p.Acquire(as(db, martin), &Doc{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			ran := false
			err = p.Do(as(db, reprice), &Doc{ID: 1}, func(*gorm.DB) error { ran = true; return nil })
			require.ErrorIs(t, err, offlinelock.ErrLocked)
			assert.False(t, ran)
			assert.Equal(t, "draft", title())
		})
		t.Run("a failed edit rolls back and releases", func(t *testing.T) {
			reset()
			boom := errors.New("boom")
			err := p.Do(as(db, reprice), &Doc{ID: 1}, func(tx *gorm.DB) error {
				require.NoError(t, tx.Model(&Doc{ID: 1}).Update("title", "half").Error)
				return boom
			})
			require.ErrorIs(t, err, boom)
			assert.Equal(t, "draft", title())
			assert.Zero(t, jobLocks())
		})
		t.Run("a panicking edit releases the lock and stops the renewal", func(t *testing.T) {
			reset()
			func() {
				defer func() { assert.Equal(t, "edit panics", recover()) }()
				p.Do(withTTL(db, reprice, 900*time.Millisecond), &Doc{ID: 1}, func(*gorm.DB) error { panic("edit panics") })
			}()
			assert.Zero(t, jobLocks(), "the lock of a panicking edit")
			_, err := p.Acquire(as(db, martin), &Doc{ID: 1}, offlinelock.Write)
			require.NoError(t, err, "nobody renews it any more")
		})
		t.Run("a cancelled caller's context still releases", func(t *testing.T) {
			reset()
			ctx, cancel := context.WithCancel(offlinelock.WithOwner(context.Background(), reprice))
			err := p.Do(db.WithContext(ctx), &Doc{ID: 1}, func(*gorm.DB) error { cancel(); return ctx.Err() })
			require.ErrorIs(t, err, context.Canceled)
			assert.Zero(t, jobLocks())
		})
		t.Run("a lock held before is used and kept", func(t *testing.T) {
			reset()
			_, err := p.Acquire(as(db, reprice), &Doc{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			require.NoError(t, p.Do(as(db, reprice), &Doc{ID: 1}, func(tx *gorm.DB) error {
				return tx.Model(&Doc{ID: 1}).Update("title", "kept").Error
			}))
			assert.Equal(t, "kept", title())
			assert.Equal(t, 1, jobLocks(), "the session's own lock, held before Do")
		})
		t.Run("no edit", func(t *testing.T) {
			require.ErrorIs(t, p.Do(as(db, reprice), &Doc{ID: 1}, nil), offlinelock.ErrInvalid)
		})
		t.Run("the lock is renewed while the edit runs", func(t *testing.T) {
			if db.Dialector.Name() == "sqlite" {
				return // SQLite's write transaction excludes the renewal: the lock must outlive the edit (Do's doc)
			}
			reset()
			job := withTTL(db, reprice, 1500*time.Millisecond)
			err := p.Do(job, &Doc{ID: 1}, func(tx *gorm.DB) error {
				h, err := p.Holders(db, &Doc{ID: 1})
				require.NoError(t, err)
				require.Len(t, h, 1)
				waitPast(t, db, h[0].ExpiresAt) // the first expiry has passed: only renewal keeps the lock
				return tx.Model(&Doc{ID: 1}).Update("title", "slow but held").Error
			})
			require.NoError(t, err)
			assert.Equal(t, "slow but held", title())
		})
		t.Run("a lost lock cancels the edit", func(t *testing.T) {
			if db.Dialector.Name() == "sqlite" {
				return // the edit's write transaction excludes every other writer: nobody can take the lock
			}
			reset()
			job := withTTL(db, reprice, 900*time.Millisecond)
			err := p.Do(job, &Doc{ID: 1}, func(tx *gorm.DB) error {
				require.NoError(t, p.ForceRelease(db, "docs", "1"))
				_, err := p.Acquire(as(db, martin), &Doc{ID: 1}, offlinelock.Write)
				require.NoError(t, err)
				select {
				case <-tx.Statement.Context.Done(): // the renewer saw the loss
				case <-time.After(10 * time.Second):
					t.Fatal("the edit's context was not cancelled")
				}
				return tx.Model(&Doc{ID: 1}).Update("title", "too late").Error
			})
			require.ErrorIs(t, err, offlinelock.ErrLockLost)
			require.ErrorIs(t, err, offlinelock.ErrNotLocked)
			assert.Equal(t, "draft", title())
			h, err := p.Holders(db, &Doc{ID: 1})
			require.NoError(t, err)
			require.Len(t, h, 1)
			assert.Equal(t, martin, h[0].Owner, "the failed job released martin's lock")
		})
	})
}
