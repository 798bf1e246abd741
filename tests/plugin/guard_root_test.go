package plugin_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// A member two levels down is judged by its root as it is at the write:
// the guard reads the parent row with a locking read, so a write and an
// open move of its parent are ordered, whatever the isolation level
// (issue 47). GdSub 2 hangs on line 2, which belongs to free order 2;
// order 3 is free too, and david asks for it.
func TestGuardReadsRootsAtTheWrite(t *testing.T) {
	for _, d := range serverDatabases() {
		for _, level := range []string{"READ COMMITTED", "REPEATABLE READ"} {
			t.Run(d.name+"/"+level, func(t *testing.T) {
				db, p, _ := testkit.GdSubSetup(t, d.open(t))
				require.NoError(t, admin(db).Create(&GdOrder{ID: 3, Note: "free"}).Error)
				begin := "BEGIN ISOLATION LEVEL " + level
				if d.name == "mysql" {
					begin = "SET TRANSACTION ISOLATION LEVEL " + level + "; BEGIN"
				}
				t.Run("a parent moved after the write waits for it", func(t *testing.T) {
					w := rgBegin(t, db, begin)
					rgExec(t, w, `UPDATE gd_subs SET note = 'w' WHERE id = 2`)
					mover := rgBegin(t, db, begin)
					done := rgAsync(func() error { return rgExecErr(mover, `UPDATE gd_lines SET gd_order_id = 3 WHERE id = 2`) })
					rgAwaitLockWait(t, db, done)
					rgExec(t, w, `COMMIT`)
					require.NoError(t, <-done, "the move, once the write committed")
					rgExec(t, mover, `COMMIT`)
					rgDavidSees(t, db, p, "w")
				})
				t.Run("a write under a parent being moved waits for the move", func(t *testing.T) {
					require.NoError(t, admin(db).Exec(`UPDATE gd_lines SET gd_order_id = 2 WHERE id = 2`).Error)
					require.NoError(t, admin(db).Exec(`UPDATE gd_subs SET note = 'free' WHERE id = 2`).Error)
					mover := rgBegin(t, db, begin)
					rgExec(t, mover, `UPDATE gd_lines SET gd_order_id = 3 WHERE id = 2`)
					w := rgBegin(t, db, begin)
					if d.name == "postgres" && level == "REPEATABLE READ" {
						rgExec(t, w, `SELECT 1`) // the snapshot, taken before the move commits
					}
					done := rgAsync(func() error { return rgExecErr(w, `UPDATE gd_subs SET note = 'w2' WHERE id = 2`) })
					rgAwaitLockWait(t, db, done)
					rgExec(t, mover, `COMMIT`)
					err := <-done
					if d.name == "postgres" && level == "REPEATABLE READ" {
						// The parent changed since the snapshot: the write fails.
						require.True(t, testkit.GoSerializationFailure(err), "want 40001, got %v", err)
						rgExec(t, w, `ROLLBACK`)
						rgDavidSees(t, db, p, "free")
						return
					}
					require.NoError(t, err, "the write, read under the moved parent (order 3, free)")
					// The write now holds order 3's order: david's grant waits for it.
					got := rgAsync(func() error { _, err := p.Acquire(as(db, david), &GdOrder{ID: 3}, offlinelock.Write); return err })
					rgAwaitLockWait(t, db, got)
					rgExec(t, w, `COMMIT`)
					require.NoError(t, <-got)
					rgDavidSees(t, db, p, "w2")
				})
			})
		}
	}
}

// rgDavidSees: david, holding order 3, finds sub 2 under it with note.
func rgDavidSees(t *testing.T, db *gorm.DB, p *offlinelock.Plugin, note string) {
	t.Helper()
	if _, err := p.Acquire(as(db, david), &GdOrder{ID: 3}, offlinelock.Write); err != nil {
		require.ErrorIs(t, err, offlinelock.ErrLocked) // held already, by david
	}
	var s GdSub
	require.NoError(t, as(db, david).First(&s, 2).Error)
	assert.Equal(t, note, s.Note)
	_, err := p.ReleaseAll(db, david.Session)
	require.NoError(t, err)
}

func rgBegin(t *testing.T, db *gorm.DB, begin string) *rgConn {
	t.Helper()
	c := &rgConn{testkit.GoOrderWriter(t, db)}
	for _, q := range testkit.SplitStatements(begin) {
		rgExec(t, c, q)
	}
	t.Cleanup(func() { c.ExecContext(context.Background(), `ROLLBACK`) })
	return c
}

func rgExec(t *testing.T, c *rgConn, q string) {
	t.Helper()
	require.NoError(t, rgExecErr(c, q), q)
}

func rgExecErr(c *rgConn, q string) error {
	_, err := c.ExecContext(context.Background(), q)
	return err
}

func rgAsync(f func() error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	return done
}

// rgAwaitLockWait returns once a session of db's server waits for a row
// or advisory lock (done failing first says nothing waited).
func rgAwaitLockWait(t *testing.T, db *gorm.DB, done <-chan error) {
	t.Helper()
	if db.Dialector.Name() == "mysql" {
		// MariaDB reads a row by its primary key while it plans, where
		// INNODB_TRX does not show the wait (as goAwaitInnoDBWait).
		testkit.GoAwaitWait(t, db, done, `SELECT (SELECT COUNT(*) FROM information_schema.INNODB_TRX x JOIN information_schema.PROCESSLIST p ON p.ID = x.trx_mysql_thread_id
				WHERE x.trx_state = 'LOCK WAIT' AND p.DB = DATABASE()) +
			(SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND COMMAND IN ('Query', 'Execute') AND (INFO LIKE 'UPDATE%' OR INFO LIKE 'INSERT%' OR INFO LIKE 'SET STATEMENT%INSERT%' OR INFO LIKE 'SET STATEMENT%UPDATE%\\_order%') AND TIME_MS > 200)`)
		return
	}
	testkit.GoAwaitWait(t, db, done, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`) // this database's sessions only
}

// rgConn is one connection of another client, outside the plugin.
type rgConn struct{ *sql.Conn }
