package offlinelock_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// A grant waits for an open write of its record at most 2 s (the guard's
// bound), then is refused as ErrBeingWritten, an ErrLocked, having
// written nothing; once the write commits it is given (issue 47), on
// PostgreSQL and MariaDB.
func TestGuardOrderGrantWaitIsBounded(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) { grantWaitIsBounded(t, d) })
	}
}

// grantWaitIsBounded is TestGuardOrderGrantWaitIsBounded on d (MariaDB at
// READ COMMITTED, where only the order table orders a free record).
func grantWaitIsBounded(t *testing.T, d database) {
	db, p := goSetupOn(t, d)
	w := openWriteOf130(t, db, d)
	lt := p.TableName()
	var before int64
	require.NoError(t, db.Raw(`SELECT count(*) FROM `+lt).Scan(&before).Error)
	start := time.Now()
	_, err := p.Acquire(as(db, david), &GdCustomer{ID: 130}, offlinelock.Write)
	waited := time.Since(start)
	require.ErrorIs(t, err, offlinelock.ErrBeingWritten)
	require.ErrorIs(t, err, offlinelock.ErrLocked)
	assert.GreaterOrEqual(t, waited, 2*time.Second, "it waited for the write first")
	assert.Less(t, waited, 6*time.Second, "bounded")
	var after int64
	require.NoError(t, db.Raw(`SELECT count(*) FROM `+lt).Scan(&after).Error)
	assert.Equal(t, before, after, "nothing written to the lock table")
	_, err = w.ExecContext(context.Background(), `UPDATE go_accts SET credit = 8 WHERE id = 2`)
	require.NoError(t, err)
	var a GoAcct
	err = as(db, david).First(&a, 2).Error // the locked load: the same bound
	require.ErrorIs(t, err, offlinelock.ErrBeingWritten)
	for name, grant := range map[string]func(tx *gorm.DB) error{ // in the caller's transaction too
		"Acquire":       func(tx *gorm.DB) error { _, err := p.Acquire(tx, &GdCustomer{ID: 130}, offlinelock.Write); return err },
		"a locked load": func(tx *gorm.DB) error { return tx.First(&a, 2).Error },
	} {
		start := time.Now()
		err := as(db, david).Transaction(grant)
		require.ErrorIs(t, err, offlinelock.ErrBeingWritten, "%s in a transaction", name)
		assert.Less(t, time.Since(start), 6*time.Second, "%s in a transaction: bounded", name)
	}
	_, err = w.ExecContext(context.Background(), `COMMIT`)
	require.NoError(t, err)
	var c GdCustomer
	_, err = p.Acquire(as(db, david), &GdCustomer{ID: 130}, offlinelock.Write)
	require.NoError(t, err)
	require.NoError(t, as(db, david).First(&c, 130).Error)
	assert.Equal(t, 7, c.Credit)
	require.NoError(t, as(db, david).First(&a, 2).Error)
	assert.Equal(t, 8, a.Credit)
}

// Each table's records have order buckets of their own: a service's open
// transaction writing a thousand free rows of one table (every bucket of
// a table, where buckets were shared) delays no grant of another, on
// PostgreSQL and MariaDB (issue 47).
func TestGuardOrderTablesShareNoBuckets(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := goSetupOn(t, d)
			bulk := `INSERT INTO go_accts (id, credit) SELECT g, 0 FROM generate_series(100, 1099) g`
			if d.name == "mysql" {
				bulk = `INSERT INTO go_accts (id, credit) SELECT seq, 0 FROM seq_100_to_1099`
			}
			w := goOrderWriter(t, db)
			for _, q := range []string{`BEGIN`, bulk} {
				_, err := w.ExecContext(context.Background(), q)
				require.NoError(t, err)
			}
			defer w.ExecContext(context.Background(), `ROLLBACK`)
			for id := uint(130); id < 140; id++ {
				require.NoError(t, admin(db).Save(&GdCustomer{ID: id, Name: "free"}).Error)
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				_, err := p.Acquire(db.WithContext(offlinelock.WithOwner(ctx, david)), &GdCustomer{ID: id}, offlinelock.Write)
				cancel()
				require.NoError(t, err, "a record of another table: no wait")
			}
		})
	}
}

// The install's lock is one no outsider can hold: on PostgreSQL the lock
// table's SHARE UPDATE EXCLUSIVE lock (a role without UPDATE on it may not
// take it; the advisory lock it replaces any role could), on MariaDB a
// named lock, bounded and its answer read. Held by a session that may,
// it delays an install by a bounded time, never hangs it (issue 47).
func TestGuardInstallLockIsBounded(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := gdSetup(t, d, offlinelock.Config{})
			lt := p.TableName()
			var key string
			require.NoError(t, db.Raw("SELECT spec FROM "+lt+"_tables WHERE name = 'offlinelock:guard key'").Scan(&key).Error)
			secret := sha256.Sum256([]byte("offlinelock install\x00" + key))
			take := "SELECT GET_LOCK('offlinelock:guard:" + hex.EncodeToString(secret[:16]) + "', 0)"
			if d.name == "mysql" {
				// The old name, which any user could take, no longer holds an install up.
				other := goOrderWriter(t, db)
				_, err := other.ExecContext(context.Background(), "SELECT GET_LOCK('offlinelock:guard:"+lt+"', 0)")
				require.NoError(t, err)
				require.NoError(t, p.InstallGuard(db))
			}
			if d.name == "postgres" {
				// The old key, which any role could take, no longer holds an install up.
				_, nobody := pgRole(t, db)
				require.NoError(t, nobody.Exec(`SELECT pg_advisory_lock(hashtext('offlinelock:guard:"`+lt+`"'))`).Error)
				require.NoError(t, p.InstallGuard(db))
				require.ErrorContains(t, nobody.Exec(`BEGIN; LOCK TABLE "`+lt+`" IN SHARE UPDATE EXCLUSIVE MODE; COMMIT`).Error, "permission denied")
				take = `BEGIN; LOCK TABLE "` + lt + `" IN SHARE UPDATE EXCLUSIVE MODE`
			}
			other := goOrderWriter(t, db)
			for _, q := range testkit.SplitStatements(take) {
				_, err := other.ExecContext(context.Background(), q)
				require.NoError(t, err)
			}
			start := time.Now()
			err := p.InstallGuard(db)
			assert.Less(t, time.Since(start), 15*time.Second, "bounded")
			require.Error(t, err, "the install did not take the lock the other session holds: the test proves nothing")
			assert.Regexp(t, "lock timeout|install lock", err.Error())
			if d.name == "mysql" {
				assert.NotContains(t, err.Error(), key[:16], "the install lock's name is not shown")
			}
			other.Close()
		})
	}
}

// PostgreSQL: the order is rows of a table closed to every role but the
// guard's owner: a role that may only connect, and another service with
// DML on the business tables, can neither lock nor read them, so neither
// can hold a grant up (issue 47).
func TestGuardOrderNoOutsiderCanHoldIt(t *testing.T) {
	db, p := goSetup(t)
	order := `"` + p.TableName() + `_order"`
	_, nobody := pgRole(t, db)
	_, service := pgRole(t, db, `GRANT USAGE ON SCHEMA public TO %s`, `GRANT SELECT, INSERT, UPDATE, DELETE ON gd_customers, go_accts TO %s`)
	for name, r := range map[string]*gorm.DB{"a role that may only connect": nobody, "another service": service} {
		for _, q := range []string{`SELECT k FROM ` + order + ` FOR SHARE`, `SELECT count(*) FROM ` + order, `LOCK TABLE ` + order + ` IN ACCESS SHARE MODE`} {
			err := r.Transaction(func(tx *gorm.DB) error { return tx.Exec(q).Error })
			assert.ErrorContains(t, err, "permission denied", "%s: %s", name, q)
		}
	}
	_, err := p.Acquire(as(db, david), &GdCustomer{ID: 130}, offlinelock.Write)
	require.NoError(t, err)
}

// An order table dropped (by its owner) and made anew by the next install
// gets its rows back: the grant is ordered after an open write again, on
// PostgreSQL and MariaDB.
func TestGuardOrderRowsComeBackWithTheTable(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := goSetupOn(t, d)
			q := `DROP TABLE "` + p.TableName() + `_order"`
			if d.name == "mysql" {
				q = "DROP TABLE `" + p.TableName() + "_order`"
			}
			require.NoError(t, db.Exec(q).Error)
			require.NoError(t, p.InstallGuard(db))
			w := openWriteOf130(t, db, d)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			_, err := p.Acquire(db.WithContext(offlinelock.WithOwner(ctx, david)), &GdCustomer{ID: 130}, offlinelock.Write)
			require.Error(t, err, "the grant waited for the open write")
			_, err = w.ExecContext(context.Background(), `COMMIT`)
			require.NoError(t, err)
			_, err = p.Acquire(as(db, david), &GdCustomer{ID: 130}, offlinelock.Write)
			require.NoError(t, err)
		})
	}
}

// openWriteOf130 is another client's connection with a write of free
// customer 130 open (MariaDB at READ COMMITTED, where only the order
// table orders a free record).
func openWriteOf130(t *testing.T, db *gorm.DB, d database) *sql.Conn {
	t.Helper()
	w := goOrderWriter(t, db)
	begin := []string{`BEGIN`}
	if d.name == "mysql" {
		begin = []string{`SET TRANSACTION ISOLATION LEVEL READ COMMITTED`, `BEGIN`}
	}
	for _, q := range append(begin, `UPDATE gd_customers SET credit = 7 WHERE id = 130`) {
		_, err := w.ExecContext(context.Background(), q)
		require.NoError(t, err)
	}
	return w
}

// Every bucket of a guarded resource has its order row, so a write of any
// free record orders a grant of it: a resource's rows fill its whole range
// (64 on PostgreSQL, 1,024 on MariaDB), and a write of a free record whose
// bucket a version filled wrongly (ids 64 and 69: PostgreSQL filled 39 of
// its 64) holds the grant off until it commits.
func TestGuardOrderCoversEveryBucket(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := goSetupOn(t, d)
			q := `SELECT count(*) - 64 * count(DISTINCT k / 64), count(DISTINCT k / 64) FROM "` + p.TableName() + `_order"`
			if d.name == "mysql" {
				q = "SELECT count(*) - 1024 * count(DISTINCT b >> 10), count(DISTINCT b >> 10) FROM `" + p.TableName() + "_order`"
			}
			var missing, resources int
			require.NoError(t, db.Raw(q).Row().Scan(&missing, &resources))
			require.GreaterOrEqual(t, resources, 2, "the guarded resources have order rows")
			assert.Equal(t, 0, missing, "every bucket of every resource has its row")
			for _, id := range []uint{64, 69} {
				require.NoError(t, admin(db).Create(&GdCustomer{ID: id, Name: "free"}).Error)
				w := goOrderWriter(t, db)
				begin := []string{`BEGIN`}
				if d.name == "mysql" {
					begin = []string{`SET TRANSACTION ISOLATION LEVEL READ COMMITTED`, `BEGIN`}
				}
				for _, s := range append(begin, fmt.Sprintf(`UPDATE gd_customers SET credit = 7 WHERE id = %d`, id)) {
					_, err := w.ExecContext(context.Background(), s)
					require.NoError(t, err)
				}
				_, err := p.Acquire(as(db, david), &GdCustomer{ID: id}, offlinelock.Write)
				require.ErrorIs(t, err, offlinelock.ErrBeingWritten, "id %d: the grant waited for the open write", id)
				_, err = w.ExecContext(context.Background(), `COMMIT`)
				require.NoError(t, err)
				_, err = p.Acquire(as(db, david), &GdCustomer{ID: id}, offlinelock.Write)
				require.NoError(t, err, "id %d", id)
			}
		})
	}
}
