package plugin_test

// Session-wide operations at scale: ReleaseAll and Renew of a session
// holding ten thousand locks cost the statements of one holding ten (on
// MySQL, a few more per 400 locks), and lock nothing of other sessions.

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

func TestSessionWideOpsAreABoundedNumberOfStatements(t *testing.T) {
	eachDB(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		table := lockTableName(t, db, p)
		fill(t, db, table, "others", david.Session, 50, time.Hour)
		statements := func(locks int) (renew, release int64) {
			session := "S" + time.Now().Format("150405.000000")
			fill(t, db, table, "held-"+strconv.Itoa(locks), session, locks, time.Hour)
			c := &counter{Interface: logger.Discard}
			counted := db.Session(&gorm.Session{Logger: c})
			n, err := p.Renew(counted, session)
			require.NoError(t, err)
			require.Equal(t, int64(locks), n)
			renew = c.N.Swap(0)
			n, err = p.ReleaseAll(counted, session)
			require.NoError(t, err)
			require.Equal(t, int64(locks), n)
			return renew, c.N.Load()
		}
		renew10, release10 := statements(10)
		renew10k, release10k := statements(10_000)
		t.Logf("statements: Renew %d and ReleaseAll %d for 10 locks, %d and %d for 10,000", renew10, release10, renew10k, release10k)
		if db.Dialector.Name() == "mysql" {
			// MySQL works by whole primary keys, a batch of 400 at a time
			// (a range by session would take next-key locks): three
			// statements a batch.
			batches := int64(10_000 / 400)
			assert.LessOrEqual(t, renew10k, renew10+3*batches, "Renew")
			assert.LessOrEqual(t, release10k, release10+3*batches, "ReleaseAll")
		} else {
			assert.Equal(t, renew10, renew10k, "Renew")
			assert.Equal(t, release10, release10k, "ReleaseAll")
		}
		left, err := p.List(db, offlinelock.Filter{Session: david.Session})
		require.NoError(t, err)
		assert.Len(t, left, 50, "another session's locks are untouched")
	})
}

// TestSessionWideOpsLockNothingOfOtherSessions runs ReleaseAll and Renew
// in a transaction left open, and meanwhile row-locks, without waiting,
// every row of another session, including its reader row on a record both
// sessions read.
//
// PostgreSQL only: on MySQL the session's key rows are read by primary-key
// ranges of (resource, lock_id), and InnoDB's locking reads there also
// lock rows they pass of other sessions on the same records (see the
// README's MySQL notes); SQLite locks the whole database.
func TestSessionWideOpsLockNothingOfOtherSessions(t *testing.T) {
	sessionWideOpsLockNothingOfOthers(t, databases()[1])
}

func sessionWideOpsLockNothingOfOthers(t *testing.T, d database) {
	db, p := setupModels(t, d, offlinelock.Config{})
	table := lockTableName(t, db, p)
	for id := uint(1); id <= 3; id++ {
		_, err := p.Acquire(as(db, david), &Doc{ID: id}, offlinelock.Write)
		require.NoError(t, err)
		_, err = p.Acquire(as(db, martin), &Doc{ID: 10 + id}, offlinelock.Write)
		require.NoError(t, err)
	}
	for _, o := range []offlinelock.Owner{martin, david} {
		_, err := p.Acquire(as(db, o), &Doc{ID: 20}, offlinelock.Read)
		require.NoError(t, err)
	}
	other := d.open(t)
	// David's rows, each by its whole primary key: his three Write key rows
	// and his reader row on doc 20 (a scan would lock rows of its own).
	davidsRows := func() (int, error) {
		var n int
		err := other.Transaction(func(tx *gorm.DB) error {
			var ids []string
			q := `SELECT lock_id FROM ` + table + ` WHERE (resource = 'docs' AND lock_id IN ('1', '2', '3') AND holder = '') OR (resource = 'docs' AND lock_id = '20' AND holder = ?) FOR UPDATE NOWAIT`
			err := tx.Raw(q, david.Session).Scan(&ids).Error
			n = len(ids)
			return err
		})
		return n, err
	}
	for _, op := range []struct {
		name string
		run  func(tx *gorm.DB) error
	}{
		{"Renew", func(tx *gorm.DB) error { _, err := p.Renew(tx, martin.Session); return err }},
		{"ReleaseAll", func(tx *gorm.DB) error { _, err := p.ReleaseAll(tx, martin.Session); return err }},
	} {
		require.NoError(t, db.Transaction(func(tx *gorm.DB) error {
			require.NoError(t, op.run(tx))
			n, err := davidsRows()
			require.NoError(t, err, "%s holds none of another session's rows", op.name)
			assert.Equal(t, 4, n, "David's three Write locks and his Read lock")
			return nil
		}))
	}
}
