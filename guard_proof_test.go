package offlinelock_test

import (
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// TestGuardProofCoversOnlyWhatTheFenceProved (PostgreSQL): a folded
// fence leaves its proof for the guard, so that the guard's fenced branch
// need not probe the key row again. The proof names one session and one
// record: a fenced write of anything else, or by anyone else, in the same
// transaction is probed as before; a fence that failed proves nothing.
func TestGuardProofCoversOnlyWhatTheFenceProved(t *testing.T) {
	db, p := gdSetup(t, database{"postgres", openPostgres}, offlinelock.Config{})
	_, err := p.Acquire(as(db, david), &GdCustomer{ID: 130}, offlinelock.Write)
	require.NoError(t, err)
	// fencedAs writes raw on tx's connection with a fenced identity of
	// session's, in a savepoint, so that a refusal leaves tx usable.
	fencedAs := func(tx *gorm.DB, session, update string) error {
		c := tx.Statement.ConnPool.(*sql.Tx)
		_, err := c.Exec(`SAVEPOINT proof`)
		require.NoError(t, err)
		if _, err = c.Exec(offlinelock.IdentityStatement(p), "f:"+session); err == nil {
			_, err = c.Exec(update)
		}
		if err != nil {
			_, rerr := c.Exec(`ROLLBACK TO SAVEPOINT proof`)
			require.NoError(t, rerr)
		}
		return err
	}

	tx := as(db, martin).Begin()
	require.NoError(t, tx.Error)
	defer tx.Rollback()
	require.NoError(t, tx.Save(&GdCustomer{ID: 129, Name: "Acme", Credit: 101}).Error, "martin's folded save, which leaves the proof")
	var proof string
	require.NoError(t, tx.Raw(`SELECT current_setting('offlinelock.proof', true)`).Scan(&proof).Error)
	require.NotEmpty(t, proof, "the folded save left no proof: the test proves nothing")

	assert.NoError(t, fencedAs(tx, martin.Session, `UPDATE gd_customers SET credit = 102 WHERE id = 129`), "what the proof covers")
	err = fencedAs(tx, martin.Session, `UPDATE gd_customers SET credit = 1 WHERE id = 130`)
	assert.True(t, refusedBy(err, "gd_customers", "130", "david"), "another record: %v", err)
	err = fencedAs(tx, martin.Session, `UPDATE gd_customers SET credit = 1 WHERE id IN (129, 130)`)
	assert.True(t, refusedBy(err, "gd_customers", "130", "david"), "the proved record and another: %v", err)
	err = fencedAs(tx, david.Session, `UPDATE gd_customers SET credit = 1 WHERE id = 129`)
	assert.True(t, refusedByGuard(err, "gd_customers", "129"), "another session: %v", err)
	require.NoError(t, tx.Commit().Error)

	// A fence that fails proves nothing: martin's lock is taken from him
	// behind his back (his hint stays fresh, so his save folds the fence).
	require.NoError(t, plainGORM(t, db).Exec(`UPDATE `+p.TableName()+` SET session = $1, user_name = $2 WHERE resource = 'gd_customers' AND lock_id = '129'`,
		david.Session, david.User).Error)
	tx = as(db, martin).Begin()
	require.NoError(t, tx.Error)
	defer tx.Rollback()
	err = tx.Save(&GdCustomer{ID: 129, Name: "Acme", Credit: 5}).Error
	require.True(t, errors.Is(err, offlinelock.ErrLocked) || errors.Is(err, offlinelock.ErrNotLocked), "martin's save after his lock was taken: %v", err)
	err = fencedAs(tx, martin.Session, `UPDATE gd_customers SET credit = 5 WHERE id = 129`)
	assert.True(t, refusedBy(err, "gd_customers", "129", "david"), "after the failed fence: %v", err)
	var c GdCustomer
	require.NoError(t, plainGORM(t, db).First(&c, 129).Error)
	assert.Equal(t, 102, c.Credit)
}

// TestMySQLFenceProofCoversOnlyWhatTheFenceProved (MariaDB): the fence
// function leaves its proof in the statement (sql_select_limit, put back
// by SET STATEMENT when the statement ends), and the guard's triggers skip
// their procedure for the record it proved. The count of procedure calls
// (Com_call_procedure counts those in triggers) shows the skip; a row of
// another record in the same statement, a write without the fence, and a
// fence without the blank are checked as before, and no proof outlives its
// statement.
func TestMySQLFenceProofCoversOnlyWhatTheFenceProved(t *testing.T) {
	db, p := gdSetup(t, database{"mysql", openMySQL}, offlinelock.Config{})
	_, err := p.Acquire(as(db, david), &GdCustomer{ID: 130}, offlinelock.Write)
	require.NoError(t, err)
	fence := pfFence(t, db, p)
	call := func(id string) string {
		return "`" + fence + "`('gd_customers', '" + id + "', '" + martin.Session + "', 0) = 1"
	}

	tx := as(db, martin).Begin()
	require.NoError(t, tx.Error)
	defer tx.Rollback()
	c := tx.Statement.ConnPool.(*sql.Tx)
	// calls runs fn and returns how many procedures the statement called,
	// and checks that no proof outlived it.
	calls := func(fn func() error) (int, error) {
		var name string
		var before, after int
		require.NoError(t, c.QueryRow(`SHOW SESSION STATUS LIKE 'Com_call_procedure'`).Scan(&name, &before))
		err := fn()
		require.NoError(t, c.QueryRow(`SHOW SESSION STATUS LIKE 'Com_call_procedure'`).Scan(&name, &after))
		var limit string
		require.NoError(t, c.QueryRow(`SELECT @@session.sql_select_limit`).Scan(&limit))
		require.Equal(t, "18446744073709551615", limit, "a proof outlived its statement")
		return after - before, err
	}
	// raw writes on tx's connection, in a savepoint, so that a refusal
	// leaves tx usable; blank says whether the statement carries the blank.
	raw := func(blank bool, update string) (int, error) {
		prefix := offlinelock.MariaDBIdentityPrefix(offlinelock.GuardKeyOf(p, db), martin.Session, true)
		if !blank {
			prefix = "SET STATEMENT max_join_size=" + strconv.FormatUint(offlinelock.SessionMark(offlinelock.GuardKeyOf(p, db), martin.Session, true), 10) + " FOR "
		}
		return calls(func() error {
			_, err := c.Exec(`SAVEPOINT proof`)
			require.NoError(t, err)
			if _, err = c.Exec(prefix + update); err != nil {
				_, rerr := c.Exec(`ROLLBACK TO SAVEPOINT proof`)
				require.NoError(t, rerr)
			}
			return err
		})
	}

	n, err := calls(func() error { return tx.Save(&GdCustomer{ID: 129, Name: "Acme", Credit: 101}).Error })
	require.NoError(t, err)
	assert.Equal(t, 0, n, "the holder's folded Save: its trigger skips the procedure")
	n, err = calls(func() error { return tx.Save(&GdCustomer{ID: 129, Name: "Acme", Credit: 101}).Error })
	require.NoError(t, err)
	assert.Equal(t, 0, n, "the same Save of the row as it is: the UPDATE, then the upsert with both fences")

	n, err = raw(true, `UPDATE gd_customers SET credit = 102 WHERE `+call("129")+` AND id = 129`)
	assert.NoError(t, err)
	assert.Equal(t, 0, n, "the proved record")
	n, err = raw(true, `UPDATE gd_customers SET credit = 1 WHERE `+call("129")+` AND id IN (129, 130)`)
	assert.True(t, refusedBy(err, "gd_customers", "130", "david"), "the proved record and another: %v", err)
	assert.Positive(t, n, "the other record is checked")
	n, err = raw(true, `UPDATE gd_customers SET credit = 103 WHERE id = 129`)
	assert.NoError(t, err)
	assert.Equal(t, 1, n, "a fenced write without the fence function: the trigger checks it")
	n, err = raw(false, `UPDATE gd_customers SET credit = 104 WHERE `+call("129")+` AND id = 129`)
	assert.NoError(t, err)
	assert.Equal(t, 1, n, "a fence without the blank leaves no proof")
	n, err = calls(func() error {
		var one int
		return c.QueryRow(`SELECT ` + call("129")).Scan(&one)
	})
	assert.NoError(t, err, "the fence called outside a write, no blank: nothing to overwrite")
	assert.Equal(t, 0, n)
	n, err = raw(true, `UPDATE gd_customers SET credit = 1 WHERE `+strings.Replace(call("130"), "0) = 1", "1) = 1", 1)+` AND id = 130`)
	assert.ErrorContains(t, err, "OL428", "a fence that refuses")
	assert.Equal(t, 0, n)
	require.NoError(t, tx.Commit().Error)
	var got GdCustomer
	require.NoError(t, plainGORM(t, db).First(&got, 129).Error)
	assert.Equal(t, 104, got.Credit)
	var other GdCustomer
	require.NoError(t, plainGORM(t, db).First(&other, 130).Error)
	assert.Equal(t, 100, other.Credit)
}

// refusedBy: err is the guard's refusal of resource id, held by user, as a
// client without the plugin sees it.
func refusedBy(err error, resource, id, user string) bool {
	return err != nil && strings.Contains(err.Error(), "OL423") && strings.Contains(err.Error(), "offlinelock: "+resource+" "+id+" is locked by "+user)
}
