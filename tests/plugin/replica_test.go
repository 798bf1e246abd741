package plugin_test

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/plugin/dbresolver"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// withPlugin registers a plugin with lock table table on db.
func withPlugin(t testing.TB, db *gorm.DB, table string) *offlinelock.Plugin {
	t.Helper()
	p := offlinelock.New(offlinelock.Config{Table: table, Logger: slog.New(slog.DiscardHandler),
		Authorize: func(context.Context, string, offlinelock.Lock) error { return nil }})
	require.NoError(t, db.Use(p))
	return p
}

// TestReplicaThePrimaryDecides: GORM behind dbresolver with a hot standby
// as its replica, the standby's replay paused, so that anything read there
// is visibly stale. Every statement about locks, every load the plugin
// takes part in and every load a session makes of a lockable model runs on
// the primary; an owner-less load of an exclusive_write model still reads
// the replica.
func TestReplicaThePrimaryDecides(t *testing.T) {
	pp := testkit.StartPGPair(t)
	db := testkit.OpenPG(t, pp.PrimaryDSN())
	require.NoError(t, db.Use(dbresolver.Register(dbresolver.Config{Replicas: []gorm.Dialector{postgres.Open(pp.StandbyDSN())}})))
	p := withPlugin(t, db, "ol_replica")
	require.NoError(t, db.AutoMigrate(&Account{}, &Doc{}, &testkit.Policy{}))
	require.NoError(t, admin(db).Create(&Account{ID: 1, Name: "a", Credit: 100}).Error)
	require.NoError(t, admin(db).Create(&Doc{ID: 1, Title: "t"}).Error)
	require.NoError(t, admin(db).Create(&testkit.Policy{ID: 1, Name: "p"}).Error)
	require.NoError(t, admin(db).Create(&Account{ID: 2, Name: "b", Credit: 100}).Error)
	pp.CaughtUp(t)
	pp.PauseReplay(t)
	replica := testkit.OpenPG(t, pp.StandbyDSN())
	standbyCredit := func(id uint) int {
		var a Account
		require.NoError(t, replica.First(&a, id).Error)
		return a.Credit
	}

	t.Run("the holder's two saves of a record locked on load", func(t *testing.T) {
		m := as(db, martin)
		for range 2 {
			var a Account
			require.NoError(t, m.First(&a, 1).Error)
			a.Credit += 10
			require.NoError(t, m.Save(&a).Error)
		}
		var got Account
		require.NoError(t, admin(db).Clauses(dbresolver.Write).First(&got, 1).Error)
		require.Equal(t, 120, got.Credit)
		require.Equal(t, 100, standbyCredit(1), "the replica is stale: what the holder read came from the primary")
	})

	t.Run("the holder's saves of an exclusive_write record", func(t *testing.T) {
		m := as(db, martin)
		_, err := p.Acquire(m, &Doc{ID: 1}, offlinelock.Write)
		require.NoError(t, err)
		for range 2 {
			var d Doc
			require.NoError(t, m.First(&d, 1).Error)
			d.Title += "+"
			require.NoError(t, m.Save(&d).Error)
		}
		var free Doc
		require.NoError(t, db.First(&free, 1).Error, "an owner-less load of an exclusive_write model is free")
		require.Equal(t, "t", free.Title, "and reads the replica")
		var d Doc
		require.NoError(t, admin(db).Clauses(dbresolver.Write).First(&d, 1).Error)
		require.Equal(t, "t++", d.Title)
	})

	t.Run("the old holder's load after a takeover is refused", func(t *testing.T) {
		require.NoError(t, p.ForceRelease(as(db, offlinelock.Owner{Session: "A1", User: "admin"}), "accounts", "1"))
		var a Account
		require.NoError(t, as(db, david).First(&a, 1).Error)
		require.Equal(t, 120, a.Credit)
		err := as(db, martin).First(&a, 1).Error
		require.ErrorIs(t, err, offlinelock.ErrLocked)
	})

	t.Run("grants and refusals, never a read-only error", func(t *testing.T) {
		var pol testkit.Policy
		require.NoError(t, as(db, martin).First(&pol, 1).Error, "a Read lock on load")
		var a Account
		require.NoError(t, as(db, martin).Clauses(dbresolver.Read).First(&a, 2).Error, "asked for a replica, the locked load still runs on the primary")
		err := as(db, david).Clauses(dbresolver.Read).First(&a, 2).Error
		require.ErrorIs(t, err, offlinelock.ErrLocked)
		_, err = p.Acquire(as(db, david).Clauses(dbresolver.Read), &Doc{ID: 2}, offlinelock.Write)
		require.NoError(t, err)
		holders, err := p.Holders(as(db, david).Clauses(dbresolver.Read), &Doc{ID: 2})
		require.NoError(t, err)
		require.Len(t, holders, 1)
		require.NoError(t, p.Release(as(db, david).Clauses(dbresolver.Read), &Doc{ID: 2}))
		var rows []Account
		require.NoError(t, as(db, martin).Find(&rows, "id = ?", 2).Error)
		require.Len(t, rows, 1)
		n, err := p.ReleaseAll(as(db, martin).Clauses(dbresolver.Read), martin.Session)
		require.NoError(t, err)
		require.Positive(t, n)
	})

	t.Run("a transaction begun on the replica is told so", func(t *testing.T) {
		err := as(db, martin).Clauses(dbresolver.Read).Transaction(func(tx *gorm.DB) error {
			var a Account
			return tx.First(&a, 2).Error
		})
		require.ErrorIs(t, err, offlinelock.ErrReadOnly)
	})
}

// TestFailoverGenerations: the primary crashes (SIGKILL) and its standby is
// promoted. Synchronous: every lock survives with its generation.
// Asynchronous, the standby cut off before the last grants: those grants
// are lost (the documented risk), and the promoted server issues
// generations larger than any the old primary issued. The same again with
// the WAL functions revoked from the application's role (a managed
// service's restriction): the generations come from the epoch, which the
// promoted server's first db.Use moves (issue 48).
func TestFailoverGenerations(t *testing.T) {
	for _, c := range []struct {
		name      string
		sync, wal bool
	}{{"synchronous", true, true}, {"asynchronous", false, true}, {"asynchronous without the WAL timeline", false, false}} {
		t.Run(c.name, func(t *testing.T) {
			pp := testkit.StartPGPair(t)
			if c.sync {
				pp.Sync(t, true)
			}
			user := ""
			if !c.wal {
				user = " user=" + revokeWAL(t, pp)
			}
			db := testkit.OpenPG(t, pp.PrimaryDSN()+user)
			p := withPlugin(t, db, "ol_failover")
			require.NoError(t, db.AutoMigrate(&Doc{}))
			_, err := p.Acquire(as(db, david), &Doc{ID: 100}, offlinelock.Write) // the lock table exists on the standby
			require.NoError(t, err)
			pp.CaughtUp(t)
			if !c.sync {
				pp.CutStandby(t)
			}
			// More grants than PostgreSQL logs a sequence ahead (32): the
			// old primary's sequence moves past anything the standby saw.
			var before []offlinelock.Lock
			for i := uint(1); i <= 40; i++ {
				l, err := p.Acquire(as(db, martin), &Doc{ID: i}, offlinelock.Write)
				require.NoError(t, err)
				before = append(before, *l)
			}
			pp.Kill(t, "primary")
			pp.Promote(t)

			db2 := testkit.OpenPG(t, pp.StandbyDSN()+user)
			p2 := withPlugin(t, db2, "ol_failover")
			l, err := p2.Acquire(as(db2, david), &Doc{ID: 1}, offlinelock.Write)
			if c.sync {
				require.ErrorIs(t, err, offlinelock.ErrLocked, "a synchronous standby has every grant")
				for _, b := range before {
					hs, err := p2.Holders(db2, &Doc{ID: mustID(t, b.ID)})
					require.NoError(t, err)
					require.Len(t, hs, 1)
					require.Equal(t, b.Generation, hs[0].Generation)
					require.Equal(t, martin.Session, hs[0].Owner.Session)
				}
				l, err = p2.Acquire(as(db2, david), &Doc{ID: 41}, offlinelock.Write)
			}
			require.NoError(t, err)
			for _, b := range before {
				require.Greater(t, l.Generation, b.Generation, "a generation issued after the failover is larger than every one before it")
			}
		})
	}
}

// revokeWAL revokes the WAL functions from PUBLIC on the pair's primary
// (the standby follows) and creates a role that may create in the public
// schema; it returns the role's name. The pair's cluster, the role with
// it, is removed when the test ends.
func revokeWAL(t *testing.T, pp *testkit.PGPair) string {
	t.Helper()
	role := "ol_h3_nowal"
	for _, q := range []string{
		`REVOKE EXECUTE ON FUNCTION pg_catalog.pg_walfile_name(pg_lsn) FROM PUBLIC`,
		`REVOKE EXECUTE ON FUNCTION pg_catalog.pg_current_wal_lsn() FROM PUBLIC`,
		`CREATE ROLE ` + role + ` LOGIN`,
		`GRANT ALL ON SCHEMA public TO ` + role,
	} {
		pp.Exec(t, pp.PrimaryPort, q)
	}
	app := testkit.OpenPG(t, pp.PrimaryDSN()+" user="+role)
	require.ErrorContains(t, app.Exec(`SELECT pg_walfile_name(pg_current_wal_lsn())`).Error, "permission denied")
	return role
}

// TestUnconfirmedGrant: the synchronous standby is down, so a grant's
// commit waits for it until the caller's deadline. The Acquire says the
// lock may be held, and it is: the primary committed it locally.
func TestUnconfirmedGrant(t *testing.T) {
	pp := testkit.StartPGPair(t)
	db := testkit.OpenPG(t, pp.PrimaryDSN())
	p := withPlugin(t, db, "ol_unconfirmed")
	require.NoError(t, db.AutoMigrate(&Doc{}))
	pp.Sync(t, true)
	_, err := p.Acquire(as(db, david), &Doc{ID: 100}, offlinelock.Write)
	require.NoError(t, err)
	pp.Kill(t, "standby")
	ctx, cancel := context.WithTimeout(offlinelock.WithOwner(context.Background(), martin), time.Second)
	defer cancel()
	_, err = p.Acquire(db.WithContext(ctx), &Doc{ID: 1}, offlinelock.Write)
	require.ErrorIs(t, err, offlinelock.ErrUnconfirmed)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	pp.Sync(t, false)
	hs, err := p.Holders(db, &Doc{ID: 1})
	require.NoError(t, err)
	require.Len(t, hs, 1, "the grant was committed on the primary: the lock is held")
	require.Equal(t, martin.Session, hs[0].Owner.Session)
}

func mustID(t *testing.T, s string) uint {
	t.Helper()
	n, err := strconv.ParseUint(s, 10, 64)
	require.NoError(t, err)
	return uint(n)
}
