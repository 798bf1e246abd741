package offlinelock_test

// The explicit API on the lock table: Acquire (one winner, idempotent,
// shared reads and upgrades, expiry on the database clock, TTL caps),
// Release, ReleaseAll, Renew, Sweep, Holders, List and ForceRelease, inside
// transactions, against bad and hostile input, with secret tokens.

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

type Line struct {
	OrderID string `gorm:"primaryKey"`
	No      int    `gorm:"primaryKey"`
}

func TestConcurrentAcquireHasExactlyOneWinner(t *testing.T) {
	eachDB(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		const n = 16
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				o := offlinelock.Owner{Session: "S" + string(rune('a'+i)), User: "u"}
				_, errs[i] = p.Acquire(as(db, o), &Customer{ID: 129}, offlinelock.Write)
			}()
		}
		close(start)
		wg.Wait()
		won := 0
		for _, err := range errs {
			if err == nil {
				won++
				continue
			}
			var le *offlinelock.LockedError
			require.ErrorAs(t, err, &le, "a loser must get a *LockedError, got %v", err)
			assert.ErrorIs(t, err, offlinelock.ErrLocked)
			require.Len(t, le.Holders, 1)
		}
		assert.Equal(t, 1, won)
	})
}

func TestReacquireIsIdempotentAndExtends(t *testing.T) {
	eachDB(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		for _, access := range []offlinelock.Access{offlinelock.Write, offlinelock.Read} {
			c := &Customer{ID: 1}
			if access == offlinelock.Read {
				c.ID = 2
			}
			first, err := p.Acquire(withTTL(db, martin, time.Minute), c, access)
			require.NoError(t, err)
			again, err := p.Acquire(withTTL(db, martin, time.Hour), c, access)
			require.NoError(t, err)
			assert.Empty(t, again.Token, "%s: the table has only the token's hash, so a re-acquire cannot return it", access)
			byToken, err := p.LockByToken(db, first.Token)
			require.NoError(t, err, "%s: the first token still stands", access)
			assert.Equal(t, first.Generation, byToken.Generation, access)
			assert.Equal(t, first.Generation, again.Generation, access)
			assert.Equal(t, first.AcquiredAt, again.AcquiredAt, access)
			assert.True(t, again.ExpiresAt.After(first.ExpiresAt.Add(50*time.Minute)), "%s: expiry extended", access)
			h, err := p.Holders(db, c)
			require.NoError(t, err)
			assert.Len(t, h, 1, access)
		}
	})
}

func TestReleaseThenAnotherAcquires(t *testing.T) {
	eachDB(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		for _, access := range []offlinelock.Access{offlinelock.Write, offlinelock.Read} {
			c := &Customer{ID: 129}
			first, err := p.Acquire(as(db, martin), c, access)
			require.NoError(t, err)
			_, err = p.Acquire(as(db, david), c, offlinelock.Write)
			require.ErrorIs(t, err, offlinelock.ErrLocked)
			require.NoError(t, p.Release(as(db, martin), c))
			second, err := p.Acquire(as(db, david), c, offlinelock.Write)
			require.NoError(t, err)
			assert.Greater(t, second.Generation, first.Generation)
			assert.NotEqual(t, first.Token, second.Token)
			require.NoError(t, p.Release(as(db, david), c))
		}
	})
}

func TestSharedReadsAndUpgrade(t *testing.T) {
	eachDB(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		c := &Customer{ID: 129}
		_, err := p.Acquire(as(db, martin), c, offlinelock.Read)
		require.NoError(t, err)
		davidRead, err := p.Acquire(as(db, david), c, offlinelock.Read)
		require.NoError(t, err, "reads are shared")
		h, err := p.Holders(db, c)
		require.NoError(t, err)
		assert.Len(t, h, 2)

		// Both readers want to upgrade: both are refused, neither waits.
		for _, o := range []offlinelock.Owner{martin, david} {
			_, err := p.Acquire(as(db, o), c, offlinelock.Write)
			var le *offlinelock.LockedError
			require.ErrorAs(t, err, &le, o.User)
			require.Len(t, le.Holders, 1)
			assert.NotEqual(t, o.Session, le.Holders[0].Owner.Session, "the refusal names the other reader")
		}

		// Martin closes the page; David is now the only reader and upgrades.
		require.NoError(t, p.Release(as(db, martin), c))
		w, err := p.Acquire(as(db, david), c, offlinelock.Write)
		require.NoError(t, err)
		assert.Equal(t, offlinelock.Write, w.Access)
		assert.Empty(t, w.Token, "an upgrade keeps the Read lock's token, which only David has")
		byToken, err := p.LockByToken(db, davidRead.Token)
		require.NoError(t, err)
		assert.Equal(t, offlinelock.Write, byToken.Access, "the Read lock's token now stands for the Write lock")
		assert.Equal(t, w.Generation, byToken.Generation)

		// While David writes, Martin cannot even read.
		_, err = p.Acquire(as(db, martin), c, offlinelock.Read)
		var le *offlinelock.LockedError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, offlinelock.Read, le.Wanted)
		assert.Equal(t, "david", le.Holders[0].Owner.User)

		// A writer asking for Read keeps its Write lock.
		r, err := p.Acquire(as(db, david), c, offlinelock.Read)
		require.NoError(t, err)
		assert.Equal(t, offlinelock.Write, r.Access)
		assert.Empty(t, r.Token)
		assert.Equal(t, w.Generation, r.Generation)
	})
}

func TestReleaseByNonHolderIsRefused(t *testing.T) {
	eachDB(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		c := &Customer{ID: 129}
		require.ErrorIs(t, p.Release(as(db, david), c), offlinelock.ErrNotLocked, "nobody holds it")
		_, err := p.Acquire(as(db, martin), c, offlinelock.Write)
		require.NoError(t, err)
		require.ErrorIs(t, p.Release(as(db, david), c), offlinelock.ErrNotLocked)
		h, err := p.Holders(db, c)
		require.NoError(t, err)
		require.Len(t, h, 1, "the holder keeps the lock")
		assert.Equal(t, martin, h[0].Owner)
		require.ErrorIs(t, p.Release(db, c), offlinelock.ErrNoOwner)
	})
}

func TestExpiredLockIsTakenOver(t *testing.T) {
	eachDB(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		for _, access := range []offlinelock.Access{offlinelock.Write, offlinelock.Read} {
			c := &Customer{ID: 7}
			old, err := p.Acquire(withTTL(db, martin, 100*time.Millisecond), c, access)
			require.NoError(t, err)
			waitPast(t, db, old.ExpiresAt)
			taken, err := p.Acquire(as(db, david), c, offlinelock.Write)
			require.NoError(t, err, access)
			assert.Greater(t, taken.Generation, old.Generation)
			assert.NotEqual(t, old.Token, taken.Token)
			h, err := p.Holders(db, c)
			require.NoError(t, err)
			require.Len(t, h, 1)
			assert.Equal(t, david, h[0].Owner)
			// Martin's lock is gone: releasing it is an error, and David keeps his.
			require.ErrorIs(t, p.Release(as(db, martin), c), offlinelock.ErrNotLocked)
			h, err = p.Holders(db, c)
			require.NoError(t, err)
			require.Len(t, h, 1)
			require.NoError(t, p.Release(as(db, david), c))
		}
	})
}

func TestExpiryIsOnTheDatabaseClock(t *testing.T) {
	eachDB(t, offlinelock.Config{TTL: 10 * time.Minute}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		before := dbNow(t, db)
		l, err := p.Acquire(as(db, martin), &Customer{ID: 1}, offlinelock.Write)
		require.NoError(t, err)
		after := dbNow(t, db)
		assert.False(t, l.AcquiredAt.Before(before.Add(-time.Millisecond)), "acquired %v before %v", l.AcquiredAt, before)
		assert.False(t, l.AcquiredAt.After(after.Add(time.Millisecond)), "acquired %v after %v", l.AcquiredAt, after)
		assert.InDelta(t, (10 * time.Minute).Seconds(), l.ExpiresAt.Sub(l.AcquiredAt).Seconds(), 0.01)
	})
}

func TestTTLIsCappedAndMustBePositive(t *testing.T) {
	eachDB(t, offlinelock.Config{MaxTTL: time.Hour}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		l, err := p.Acquire(withTTL(db, martin, 48*time.Hour), &Customer{ID: 1}, offlinelock.Write)
		require.NoError(t, err)
		assert.InDelta(t, time.Hour.Seconds(), l.ExpiresAt.Sub(l.AcquiredAt).Seconds(), 0.01)
		for _, ttl := range []time.Duration{0, -time.Second} {
			_, err := p.Acquire(withTTL(db, martin, ttl), &Customer{ID: 2}, offlinelock.Write)
			require.ErrorIs(t, err, offlinelock.ErrInvalid, ttl)
		}
	})
}

func TestReleaseAllAndRenew(t *testing.T) {
	eachDB(t, offlinelock.Config{TTL: time.Minute}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		for i := uint(1); i <= 3; i++ {
			_, err := p.Acquire(as(db, martin), &Customer{ID: i}, offlinelock.Write)
			require.NoError(t, err)
		}
		r, err := p.Acquire(as(db, martin), &Customer{ID: 4}, offlinelock.Read)
		require.NoError(t, err)
		_, err = p.Acquire(as(db, david), &Customer{ID: 4}, offlinelock.Read)
		require.NoError(t, err)
		_, err = p.Acquire(as(db, david), &Customer{ID: 5}, offlinelock.Write)
		require.NoError(t, err)

		n, err := p.Renew(withTTL(db, martin, time.Hour), "M1")
		require.NoError(t, err)
		assert.EqualValues(t, 4, n)
		mine, err := p.List(db, offlinelock.Filter{Session: "M1"})
		require.NoError(t, err)
		require.Len(t, mine, 4)
		for _, l := range mine {
			assert.True(t, l.ExpiresAt.After(r.ExpiresAt.Add(50*time.Minute)), "renewed %s %s", l.Resource, l.ID)
		}

		// Another session may not renew or release Martin's locks.
		_, err = p.Renew(as(db, david), "M1")
		require.ErrorIs(t, err, offlinelock.ErrForbidden)
		_, err = p.ReleaseAll(as(db, david), "M1")
		require.ErrorIs(t, err, offlinelock.ErrForbidden)

		n, err = p.ReleaseAll(as(db, martin), "M1")
		require.NoError(t, err)
		assert.EqualValues(t, 4, n)
		left, err := p.List(db, offlinelock.Filter{})
		require.NoError(t, err)
		require.Len(t, left, 2, "David's locks stay")
		for _, l := range left {
			assert.Equal(t, david, l.Owner)
		}
		// The application itself (no owner: a session-expiry job) may release.
		n, err = p.ReleaseAll(db, "D1")
		require.NoError(t, err)
		assert.EqualValues(t, 2, n)
	})
}

func TestRenewLeavesExpiredLocksExpired(t *testing.T) {
	eachDB(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		l, err := p.Acquire(withTTL(db, martin, 50*time.Millisecond), &Customer{ID: 1}, offlinelock.Write)
		require.NoError(t, err)
		waitPast(t, db, l.ExpiresAt)
		n, err := p.Renew(as(db, martin), "M1")
		require.NoError(t, err)
		assert.Zero(t, n)
		h, err := p.Holders(db, &Customer{ID: 1})
		require.NoError(t, err)
		assert.Empty(t, h)
	})
}

func TestSweepDeletesOnlyExpiredRows(t *testing.T) {
	eachDB(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		for i := uint(1); i <= 5; i++ {
			_, err := p.Acquire(withTTL(db, martin, 50*time.Millisecond), &Customer{ID: i}, offlinelock.Write)
			require.NoError(t, err)
		}
		read, err := p.Acquire(withTTL(db, martin, 50*time.Millisecond), &Customer{ID: 6}, offlinelock.Read)
		require.NoError(t, err)
		_, err = p.Acquire(as(db, david), &Customer{ID: 7}, offlinelock.Write)
		require.NoError(t, err)
		// Past the last of the six, the reader (taken after the writes:
		// on a loaded machine more than 60 ms after them).
		waitPast(t, db, read.ExpiresAt.Add(60*time.Millisecond))

		expired, err := p.List(db, offlinelock.Filter{Expired: true})
		require.NoError(t, err)
		assert.Len(t, expired, 6)
		n, err := p.Sweep(db)
		require.NoError(t, err)
		assert.EqualValues(t, 7, n, "5 write locks, 1 reader and its key row")
		expired, err = p.List(db, offlinelock.Filter{Expired: true})
		require.NoError(t, err)
		assert.Empty(t, expired)
		live, err := p.List(db, offlinelock.Filter{})
		require.NoError(t, err)
		require.Len(t, live, 1)
		assert.Equal(t, "7", live[0].ID)
	})
}

// TestSweepDeletesEveryExpiredRowAcrossBatches sweeps more expired rows
// than many batches delete, beside live rows and a live lock taken during
// the fill; on PostgreSQL a run of 1,200 rows shares one expiry, so that
// batches (which resume from the last expiry they deleted) end inside it.
func TestSweepDeletesEveryExpiredRowAcrossBatches(t *testing.T) {
	eachDB(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		table := lockTableName(t, db, p)
		fill(t, db, table, "expired", "", 2500, -time.Hour)
		fill(t, db, table, "live", "", 300, time.Hour)
		if db.Dialector.Name() == "postgres" {
			require.NoError(t, admin(db).Exec(`UPDATE `+table+` SET expires_at = statement_timestamp() - interval '1 hour'
WHERE resource = 'expired' AND lock_id::int BETWEEN 650 AND 1849`).Error)
		}
		_, err := p.Acquire(as(db, martin), &Customer{ID: 1}, offlinelock.Write)
		require.NoError(t, err)

		n, err := p.Sweep(db)
		require.NoError(t, err)
		assert.EqualValues(t, 2500, n)
		var left []struct {
			Resource string
			N        int64
		}
		require.NoError(t, admin(db).Raw(`SELECT resource, COUNT(*) AS n FROM `+table+` WHERE access <> '' GROUP BY resource ORDER BY resource`).Scan(&left).Error)
		assert.Equal(t, []struct {
			Resource string
			N        int64
		}{{"customers", 1}, {"live", 300}}, left)
	})
}

// TestSweepLeavesTheCallersCommitDurable: the sweep's own batches commit
// without waiting for the WAL flush, but a Sweep run in a transaction of
// the caller's leaves that transaction's commit as the caller set it.
func TestSweepLeavesTheCallersCommitDurable(t *testing.T) {
	db, p := setup(t, database{"postgres", openPostgres}, offlinelock.Config{})
	_, err := p.Acquire(withTTL(db, martin, 50*time.Millisecond), &Customer{ID: 1}, offlinelock.Write)
	require.NoError(t, err)
	waitPast(t, db, dbNow(t, db).Add(60*time.Millisecond))
	var setting string
	require.NoError(t, db.Transaction(func(tx *gorm.DB) error {
		n, err := p.Sweep(tx)
		if err != nil {
			return err
		}
		assert.EqualValues(t, 1, n)
		return tx.Raw(`SHOW synchronous_commit`).Scan(&setting).Error
	}))
	assert.Equal(t, "on", setting)
}

// TestSweepPlanDoesNotDependOnStatistics: on a lock table just filled with
// expired rows (no planner statistics) and after ANALYZE, a sweep batch
// reads the expired rows by the expiry index, in its order, and records by
// primary key: never a bitmap scan that reads every expired row and sorts
// them for each batch, never a sequential scan.
func TestSweepPlanDoesNotDependOnStatistics(t *testing.T) {
	db, p := setup(t, database{"postgres", openPostgres}, offlinelock.Config{})
	table := lockTableName(t, db, p)
	fill(t, db, table, "expired", "", 100_000, -time.Hour)
	for _, stats := range []string{"none", "ANALYZE"} {
		if stats == "ANALYZE" {
			require.NoError(t, db.Exec(`ANALYZE `+table).Error)
		}
		plan, err := offlinelock.SweepPlan(p, db)
		require.NoError(t, err)
		assert.Contains(t, plan, "Index Scan using "+strings.Trim(table, `"`)+"_expires", stats)
		assert.NotContains(t, plan, "Bitmap", stats)
		assert.NotContains(t, plan, "Seq Scan", stats)
	}
	n, err := p.Sweep(db)
	require.NoError(t, err)
	assert.EqualValues(t, 100_000, n)
}

func TestForceRelease(t *testing.T) {
	var logs bytes.Buffer
	cfg := offlinelock.Config{
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Authorize: func(ctx context.Context, action string, l offlinelock.Lock) error {
			if o, _ := offlinelock.OwnerFrom(ctx); o.User == "admin" && action == "force_release" {
				return nil
			}
			return errors.New("admins only")
		},
	}
	admin := offlinelock.Owner{Session: "A1", User: "admin"}
	eachDB(t, cfg, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		logs.Reset()
		c := &Customer{ID: 129}
		l, err := p.Acquire(as(db, martin), c, offlinelock.Write)
		require.NoError(t, err)

		err = p.ForceRelease(as(db, david), "customers", "129")
		require.ErrorIs(t, err, offlinelock.ErrForbidden)
		h, _ := p.Holders(db, c)
		require.Len(t, h, 1, "a refused force release changes nothing")
		assert.Contains(t, logs.String(), "refused")

		require.NoError(t, p.ForceRelease(as(db, admin), "customers", "129"))
		h, _ = p.Holders(db, c)
		assert.Empty(t, h)
		out := logs.String()
		assert.Contains(t, out, "by_user=admin")
		assert.Contains(t, out, "holder_user=martin")
		assert.Contains(t, out, "resource=customers")
		assert.NotContains(t, out, l.Token, "tokens are never logged")

		require.ErrorIs(t, p.ForceRelease(as(db, admin), "customers", "129"), offlinelock.ErrNotLocked)
	})
	t.Run("without Authorize nobody may", func(t *testing.T) {
		db, p := setup(t, databases()[0], offlinelock.Config{})
		_, err := p.Acquire(as(db, martin), &Customer{ID: 1}, offlinelock.Write)
		require.NoError(t, err)
		require.ErrorIs(t, p.ForceRelease(as(db, admin), "customers", "1"), offlinelock.ErrForbidden)
	})
}

func TestLockInRolledBackTransactionIsGone(t *testing.T) {
	eachDB(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		for _, access := range []offlinelock.Access{offlinelock.Write, offlinelock.Read} {
			rollback := errors.New("rollback")
			err := as(db, martin).Transaction(func(tx *gorm.DB) error {
				_, err := p.Acquire(tx, &Customer{ID: 129}, access)
				require.NoError(t, err)
				h, err := p.Holders(tx, &Customer{ID: 129})
				require.NoError(t, err)
				require.Len(t, h, 1, "visible inside the transaction")
				return rollback
			})
			require.ErrorIs(t, err, rollback)
			h, err := p.Holders(db, &Customer{ID: 129})
			require.NoError(t, err)
			assert.Empty(t, h, access)
			_, err = p.Acquire(as(db, david), &Customer{ID: 129}, offlinelock.Write)
			require.NoError(t, err)
			require.NoError(t, p.Release(as(db, david), &Customer{ID: 129}))
		}
	})
}

func TestReleaseCommitsWithTheSave(t *testing.T) {
	eachDB(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, db.AutoMigrate(&Customer{}))
		t.Cleanup(func() { db.Migrator().DropTable(&Customer{}) })
		c := Customer{ID: 129, Name: "Acme Ltd", Credit: 5000}
		require.NoError(t, db.Create(&c).Error)
		_, err := p.Acquire(as(db, martin), &c, offlinelock.Write)
		require.NoError(t, err)
		err = as(db, martin).Transaction(func(tx *gorm.DB) error {
			if err := tx.Model(&c).Update("name", "Acme Group").Error; err != nil {
				return err
			}
			return p.Release(tx, &c)
		})
		require.NoError(t, err)
		h, err := p.Holders(db, &c)
		require.NoError(t, err)
		assert.Empty(t, h)
		var got Customer
		require.NoError(t, db.First(&got, 129).Error)
		assert.Equal(t, "Acme Group", got.Name)
	})
}

func TestBadInputIsRefusedAndChangesNothing(t *testing.T) {
	long := strings.Repeat("x", 10_000)
	eachDB(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		var nilCustomer *Customer
		cases := []struct {
			name   string
			db     *gorm.DB
			target any
			access offlinelock.Access
			want   error
		}{
			{"nil target", as(db, martin), nil, offlinelock.Write, offlinelock.ErrInvalid},
			{"nil pointer", as(db, martin), nilCustomer, offlinelock.Write, offlinelock.ErrInvalid},
			{"not a pointer", as(db, martin), Customer{ID: 1}, offlinelock.Write, offlinelock.ErrInvalid},
			{"pointer to non-struct", as(db, martin), new(int), offlinelock.Write, offlinelock.ErrInvalid},
			{"zero primary key", as(db, martin), &Customer{}, offlinelock.Write, offlinelock.ErrInvalid},
			{"zero part of composite key", as(db, martin), &Line{OrderID: "o1"}, offlinelock.Write, offlinelock.ErrInvalid},
			{"no owner", db, &Customer{ID: 1}, offlinelock.Write, offlinelock.ErrNoOwner},
			{"empty session", as(db, offlinelock.Owner{User: "x"}), &Customer{ID: 1}, offlinelock.Write, offlinelock.ErrNoOwner},
			{"long session", as(db, offlinelock.Owner{Session: long}), &Customer{ID: 1}, offlinelock.Write, offlinelock.ErrInvalid},
			{"long user", as(db, offlinelock.Owner{Session: "s", User: long}), &Customer{ID: 1}, offlinelock.Write, offlinelock.ErrInvalid},
			{"NUL in session", as(db, offlinelock.Owner{Session: "a\x00b"}), &Customer{ID: 1}, offlinelock.Write, offlinelock.ErrInvalid},
			{"long id", as(db, martin), &Line{OrderID: long, No: 1}, offlinelock.Write, offlinelock.ErrInvalid},
			{"unknown access", as(db, martin), &Customer{ID: 1}, offlinelock.Access("delete"), offlinelock.ErrInvalid},
		}
		for _, c := range cases {
			_, err := p.Acquire(c.db, c.target, c.access)
			assert.ErrorIs(t, err, c.want, c.name)
		}
		assert.ErrorIs(t, p.ForceRelease(as(db, martin), "", "1"), offlinelock.ErrInvalid)
		assert.ErrorIs(t, p.ForceRelease(as(db, martin), "customers", long), offlinelock.ErrInvalid)
		_, err := p.ReleaseAll(db, "")
		assert.ErrorIs(t, err, offlinelock.ErrInvalid)
		_, err = p.List(db, offlinelock.Filter{User: long})
		assert.ErrorIs(t, err, offlinelock.ErrInvalid)

		all, err := p.List(db, offlinelock.Filter{})
		require.NoError(t, err)
		assert.Empty(t, all)
		expired, err := p.List(db, offlinelock.Filter{Expired: true})
		require.NoError(t, err)
		assert.Empty(t, expired)
	})
}

func TestHostileStringsAreBoundParameters(t *testing.T) {
	eachDB(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		evil := offlinelock.Owner{Session: `s'; DROP TABLE customers; --`, User: `Robert'); --"`}
		line := &Line{OrderID: `o'1,"\;`, No: 2}
		l, err := p.Acquire(as(db, evil), line, offlinelock.Write)
		require.NoError(t, err)
		assert.Equal(t, `o'1\,"\\;,2`, l.ID)
		h, err := p.Holders(db, line)
		require.NoError(t, err)
		require.Len(t, h, 1)
		assert.Equal(t, evil, h[0].Owner)
		other := &Line{OrderID: `o'1`, No: 2}
		h, err = p.Holders(db, other)
		require.NoError(t, err)
		assert.Empty(t, h, "distinct composite keys do not collide")
		require.NoError(t, p.Release(as(db, evil), line))
	})
}

func TestTokensAreSecretAndRandom(t *testing.T) {
	eachDB(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seen := map[string]bool{}
		for i := uint(1); i <= 20; i++ {
			access := offlinelock.Write
			if i%2 == 0 {
				access = offlinelock.Read
			}
			l, err := p.Acquire(as(db, martin), &Customer{ID: i}, access)
			require.NoError(t, err)
			assert.Len(t, l.Token, 32, "128 bits as hex")
			assert.False(t, seen[l.Token])
			seen[l.Token] = true
			h, err := p.Holders(db, &Customer{ID: i})
			require.NoError(t, err)
			require.Len(t, h, 1)
			assert.Empty(t, h[0].Token)
		}
		all, err := p.List(db, offlinelock.Filter{})
		require.NoError(t, err)
		assert.Len(t, all, 20)
		for _, l := range all {
			assert.Empty(t, l.Token)
		}
		_, err = p.Acquire(as(db, david), &Customer{ID: 1}, offlinelock.Write)
		require.Error(t, err)
		for tok := range seen {
			assert.NotContains(t, err.Error(), tok)
		}
	})
}

// TestGenerationsNeverRepeatAcrossGrantPaths mixes the one-statement Write
// grant with the serialised path (Read locks, upgrades, takeovers after a
// release): every new grant's generation is above every earlier one.
func TestGenerationsNeverRepeatAcrossGrantPaths(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		var last int64
		grant := func(o offlinelock.Owner, id uint, access offlinelock.Access) {
			t.Helper()
			l, err := p.Acquire(as(db, o), &Doc{ID: id}, access)
			require.NoError(t, err)
			assert.Greater(t, l.Generation, last, "%s %s of doc %d", o.User, access, id)
			last = l.Generation
		}
		grant(martin, 1, offlinelock.Write) // one statement
		grant(david, 2, offlinelock.Read)   // serialised
		grant(martin, 3, offlinelock.Write)
		grant(david, 2, offlinelock.Write) // upgrade: serialised
		require.NoError(t, p.Release(as(db, martin), &Doc{ID: 1}))
		grant(david, 1, offlinelock.Write) // a free key again: one statement
		grant(martin, 4, offlinelock.Read)
		grant(martin, 5, offlinelock.Write)
	})
}
