package offlinelock_test

import (
	"testing"

	"github.com/offlinelock/offlinelock/internal/testkit"
	"gorm.io/gorm"
)

// MariaDB: a guarded write and a grant of the same record are ordered at
// every isolation level a client may choose, READ COMMITTED included,
// where InnoDB takes no gap locks and a record without a key row holds
// nothing (guard_order_mysql.go: the order table's bucket rows).
func TestGuardOrderGrantWaitsForOpenWriteOnMariaDB(t *testing.T) {
	for _, level := range []string{"READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE"} {
		t.Run(level, func(t *testing.T) {
			db, p := goSetupOn(t, database{"mysql", openMySQL})
			goGrantsWaitForOpenWrites(t, db, p, "SET SESSION TRANSACTION ISOLATION LEVEL "+level+";BEGIN", goAwaitInnoDBWait)
		})
	}
}

// goAwaitInnoDBWait returns once a transaction waits for a row lock (the
// grant, behind the open write), polling INNODB_TRX. MariaDB reads a row
// by its primary key while it plans, where INNODB_TRX does not show the
// wait: there the sign is the grant's INSERT still running after 200 ms
// (as waitForRowLockWait), or the lock table's trigger's raise of the
// record's live bucket, which PROCESSLIST shows as the statement running
// (guard_live_mysql.go). The grant cannot return while it waits, and
// done failing the test says it did not.
func goAwaitInnoDBWait(t *testing.T, db *gorm.DB, done <-chan error) {
	t.Helper()
	testkit.GoAwaitWait(t, db, done, `SELECT (SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT') +
		(SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND IN ('Query', 'Execute') AND (INFO LIKE 'INSERT%' OR INFO LIKE 'SET STATEMENT%INSERT%' OR INFO LIKE 'SET STATEMENT%UPDATE%\\_order%') AND TIME_MS > 200)`)
}
