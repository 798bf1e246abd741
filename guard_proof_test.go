package offlinelock_test

import (
	"database/sql"
	"errors"
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
		if _, err = c.Exec(`SELECT set_config('offlinelock.session', $1, true)`, "f:"+session); err == nil {
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

// refusedBy: err is the guard's refusal of resource id, held by user, as a
// client without the plugin sees it.
func refusedBy(err error, resource, id, user string) bool {
	return err != nil && strings.Contains(err.Error(), "OL423") && strings.Contains(err.Error(), "offlinelock: "+resource+" "+id+" is locked by "+user)
}
