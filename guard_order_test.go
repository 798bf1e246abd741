package offlinelock_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// PostgreSQL: a guarded write and a grant of the same record are ordered.
// A write still open when a grant is asked for commits before the grant is
// given (the grant waits for it), and a transaction whose snapshot
// predates a grant cannot write the record (40001).

// GoAcct is locked by its loads (exclusive_read): the locked load's grant.
type GoAcct = testkit.GoAcct

// goSetup is gdSetup plus go_accts (2 and 3 free), guarded, on
// PostgreSQL.
func goSetup(t *testing.T) (*gorm.DB, *offlinelock.Plugin) {
	return goSetupOn(t, database{"postgres", openPostgres})
}

// goSetupOn is goSetup on d.
func goSetupOn(t *testing.T, d database) (*gorm.DB, *offlinelock.Plugin) {
	return testkit.GoSetup(t, d.open(t))
}

// goOrderWriter is another client's connection, outside the plugin
// (testkit.GoOrderWriter).
func goOrderWriter(t *testing.T, db *gorm.DB) *sql.Conn { return testkit.GoOrderWriter(t, db) }

// goAwaitAdvisoryWait returns once a session of db's database waits for a
// lock (the order table's row, since issue 47; an advisory lock before):
// the grant is blocked behind the open write.
func goAwaitAdvisoryWait(t *testing.T, db *gorm.DB, done <-chan error) {
	t.Helper()
	testkit.GoAwaitWait(t, db, done, `SELECT count(*) FROM pg_stat_activity a WHERE a.datname = current_database() AND a.wait_event_type = 'Lock'`)
}

// TestGuardOrderGrantWaitsForOpenWrite: another client's write of a free
// record, still open when a session asks for the record, is committed
// before the grant: the grant waits (in pg_locks, for an advisory lock),
// and the new holder's load sees the written row. For UPDATE, INSERT,
// DELETE, and a member row of an aggregate whose root is asked for; by
// Acquire and by the locked load.
func TestGuardOrderGrantWaitsForOpenWrite(t *testing.T) {
	db, p := goSetup(t)
	goGrantsWaitForOpenWrites(t, db, p, "BEGIN", goAwaitAdvisoryWait)
}

// goGrantsWaitForOpenWrites runs each case: another client's write of a
// free record, begun with begin and still open, then a grant of the
// record, which must wait (await returns once it does) and, once the write
// commits, be given; the new holder sees the written row.
func goGrantsWaitForOpenWrites(t *testing.T, db *gorm.DB, p *offlinelock.Plugin, begin string, await func(*testing.T, *gorm.DB, <-chan error)) {
	type ask func() error
	acquire := func(target any) ask {
		return func() error { _, err := p.Acquire(as(db, david), target, offlinelock.Write); return err }
	}
	load := func(dest any, id uint) ask { return func() error { return as(db, david).First(dest, id).Error } }
	var c GdCustomer
	var a, a4 GoAcct
	for _, tc := range []struct {
		name, write string
		ask         ask
		check       func()
	}{
		{"update, Acquire", `UPDATE gd_customers SET credit = 7 WHERE id = 130`, acquire(&GdCustomer{ID: 130}), func() {
			require.NoError(t, as(db, david).First(&c, 130).Error)
			assert.Equal(t, 7, c.Credit)
		}},
		{"update, locked load", `UPDATE go_accts SET credit = 8 WHERE id = 2`, load(&a, 2), func() { assert.Equal(t, 8, a.Credit) }},
		{"insert, Acquire", `INSERT INTO gd_customers (id, name, credit) VALUES (131, 'New', 9)`, acquire(&GdCustomer{ID: 131}), func() {
			var n GdCustomer
			require.NoError(t, as(db, david).First(&n, 131).Error)
			assert.Equal(t, 9, n.Credit)
		}},
		{"insert, locked load", `INSERT INTO go_accts (id, credit) VALUES (4, 10)`, load(&a4, 4), func() { assert.Equal(t, 10, a4.Credit) }},
		{"update, locked load of many", `UPDATE go_accts SET credit = 12 WHERE id = 3`, func() error {
			var all []GoAcct
			err := as(db, david).Where("credit > 0").Order("id").Find(&all).Error
			if err == nil && assert.Len(t, all, 3) {
				a = all[1]
			}
			return err
		}, func() { assert.Equal(t, 12, a.Credit) }},
		{"delete, Acquire", `DELETE FROM gd_customers WHERE id = 131`, acquire(&GdCustomer{ID: 131}), func() {
			assert.ErrorIs(t, as(db, david).First(&GdCustomer{}, 131).Error, gorm.ErrRecordNotFound)
		}},
		{"member row, Acquire of its root", `UPDATE gd_lines SET qty = 11 WHERE id = 2`, acquire(&GdOrder{ID: 2}), func() {
			var l GdLine
			require.NoError(t, plainGORM(t, db).First(&l, 2).Error)
			assert.Equal(t, 11, l.Qty)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := goOrderWriter(t, db)
			for _, q := range strings.Split(begin, ";") {
				_, err := w.ExecContext(context.Background(), q)
				require.NoError(t, err)
			}
			_, err := w.ExecContext(context.Background(), tc.write)
			require.NoError(t, err, "a free record's write")
			done := make(chan error, 1)
			go func() { done <- tc.ask() }()
			await(t, db, done)
			_, err = w.ExecContext(context.Background(), `COMMIT`)
			require.NoError(t, err)
			require.NoError(t, <-done, "the grant, once the write committed")
			tc.check()
			_, err = p.ReleaseAll(db, david.Session)
			require.NoError(t, err)
		})
	}
}

// TestGuardOrderOldSnapshotCannotWriteGrantedRecord: a REPEATABLE READ or
// SERIALIZABLE transaction whose snapshot predates a grant is refused
// (40001) when it writes the record, for a record that never had a key
// row and for one whose (expired) key row its snapshot saw; the row is
// unchanged and the lock table keeps only the grant. Beside it, the
// holder's write in such a transaction and a free record's write pass.
func TestGuardOrderOldSnapshotCannotWriteGrantedRecord(t *testing.T) {
	db, p := gdSetup(t, database{"postgres", openPostgres}, offlinelock.Config{})
	lt := p.TableName()
	for _, level := range []string{"REPEATABLE READ", "SERIALIZABLE"} {
		for _, had := range []bool{false, true} {
			name := level + ", never held"
			if had {
				name = level + ", expired key row"
			}
			t.Run(name, func(t *testing.T) {
				require.NoError(t, admin(db).Save(&GdCustomer{ID: 130, Name: "Free", Credit: 100}).Error)
				if had { // david's lock, expired: the snapshot sees its key row
					_, err := p.Acquire(as(db, david), &GdCustomer{ID: 130}, offlinelock.Write)
					require.NoError(t, err)
					require.NoError(t, plainGORM(t, db).Exec(`UPDATE `+lt+` SET expires_at = now() - interval '1 hour' WHERE resource = 'gd_customers' AND lock_id = '130'`).Error)
				}
				w := goOrderWriter(t, db)
				_, err := w.ExecContext(context.Background(), `BEGIN ISOLATION LEVEL `+level)
				require.NoError(t, err)
				_, err = w.ExecContext(context.Background(), `SELECT 1`) // the snapshot
				require.NoError(t, err)
				_, err = p.Acquire(as(db, martin), &GdCustomer{ID: 130}, offlinelock.Write)
				require.NoError(t, err, "martin's grant, committed")
				_, err = w.ExecContext(context.Background(), `UPDATE gd_customers SET credit = 1 WHERE id = 130`)
				assert.True(t, testkit.GoSerializationFailure(err), "the old snapshot's write: %v", err)
				_, err = w.ExecContext(context.Background(), `ROLLBACK`)
				require.NoError(t, err)

				var c GdCustomer
				require.NoError(t, plainGORM(t, db).First(&c, 130).Error)
				assert.Equal(t, 100, c.Credit, "the row")
				var rows []string
				require.NoError(t, plainGORM(t, db).Raw(`SELECT holder || '/' || access || '/' || session FROM `+lt+` WHERE resource = 'gd_customers' AND lock_id = '130'`).Scan(&rows).Error)
				assert.Equal(t, []string{"/write/" + martin.Session}, rows, "the lock table")

				// The holder's write in such a transaction, and a free record's.
				tx := as(db, martin).Begin(&sql.TxOptions{Isolation: isolationOf(level)})
				require.NoError(t, tx.Error)
				require.NoError(t, tx.Save(&GdCustomer{ID: 130, Name: "Free", Credit: 55}).Error, "the holder's write")
				require.NoError(t, tx.Commit().Error)
				_, err = w.ExecContext(context.Background(), `BEGIN ISOLATION LEVEL `+level)
				require.NoError(t, err)
				_, err = w.ExecContext(context.Background(), `UPDATE gd_orders SET note = 'free' WHERE id = 2`)
				require.NoError(t, err, "a free record's write")
				_, err = w.ExecContext(context.Background(), `COMMIT`)
				require.NoError(t, err)
				_, err = p.ReleaseAll(db, martin.Session)
				require.NoError(t, err)
				_, err = p.ReleaseAll(db, david.Session)
				require.NoError(t, err)
				_, err = p.Acquire(as(db, martin), &GdCustomer{ID: 129}, offlinelock.Write)
				require.NoError(t, err) // gdSetup's hold, back
				var probes int
				require.NoError(t, plainGORM(t, db).Raw(`SELECT count(*) FROM `+lt+` WHERE access = ''`).Scan(&probes).Error)
				assert.Zero(t, probes, "the old-snapshot check left rows behind")
			})
		}
	}
}

func isolationOf(level string) sql.IsolationLevel {
	if level == "SERIALIZABLE" {
		return sql.LevelSerializable
	}
	return sql.LevelRepeatableRead
}

// TestGuardOrderGrantWaitIsBoundedByContext: the grant's wait for an open
// write is the caller's: its context ends it, nothing is granted, and once
// the write commits the record is granted as usual.
func TestGuardOrderGrantWaitIsBoundedByContext(t *testing.T) {
	for _, tc := range []struct {
		d     database
		begin string
		await func(*testing.T, *gorm.DB, <-chan error)
	}{
		{database{"postgres", openPostgres}, "BEGIN", goAwaitAdvisoryWait},
		{database{"mysql", openMySQL}, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;BEGIN", goAwaitInnoDBWait},
	} {
		t.Run(tc.d.name, func(t *testing.T) { goGrantWaitIsBoundedByContext(t, tc.d, tc.begin, tc.await) })
	}
}

func goGrantWaitIsBoundedByContext(t *testing.T, d database, begin string, await func(*testing.T, *gorm.DB, <-chan error)) {
	db, p := goSetupOn(t, d)
	w := goOrderWriter(t, db)
	for _, q := range strings.Split(begin, ";") {
		_, err := w.ExecContext(context.Background(), q)
		require.NoError(t, err)
	}
	var err error
	_, err = w.ExecContext(context.Background(), `UPDATE gd_customers SET credit = 7 WHERE id = 130`)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := p.Acquire(as(db, david).WithContext(offlinelock.WithOwner(ctx, david)), &GdCustomer{ID: 130}, offlinelock.Write)
		done <- err
	}()
	await(t, db, done)
	cancel()
	err = <-done
	require.Error(t, err, "the grant, its context cancelled while it waited")
	var n int
	require.NoError(t, plainGORM(t, db).Raw(`SELECT count(*) FROM `+p.TableName()+` WHERE resource = 'gd_customers' AND lock_id = '130'`).Scan(&n).Error)
	assert.Zero(t, n, "the cancelled grant left a lock")
	_, err = w.ExecContext(context.Background(), `COMMIT`)
	require.NoError(t, err)
	_, err = p.Acquire(as(db, david), &GdCustomer{ID: 130}, offlinelock.Write)
	require.NoError(t, err, "the grant, after the write")
}
