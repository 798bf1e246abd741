package offlinelock_test

// MariaDB at the floor (issue 24): a Find locks its rows in the same small
// number of lock-table statements whatever their number; Renew and
// ReleaseAll take a bounded number of statements whatever the session
// holds, and none of them locks a row another session needs.

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// mysqlDatabase is MariaDB (or MySQL), skipped without its DSN.
func mysqlDatabase() database { return databases()[2] }

// statementLog is a GORM logger that keeps the SQL of every statement.
type statementLog struct {
	logger.Interface
	mu  sync.Mutex
	sql []string
}

func (l *statementLog) LogMode(logger.LogLevel) logger.Interface { return l }
func (l *statementLog) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	q, _ := fc()
	l.mu.Lock()
	l.sql = append(l.sql, q)
	l.mu.Unlock()
}

// on counts the statements that name the lock table quoted (as
// lockTableName returns it) or its generation counter or catalog, and
// forgets them all.
func (l *statementLog) on(quoted string) (lockTable, all int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	prefix := strings.TrimSuffix(quoted, "`")
	for _, q := range l.sql {
		if strings.Contains(q, prefix) {
			lockTable++
		}
	}
	all = len(l.sql)
	l.sql = nil
	return lockTable, all
}

// mysqlFindStatements is how many lock-table statements a Find of any
// number of rows sends on MariaDB: create the missing key rows, take the
// generations, write the locks. Where the plugin granted every key lately
// it knows their key rows exist, and leaves the first out.
const mysqlFindStatements = 3

func TestMySQLFindLocksInConstantStatements(t *testing.T) {
	db, p := setupModels(t, mysqlDatabase(), offlinelock.Config{})
	table := lockTableName(t, db, p)
	seedAccounts(t, db, 1000)
	// The model's catalog row is written with its first lock.
	require.NoError(t, as(db, david).Where("id = ?", 1000).Find(&[]Account{}).Error)
	_, err := p.ReleaseAll(db, david.Session)
	require.NoError(t, err)
	log := &statementLog{Interface: logger.Discard}
	m := as(db, martin).Session(&gorm.Session{Logger: log})
	find := func(n int) int {
		var got []Account
		require.NoError(t, m.Where("id <= ?", n).Find(&got).Error)
		require.Len(t, got, n)
		held, err := p.List(db, offlinelock.Filter{Session: martin.Session})
		require.NoError(t, err)
		require.Len(t, held, n, "every row read is locked")
		lockTable, all := log.on(table)
		t.Logf("Find of %d rows: %d lock-table statements, %d in all", n, lockTable, all)
		return lockTable
	}
	for _, round := range []string{"first locks of the records", "records locked before (free key rows)"} {
		for _, n := range []int{10, 100, 1000} {
			// In the first round the plugin has not granted rows 11…n yet.
			first := mysqlFindStatements - 1
			if round == "first locks of the records" {
				first = mysqlFindStatements
			}
			assert.Equal(t, first, find(n), "%s: Find of %d rows", round, n)
			assert.Equal(t, mysqlFindStatements-1, find(n), "%s: Find of %d rows held already", round, n)
			_, err := p.ReleaseAll(db, martin.Session)
			require.NoError(t, err)
		}
	}

	t.Run("one of the 1000 held by another session", func(t *testing.T) {
		theirs, err := p.Acquire(as(db, david), &Account{ID: 500}, offlinelock.Write)
		require.NoError(t, err)
		var got []Account
		err = m.Find(&got).Error
		require.ErrorIs(t, err, offlinelock.ErrLocked)
		var le *offlinelock.LockedError
		require.True(t, errors.As(err, &le), "%v", err)
		assert.Equal(t, "accounts", le.Resource)
		assert.Equal(t, "500", le.ID)
		require.Len(t, le.Holders, 1)
		assert.Equal(t, david, le.Holders[0].Owner)
		assert.Equal(t, theirs.Generation, le.Holders[0].Generation)
		assert.Empty(t, got, "a refused Find reads nothing")
		mine, err := p.List(db, offlinelock.Filter{Session: martin.Session})
		require.NoError(t, err)
		assert.Empty(t, mine, "nothing granted")
		log.on(table)
	})

	t.Run("in a transaction of the caller's", func(t *testing.T) {
		require.NoError(t, m.Transaction(func(tx *gorm.DB) error {
			require.ErrorIs(t, tx.Find(&[]Account{}).Error, offlinelock.ErrLocked)
			var got []Account
			require.NoError(t, tx.Where("id < ?", 500).Find(&got).Error, "the refused Find's savepoint is gone, the transaction goes on")
			require.Len(t, got, 499)
			return nil
		}))
		mine, err := p.List(db, offlinelock.Filter{Session: martin.Session})
		require.NoError(t, err)
		assert.Len(t, mine, 499, "the granted Find committed, the refused one left nothing")
	})
}

// TestMySQLFindKeepsGenerationAndExpiry: asking again for locks the
// session holds keeps their generations and acquisition times (and, by the
// same condition, their tokens) and never shortens their expiry; a lock
// another session let expire is taken over with a larger generation.
func TestMySQLFindKeepsGenerationAndExpiry(t *testing.T) {
	db, p := setupModels(t, mysqlDatabase(), offlinelock.Config{})
	seedAccounts(t, db, 21)
	short, err := p.Acquire(withTTL(db, david, time.Second), &Account{ID: 21}, offlinelock.Write)
	require.NoError(t, err)
	long := withTTL(db, martin, time.Hour)
	require.NoError(t, long.Where("id <= ?", 20).Find(&[]Account{}).Error)
	before := locksByID(t, db, p, martin)
	require.NoError(t, withTTL(db, martin, time.Minute).Where("id <= ?", 20).Find(&[]Account{}).Error)
	after := locksByID(t, db, p, martin)
	require.Len(t, after, 20)
	for id, l := range before {
		assert.Equal(t, l.Generation, after[id].Generation, "account %s keeps its generation", id)
		assert.Equal(t, l.AcquiredAt, after[id].AcquiredAt, "account %s keeps its acquisition time", id)
		assert.False(t, after[id].ExpiresAt.Before(l.ExpiresAt), "account %s keeps its later expiry", id)
	}

	waitPast(t, db, short.ExpiresAt)
	require.NoError(t, long.Where("id IN ?", []int{20, 21}).Find(&[]Account{}).Error)
	taken := locksByID(t, db, p, martin)["21"]
	assert.Greater(t, taken.Generation, short.Generation, "an expired lock is taken over with a larger generation")
	assert.Equal(t, before["20"].Generation, locksByID(t, db, p, martin)["20"].Generation)
}

// TestMySQLAcquireInTwoStatements: on MariaDB an Acquire of a Write lock
// outside a transaction is two lock-table statements (a generation, the
// upsert that returns the lock), whether it creates the key row, takes a
// free one or refreshes the session's own lock; a re-acquire keeps token,
// generation and acquisition time and never shortens the expiry. What the
// upsert refuses (another session's lock, live or expired, and an upgrade)
// the serialised path decides: it names the holder, takes an expired lock
// over with a larger generation, upgrades the only reader.
func TestMySQLAcquireInTwoStatements(t *testing.T) {
	db, p := setupModels(t, mysqlDatabase(), offlinelock.Config{})
	table := lockTableName(t, db, p)
	log := &statementLog{Interface: logger.Discard}
	quiet := func(o offlinelock.Owner, ttl time.Duration) *gorm.DB {
		return withTTL(db, o, ttl).Session(&gorm.Session{Logger: log})
	}
	statements := func() int { n, _ := log.on(table); return n }
	c := &Customer{ID: 7}

	first, err := p.Acquire(quiet(martin, time.Hour), c, offlinelock.Write)
	require.NoError(t, err)
	assert.Equal(t, 2, statements(), "a record's first lock, its key row created by the upsert")
	assert.NotEmpty(t, first.Token)
	again, err := p.Acquire(quiet(martin, time.Minute), c, offlinelock.Write)
	require.NoError(t, err)
	assert.Equal(t, 2, statements(), "a re-acquire")
	assert.Empty(t, again.Token, "the holder keeps the token the first Acquire gave it")
	assert.Equal(t, first.Generation, again.Generation)
	assert.Equal(t, first.AcquiredAt, again.AcquiredAt)
	assert.Equal(t, first.ExpiresAt, again.ExpiresAt, "a shorter TTL does not shorten the lock")
	held := locksByID(t, db, p, martin)["7"]
	assert.Equal(t, first.Generation, held.Generation)
	assert.Equal(t, first.ExpiresAt, held.ExpiresAt)

	_, err = p.Acquire(quiet(david, time.Hour), c, offlinelock.Write)
	var le *offlinelock.LockedError
	require.True(t, errors.As(err, &le), "%v", err)
	require.Len(t, le.Holders, 1)
	assert.Equal(t, martin, le.Holders[0].Owner, "the serialised path names the holder")
	assert.Equal(t, first.Generation, locksByID(t, db, p, martin)["7"].Generation, "the refusal changed nothing")

	require.NoError(t, p.Release(as(db, martin), c))
	log.on(table)
	freed, err := p.Acquire(quiet(david, time.Second), c, offlinelock.Write)
	require.NoError(t, err)
	assert.Equal(t, 2, statements(), "a free key row")
	assert.Greater(t, freed.Generation, first.Generation)

	waitPast(t, db, freed.ExpiresAt)
	log.on(table)
	taken, err := p.Acquire(quiet(martin, time.Hour), c, offlinelock.Write)
	require.NoError(t, err)
	assert.Greater(t, statements(), 2, "a takeover goes through the serialised path, which tells it")
	assert.Greater(t, taken.Generation, freed.Generation, "an expired lock is taken over with a larger generation")
	assert.NotEmpty(t, taken.Token)

	require.NoError(t, p.Release(as(db, martin), c))
	_, err = p.Acquire(as(db, martin), c, offlinelock.Read)
	require.NoError(t, err)
	up, err := p.Acquire(as(db, martin), c, offlinelock.Write)
	require.NoError(t, err, "the only reader upgrades")
	assert.Equal(t, offlinelock.Write, up.Access)
	assert.Equal(t, offlinelock.Write, locksByID(t, db, p, martin)["7"].Access)
}

func locksByID(t *testing.T, db *gorm.DB, p *offlinelock.Plugin, o offlinelock.Owner) map[string]offlinelock.Lock {
	t.Helper()
	locks, err := p.List(db, offlinelock.Filter{Session: o.Session})
	require.NoError(t, err)
	out := map[string]offlinelock.Lock{}
	for _, l := range locks {
		out[l.ID] = l
	}
	return out
}

// mysqlSessionStatements are the statements of Renew (read the live rows,
// push them) and of ReleaseAll of Write locks (read the rows, free them),
// and of ReleaseAll of a session that also reads (lock the key rows of the
// records it reads, free, delete the reader rows).
const (
	mysqlRenewStatements         = 2
	mysqlReleaseWritesStatements = 2
	mysqlReleaseMixedStatements  = 4
)

func TestMySQLSessionOpsAreAFixedNumberOfStatements(t *testing.T) {
	db, p := setupModels(t, mysqlDatabase(), offlinelock.Config{})
	table := lockTableName(t, db, p)
	fill(t, db, table, "others", david.Session, 50, time.Hour)
	log := &statementLog{Interface: logger.Discard}
	counted := db.Session(&gorm.Session{Logger: log})
	for _, locks := range []int{10, 10_000} {
		session := "S" + strconv.Itoa(locks)
		fill(t, db, table, "held-"+strconv.Itoa(locks), session, locks, time.Hour)
		n, err := p.Renew(counted, session)
		require.NoError(t, err)
		require.EqualValues(t, locks, n)
		renew, _ := log.on(table)
		n, err = p.ReleaseAll(counted, session)
		require.NoError(t, err)
		require.EqualValues(t, locks, n)
		release, _ := log.on(table)
		t.Logf("%d locks: Renew %d statements, ReleaseAll %d", locks, renew, release)
		assert.Equal(t, mysqlRenewStatements, renew, "Renew of %d locks", locks)
		assert.Equal(t, mysqlReleaseWritesStatements, release, "ReleaseAll of %d locks", locks)
	}

	// A session that reads too: the key rows of the records it reads are
	// pushed with its rows, and locked before its reader rows go.
	session := offlinelock.Owner{Session: "reader", User: "rita"}
	fill(t, db, table, "held-r", session.Session, 10, time.Hour)
	for id := uint(1); id <= 3; id++ {
		for _, o := range []offlinelock.Owner{session, david} {
			_, err := p.Acquire(as(db, o), &Doc{ID: id}, offlinelock.Read)
			require.NoError(t, err)
		}
	}
	n, err := p.Renew(counted, session.Session)
	require.NoError(t, err)
	assert.EqualValues(t, 13, n)
	renew, _ := log.on(table)
	assert.Equal(t, mysqlRenewStatements, renew, "Renew of Write and Read locks")
	n, err = p.ReleaseAll(counted, session.Session)
	require.NoError(t, err)
	assert.EqualValues(t, 13, n)
	release, _ := log.on(table)
	assert.Equal(t, mysqlReleaseMixedStatements, release, "ReleaseAll of Write and Read locks")
	others, err := p.List(db, offlinelock.Filter{Session: david.Session})
	require.NoError(t, err)
	assert.Len(t, others, 53, "another session's locks are untouched")
	_, err = p.Acquire(as(db, martin), &Doc{ID: 1}, offlinelock.Write)
	require.ErrorIs(t, err, offlinelock.ErrLocked, "David still reads doc 1")
}

// TestMySQLSessionOpsUseTheSessionIndexAndPrimaryKeys checks the plans:
// the session's rows are found through the session index, and every
// statement that changes or locks rows reaches each by its primary key
// (eq_ref), never by a scan, which would lock the rows it passes.
func TestMySQLSessionOpsUseTheSessionIndexAndPrimaryKeys(t *testing.T) {
	db, p := setupModels(t, mysqlDatabase(), offlinelock.Config{})
	table := lockTableName(t, db, p)
	fill(t, db, table, "others", david.Session, 1000, time.Hour)
	fill(t, db, table, "held", martin.Session, 100, time.Hour)
	_, err := p.Acquire(as(db, martin), &Doc{ID: 1}, offlinelock.Read)
	require.NoError(t, err)
	plans, err := offlinelock.MySQLSessionPlans(p, db, martin.Session)
	require.NoError(t, err)
	index := strings.Trim(table, "`") + "_session"
	require.Len(t, plans["find"], 1)
	assert.Equal(t, offlinelock.MySQLPlanStep{Table: strings.Trim(table, "`"), Type: "ref", Key: index}, plans["find"][0], "find")
	for _, name := range []string{"renew", "free", "drop", "lock"} {
		steps := plans[name]
		require.Len(t, steps, 2, name)
		assert.Equal(t, "k", steps[0].Table, "%s: the key list first", name)
		assert.Equal(t, offlinelock.MySQLPlanStep{Table: "l", Type: "eq_ref", Key: "PRIMARY"}, steps[1], "%s: each row by its primary key", name)
	}
}

// TestMySQLSessionOpsBlockNoOtherSession runs Renew and ReleaseAll of
// 10,000 locks in a transaction left open, and meanwhile another session,
// on another connection, takes locks on records beside them (the same
// resource, ids between theirs, a session named next to theirs): its
// statements must not wait for the open transaction. A short deadline
// tells a wait from a success; the session's own rows stay locked by the
// open transaction throughout.
func TestMySQLSessionOpsBlockNoOtherSession(t *testing.T) {
	db, p := setupModels(t, mysqlDatabase(), offlinelock.Config{})
	table := lockTableName(t, db, p)
	seedAccounts(t, db, 20)
	holder := offlinelock.Owner{Session: "S1", User: "sam"}
	neighbour := offlinelock.Owner{Session: "S1x", User: "nina"}
	fill(t, db, table, "docs", holder.Session, 10_000, time.Hour)
	for _, op := range []struct {
		name string
		run  func(tx *gorm.DB) (int64, error)
	}{
		{"Renew", func(tx *gorm.DB) (int64, error) { return p.Renew(tx, holder.Session) }},
		{"ReleaseAll", func(tx *gorm.DB) (int64, error) { return p.ReleaseAll(tx, holder.Session) }},
	} {
		t.Run(op.name, func(t *testing.T) {
			tx := db.Begin()
			require.NoError(t, tx.Error)
			defer tx.Rollback()
			n, err := op.run(tx)
			require.NoError(t, err)
			require.EqualValues(t, 10_000, n)

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			other := db.WithContext(offlinelock.WithOwner(ctx, neighbour))
			for _, id := range []uint{10_001, 50_000, 99_999, 100_000} {
				_, err := p.Acquire(other, &Doc{ID: id}, offlinelock.Write)
				require.NoError(t, err, "Acquire of doc %d beside the open %s", id, op.name)
			}
			var got []Account
			require.NoError(t, other.Find(&got).Error, "a locking Find beside the open %s", op.name)
			require.Len(t, got, 20)
			_, err = p.ReleaseAll(other, neighbour.Session)
			require.NoError(t, err)

			// The open transaction does hold the session's rows.
			err = db.Transaction(func(check *gorm.DB) error {
				return check.Exec(`SELECT lock_id FROM ` + table + ` WHERE resource = 'docs' AND lock_id = '1' AND holder = '' FOR UPDATE NOWAIT`).Error
			})
			require.Error(t, err, "%s holds the session's rows until it ends", op.name)
		})
	}
}

// TestMySQLSessionWideOpsLockNothingOfOtherSessions is
// TestSessionWideOpsLockNothingOfOtherSessions on MariaDB: Renew and
// ReleaseAll of martin in an open transaction leave every row of David
// free to lock at once (NOWAIT), his reader row on a record both read
// included. Each of David's rows is probed by its primary key, alone:
// a probe that scanned would itself stop at martin's rows.
func TestMySQLSessionWideOpsLockNothingOfOtherSessions(t *testing.T) {
	db, p := setupModels(t, mysqlDatabase(), offlinelock.Config{})
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
	davids := [][2]string{{"1", ""}, {"2", ""}, {"3", ""}, {"20", david.Session}}
	other := mysqlDatabase().open(t)
	for _, op := range []struct {
		name string
		run  func(tx *gorm.DB) error
	}{
		{"Renew", func(tx *gorm.DB) error { _, err := p.Renew(tx, martin.Session); return err }},
		{"ReleaseAll", func(tx *gorm.DB) error { _, err := p.ReleaseAll(tx, martin.Session); return err }},
	} {
		require.NoError(t, db.Transaction(func(tx *gorm.DB) error {
			require.NoError(t, op.run(tx))
			for _, pk := range davids {
				err := other.Transaction(func(probe *gorm.DB) error {
					var n int
					err := probe.Raw(`SELECT 1 FROM `+table+` FORCE INDEX (PRIMARY) WHERE resource = 'docs' AND lock_id = ? AND holder = ? FOR UPDATE NOWAIT`, pk[0], pk[1]).Scan(&n).Error
					if err == nil && n != 1 {
						err = errors.New("row missing")
					}
					return err
				})
				require.NoError(t, err, "%s holds none of David's rows: doc %s, holder %q", op.name, pk[0], pk[1])
			}
			return nil
		}))
	}
}

// TestMySQLDeadlockInCallerTransaction: two callers' transactions that
// load the same two records in opposite orders deadlock on the key rows
// (the plugin cannot order the loads of separate statements). InnoDB rolls
// the victim's transaction back whole; the victim's error says so, without
// a failed ROLLBACK TO SAVEPOINT beside it, and the other transaction
// gets both records.
func TestMySQLDeadlockInCallerTransaction(t *testing.T) {
	db, p := setupModels(t, mysqlDatabase(), offlinelock.Config{})
	seedAccounts(t, db, 2)
	// The model's catalog row is written with its first lock, outside.
	require.NoError(t, as(db, david).Find(&[]Account{}).Error)
	_, err := p.ReleaseAll(db, david.Session)
	require.NoError(t, err)
	a, b := as(db, david).Begin(), as(db, martin).Begin()
	defer a.Rollback()
	defer b.Rollback()
	require.NoError(t, a.First(&Account{}, 1).Error)
	require.NoError(t, b.First(&Account{}, 2).Error)
	aErr := make(chan error, 1)
	go func() { aErr <- a.First(&Account{}, 2).Error }()
	// Until a waits for b's key row (a statement on this test's own lock
	// table waiting for a row lock): then b's load closes the cycle.
	table := lockTableName(t, db, p)
	for {
		select {
		case err := <-aErr:
			t.Fatalf("a's load did not wait: %v", err)
		default:
		}
		var waiting int64
		require.NoError(t, db.Raw("SELECT COUNT(*) FROM information_schema.innodb_trx WHERE trx_state = 'LOCK WAIT' AND INSTR(trx_query, ?) > 0", table).Scan(&waiting).Error)
		if waiting > 0 {
			break
		}
		runtime.Gosched()
	}
	bErr := b.First(&Account{}, 1).Error
	errA := <-aErr
	victim, winner := bErr, errA
	if errA != nil {
		victim, winner = errA, bErr
	}
	require.Error(t, victim)
	assert.NoError(t, winner)
	assert.Contains(t, victim.Error(), "deadlocked with another transaction, which rolled this transaction back whole")
	assert.NotContains(t, victim.Error(), "SAVEPOINT")
}
