package lockstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"
)

// mysqlStore is the lock table on MySQL 8.0 and MariaDB (InnoDB): sqlStore's
// decisions with InnoDB's SQL. Why each difference (locking reads, READ
// COMMITTED, VARBINARY keys, UTC DATETIME(6), AUTO_INCREMENT generations,
// key rows that stay) is in docs/lock-table.md.
type mysqlStore struct {
	*sqlStore
	depth sync.Map // transaction pool → *atomic.Int32: the plugin's savepoints open in it
	rc    sync.Map // transaction pools the store began READ COMMITTED

	mariadb      atomic.Bool                // the server is MariaDB, which takes SET STATEMENT
	galera       atomic.Bool                // the server is a Galera node (galera.go)
	keysOK       sync.Map                   // tables whose key columns checkKeyColumns passed
	fenceFn      atomic.Bool                // the guard's fence function is installed (fence_mysql.go)
	fenceCallSQL string                     // its call, with the record and the session as arguments
	blank        atomic.Pointer[keyedBlank] // the fenced blank of the guard's key last signed with (signWrite)

	// stmts keeps fixed statements prepared: go-sql-driver without
	// interpolateParams would prepare and close each around every run.
	stmts *stmtCache

	// bulk: MariaDB 10.6+ (JSON_TABLE, INSERT … RETURNING), not Galera: grants
	// of many keys, Renew and ReleaseAll take a bounded number of statements.
	bulk                             atomic.Bool
	grantSQL, grantOneSQL, createSQL string      // mysqlGrantSQL (bulkTakes, oneTakes), mysqlCreateSQL
	keyGenSQL, grantKeySQL           string      // GrantKey's statements
	keyRows                          keyRowHints // keys whose key rows grantBulk need not create
}

var _ Store = (*mysqlStore)(nil)

const (
	mysqlClock = "UTC_TIMESTAMP(6)"           // UTC whatever the session's time_zone
	mysqlTime  = "2006-01-02 15:04:05.000000" // times sent as UTC text, which the driver's loc does not shift
	// mysqlPK: a scan of another index would lock, or wait for, other records' rows.
	mysqlPK = " FORCE INDEX (PRIMARY)"
)

// orKeys is the condition that (resource, lock_id) is one of list (a
// keyList) as ORed equalities: InnoDB reads those by primary key in DELETE
// and UPDATE too, where it may not for a row constructor IN.
func orKeys(list string) string {
	n := strings.Count(list, "(")
	return "(" + strings.TrimSuffix(strings.Repeat("(resource = ? AND lock_id = ?) OR ", n), " OR ") + ")"
}

// orPKs is orKeys for n whole primary keys (pkArgs).
func orPKs(n int) string {
	return "(" + strings.TrimSuffix(strings.Repeat("(resource = ? AND lock_id = ? AND holder = ?) OR ", n), " OR ") + ")"
}

// mysqlShare is the locking read both MySQL 8.0 and MariaDB accept
// (MariaDB 10.11 has no FOR SHARE).
const mysqlShare = " LOCK IN SHARE MODE"

// NewMySQL is the lock table named name on MySQL and MariaDB, its
// generation counter and catalog beside it; obs is told of every statement
// (nil: nothing is).
func NewMySQL(name string, obs Observer) Store {
	q := func(s string) string { return "`" + s + "`" }
	s := &mysqlStore{sqlStore: &sqlStore{obs: obs, table: q(name), seq: q(name + "_generation"), catalog: q(name + "_tables"),
		clock: mysqlClock, bind: func(q string) string { return q }, fenceRead: mysqlShare,
		timeArg: func(t time.Time) any { return t.UTC().Format(mysqlTime) }}}
	s.nextGens = s.nextGenerations
	s.revision.Store(GuardRevision)
	s.fenceCallSQL = s.Quote(s.fenceName()) + "(?, ?, ?, ?) = 1"
	s.keysIn = orKeys
	s.fromHint = mysqlPK
	s.deleteFrom = "DELETE " + s.table + " FROM " + s.table + mysqlPK // the multi-table form takes an index hint
	s.readersRead = func(c Conn) string {
		if _, ok := s.rc.Load(c.db.Statement.ConnPool); ok {
			return "" // the latest committed rows; the key rows are held
		}
		return mysqlShare
	}
	s.putConflict = `ON DUPLICATE KEY UPDATE access = VALUES(access), session = VALUES(session),
	user_name = VALUES(user_name), token = VALUES(token), generation = VALUES(generation),
	acquired_at = VALUES(acquired_at), expires_at = VALUES(expires_at)`
	s.putConflictNow = func() string {
		if s.galera.Load() {
			return galeraPutConflict
		}
		return s.putConflict
	}
	s.rememberSQL = `INSERT INTO ` + s.catalog + ` (name, spec) VALUES (?, ?) ON DUPLICATE KEY UPDATE spec = VALUES(spec)`
	s.lockRows = s.lockKeyRows
	s.freeWrite = s.releaseWriteLock
	s.freeKey = s.freeKeyRow
	s.readersIfRead = true
	s.tx = s.inOwnTx
	s.grantSQL, s.grantOneSQL, s.createSQL = s.mysqlGrantSQL(bulkTakes, mysqlGrantReturning), s.mysqlGrantSQL(oneTakes, mysqlGrantReturning), s.mysqlCreateSQL()
	s.keyGenSQL = `INSERT INTO ` + s.seq + ` () VALUES () RETURNING n`
	s.grantKeySQL = mysqlGrantWaitPrefix + `INSERT INTO ` + s.table + ` (` + lockColumns + `) VALUES ` + mysqlGrantRow + s.mysqlGrantSQL(oneTakes, "token")
	s.stmts = newStmtCache()
	return s
}

func (s *mysqlStore) RowLocks() bool { return true }

// Migrate creates the tables (VARBINARY keys: docs/lock-table.md) and
// upgrades older ones.
func (s *mysqlStore) Migrate(c Conn) error {
	c = s.observed(c)
	if err := s.checkServer(c); err != nil {
		return err
	}
	// CREATE TABLE IF NOT EXISTS needs CREATE even when the table is there:
	// look first, for a role that may only write the tables.
	var have int
	if _, err := c.Query(`SELECT count(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (?, ?, ?)`,
		[]any{strings.Trim(s.catalog, "`"), s.lockName(), strings.Trim(s.seq, "`")}, func(r *sql.Rows) error { return r.Scan(&have) }); err != nil {
		return err
	}
	for _, stmt := range []string{
		`CREATE TABLE IF NOT EXISTS ` + s.catalog + ` (name VARBINARY(512) PRIMARY KEY, spec LONGTEXT NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
		`CREATE TABLE IF NOT EXISTS ` + s.table + ` (
	resource    VARBINARY(512)  NOT NULL,
	lock_id     VARBINARY(1020) NOT NULL,
	holder      VARBINARY(1020) NOT NULL,
	access      VARCHAR(5)      CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	session     VARBINARY(1020) NOT NULL,
	user_name   VARCHAR(255)    CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
	token       VARBINARY(64)   NOT NULL,
	generation  BIGINT          NOT NULL,
	acquired_at DATETIME(6)     NOT NULL,
	expires_at  DATETIME(6)     NOT NULL,
	reason      VARCHAR(300)    CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
	PRIMARY KEY (resource, lock_id, holder),
	KEY ` + s.index("session") + ` (session),
	KEY ` + s.index("expires") + ` (expires_at),
	KEY ` + s.index("token") + ` (token)) ENGINE=InnoDB`,
		`CREATE TABLE IF NOT EXISTS ` + s.seq + ` (n BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY) ENGINE=InnoDB`,
	} {
		if have == 3 {
			break
		}
		if _, err := c.Exec(stmt); err != nil {
			return fmt.Errorf("offlinelock: creating lock table %s: %w%s", s.table, err, OwnerHint(err))
		}
	}
	if err := s.detectServer(c); err != nil {
		return err
	}
	if c.plan != nil && have < 3 {
		return nil // made by the plan, with its reason column, no token to hash
	}
	if err := s.checkTimes(c); err != nil {
		return err
	}
	err := reasonColumn(c, func() (bool, error) {
		n, err := queryStrings(c, `SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = 'reason'`, s.lockName())
		return len(n) > 0, err
	}, `ALTER TABLE `+s.table+` ADD COLUMN reason VARCHAR(300) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT ''`)
	if err != nil && mysqlCode(err) != 1060 { // 1060: another node added it meanwhile
		return fmt.Errorf("offlinelock: adding the reason column to lock table %s: %w", s.table, err)
	}
	return s.hashTokens(c)
}

// detectServer learns what server c is: MariaDB or MySQL, its version,
// Galera, and so whether grants may take the bulk path.
func (s *mysqlStore) detectServer(c Conn) error {
	var version string
	if _, err := c.Query(`SELECT VERSION()`, nil, func(r *sql.Rows) error { return r.Scan(&version) }); err != nil {
		return err
	}
	s.mariadb.Store(strings.Contains(strings.ToLower(version), "mariadb"))
	s.wallClock.Store(s.mariadb.Load()) // MySQL has no SET STATEMENT (docs/guard.md)
	if err := s.detectGalera(c); err != nil {
		return err
	}
	// Not on Galera: upserts without a locking read first let two sessions
	// hold one record there (TestMySQLGalera).
	s.bulk.Store(s.mariadb.Load() && mysqlVersionAtLeast(version, 10, 6) && !s.galera.Load())
	return nil
}

// hashTokens hashes the clear tokens of an older version's table,
// idempotently (docs/lock-table.md); a lock-free read first spares the scan.
func (s *mysqlStore) hashTokens(c Conn) error {
	legacy := `LENGTH(token) = ` + strconv.Itoa(tokenLen)
	found := false
	_, err := c.Query(`SELECT 1 FROM `+s.table+` WHERE `+legacy+` LIMIT 1`, nil, func(*sql.Rows) error { found = true; return nil })
	if err == nil && found {
		err = s.inOwnTx(c, func(c Conn) error {
			_, err := c.Exec(`UPDATE ` + s.table + ` SET token = SHA2(token, 256) WHERE ` + legacy)
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("offlinelock: hashing the tokens of lock table %s: %w", s.table, err)
	}
	return nil
}

func (s *mysqlStore) index(suffix string) string {
	return "`" + strings.Trim(s.table, "`") + "_" + suffix + "`"
}

// checkTimes refuses a connection whose DATETIME values do not read back
// as the UTC times they are (parseTime=true, loc=UTC).
func (s *mysqlStore) checkTimes(c Conn) error {
	var v any
	var text string
	_, err := c.Query(`SELECT `+mysqlClock+`, DATE_FORMAT(`+mysqlClock+`, '%Y-%m-%d %H:%i:%s.%f')`, nil,
		func(r *sql.Rows) error { return r.Scan(&v, &text) })
	if err != nil {
		return err
	}
	at, ok := v.(time.Time)
	want, perr := time.ParseInLocation(mysqlTime, text, time.UTC)
	if !ok || perr != nil || !at.Equal(want) {
		return fmt.Errorf("%w: the MySQL DSN must have parseTime=true and loc=UTC (the default), so that lock expiries read back as they are", ErrInvalid)
	}
	return nil
}

// nextGenerations takes n fresh generations from one AUTO_INCREMENT value
// g: g*batchSize … g*batchSize+n-1 (docs/lock-table.md).
func (s *mysqlStore) nextGenerations(c Conn, n int) ([]int64, error) {
	if n == 0 {
		return nil, nil
	}
	if n > batchSize {
		return nil, fmt.Errorf("offlinelock: %d generations asked for at once, at most %d", n, batchSize)
	}
	begin := time.Now()
	q := `INSERT INTO ` + s.seq + ` () VALUES ()`
	res, err := c.db.Statement.ConnPool.ExecContext(c.ctx, q)
	var g int64
	if err == nil {
		g, err = res.LastInsertId()
	}
	c.trace(begin, q, nil, 1, err)
	if err != nil {
		return nil, err
	}
	if g <= 0 {
		return nil, errGenerationCounter
	}
	if _, err := c.Exec(`DELETE FROM `+s.seq+` WHERE n = ?`, g); err != nil {
		return nil, err
	}
	gens := make([]int64, n)
	for i := range gens {
		gens[i] = g*batchSize + int64(i)
	}
	return gens, nil
}

// lockKeyRows takes the key rows of keys (sorted) exclusively by a locking
// read of whole primary keys, creating missing ones outside the transaction
// first: a rolled-back key row would hand gap locks on (docs/lock-table.md).
func (s *mysqlStore) lockKeyRows(c Conn, keys []Key) (map[Key]row, time.Time, error) {
	missing, err := s.missingKeyRows(c, keys)
	if err == nil && len(missing) > 0 {
		err = s.createKeyRows(c, missing)
	}
	if err != nil {
		return nil, time.Time{}, err
	}
	got, now, err := s.selectKeyRows(c, keys)
	if err != nil || len(got) == len(keys) {
		return got, now, err
	}
	// Swept since, or not created outside: created here, as a last resort.
	missing = missing[:0]
	for _, k := range keys {
		if _, ok := got[k]; !ok {
			missing = append(missing, k)
		}
	}
	q, args := s.insertFree(missing)
	if c.grant && s.mariadb.Load() {
		q = mysqlGrantWaitPrefix + q // its trigger takes the order bucket (selectKeyRows)
	}
	if _, err := c.Exec(q, args...); err != nil {
		return nil, time.Time{}, err
	}
	more, later, err := s.selectKeyRows(c, missing)
	maps.Copy(got, more)
	return got, later, err
}

// insertFree is the INSERT IGNORE of free key rows for keys.
func (s *mysqlStore) insertFree(keys []Key) (string, []any) {
	var b strings.Builder
	args := make([]any, 0, 2*len(keys))
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(`(?, ?, '', '', '', '', '', 0, ` + mysqlClock + `, ` + mysqlFreeUntil + `)`)
		args = append(args, k.Resource, k.ID)
	}
	return `INSERT IGNORE INTO ` + s.table + ` (` + lockColumns + `) VALUES ` + b.String(), args
}

// missingKeyRows are the keys without a key row, by a plain read: a
// snapshot is enough to know what to create.
func (s *mysqlStore) missingKeyRows(c Conn, keys []Key) ([]Key, error) {
	pks := pkRows(keys, "")
	got, err := queryKeys(c, `SELECT resource, lock_id FROM `+s.table+mysqlPK+` WHERE `+orPKs(len(pks)), pkArgs(pks))
	found := make(map[Key]bool, len(got))
	for _, k := range got {
		found[k] = true
	}
	return slices.DeleteFunc(slices.Clone(keys), func(k Key) bool { return found[k] }), err
}

// mysqlCreateWait bounds createKeyRows; past it lockKeyRows creates the rows.
const mysqlCreateWait = time.Second

// createKeyRows inserts free key rows for keys on a connection of its own,
// committed at once; a failure leaves the creation to lockKeyRows.
func (s *mysqlStore) createKeyRows(c Conn, keys []Key) error {
	pool := c.db.Config.ConnPool
	if _, inTx := pool.(gorm.TxCommitter); inTx || pool == nil {
		return nil
	}
	q, args := s.insertFree(keys)
	if s.mariadb.Load() {
		q = fmt.Sprintf("SET STATEMENT innodb_lock_wait_timeout = %d FOR ", int(mysqlCreateWait/time.Second)) + q
	}
	ctx, cancel := context.WithTimeout(c.ctx, mysqlCreateWait)
	defer cancel()
	begin := time.Now()
	res, err := pool.ExecContext(ctx, q, args...)
	var n int64
	if err == nil {
		n, _ = res.RowsAffected()
	}
	c.trace(begin, q, args, n, err)
	if err != nil && c.ctx.Err() != nil {
		return c.ctx.Err() // the caller gave up, not the pool
	}
	return nil
}

// selectKeyRows reads the existing key rows of keys with a locking read by
// whole primary keys, in key order.
func (s *mysqlStore) selectKeyRows(c Conn, keys []Key) (map[Key]row, time.Time, error) {
	pks := pkRows(keys, "")
	q := `SELECT ` + lockColumns + `, ` + mysqlClock + ` FROM ` + s.table + mysqlPK + ` WHERE ` + orPKs(len(pks)) + ` ORDER BY resource, lock_id FOR UPDATE`
	if c.grant && s.mariadb.Load() {
		q = mysqlGrantWaitPrefix + q // bounded wait for open writes (grantWaited)
	}
	return queryKeyRows(c, q, pkArgs(pks))
}

// Key rows stay free for a day after their last use (docs/lock-table.md),
// keeping their last generation for grantBulk's check.
const (
	mysqlFreeUntil = "DATE_ADD(" + mysqlClock + ", INTERVAL 1 DAY)"
	mysqlFree      = "access = '', session = '', user_name = '', token = '', expires_at = " + mysqlFreeUntil
)

// releaseWriteLock frees session's Write lock on k: first if it is still
// valid, then if it is not, each an atomic statement (no RETURNING).
func (s *mysqlStore) releaseWriteLock(c Conn, k Key, session string) (found, valid bool, err error) {
	q := `UPDATE ` + s.table + mysqlPK + ` SET ` + mysqlFree + ` WHERE resource = ? AND lock_id = ? AND holder = '' AND access = 'write' AND session = ?`
	n, err := c.Exec(q+` AND expires_at > `+mysqlClock, k.Resource, k.ID, session)
	if err != nil || n > 0 {
		return n > 0, n > 0, err
	}
	n, err = c.Exec(q, k.Resource, k.ID, session)
	return n > 0, false, err
}

// freeKeyRow ends every lock on k: its reader rows go, its key row stays
// free with the largest generation of its locks. The readers' generations
// come from the DELETE's RETURNING: reading them in the UPDATE
// share-locked the next record and deadlocked
// (TestNoLostUpdateManyProcesses/mysql). MySQL 8.0 needs none (no grantBulk).
func (s *mysqlStore) freeKeyRow(c Conn, k Key) (int64, error) {
	q := ` WHERE resource = ? AND lock_id = ? AND holder <> ''`
	var gen, n int64
	var err error
	if s.mariadb.Load() {
		// The single-table form (no index hint) has RETURNING; the key prefix
		// reads by primary key anyway.
		n, err = c.Query(`DELETE FROM `+s.table+q+` RETURNING generation`, []any{k.Resource, k.ID}, func(r *sql.Rows) error {
			var g int64
			err := r.Scan(&g)
			gen = max(gen, g)
			return err
		})
	} else {
		n, err = c.Exec(s.deleting()+q, k.Resource, k.ID)
	}
	if err != nil {
		return n, err
	}
	m, err := c.Exec(`UPDATE `+s.table+mysqlPK+` SET `+mysqlFree+`, generation = GREATEST(generation, ?)
WHERE resource = ? AND lock_id = ? AND holder = '' AND access <> ''`, gen, k.Resource, k.ID)
	return n + m, err
}

// DropGrant frees the Write lock on k if its token is still token.
func (s *mysqlStore) DropGrant(c Conn, k Key, token string) error {
	c = s.observed(c)
	_, err := c.Exec(`UPDATE `+s.table+mysqlPK+` SET `+mysqlFree+` WHERE resource = ? AND lock_id = ? AND holder = '' AND token = ?`,
		k.Resource, k.ID, tokenHash(token))
	return err
}

// Drop ends session's locks on keys: its Write key rows are freed and its
// reader rows deleted, each by whole primary keys.
func (s *mysqlStore) Drop(c Conn, keys []Key, session string) error {
	c = s.observed(c)
	for _, batch := range chunks(sortKeys(keys)) {
		keyRows, readers := pkRows(batch, ""), pkRows(batch, session)
		_, err := c.Exec(`UPDATE `+s.table+mysqlPK+` SET `+mysqlFree+` WHERE `+orPKs(len(keyRows))+` AND session = ?`,
			append(pkArgs(keyRows), session)...)
		if err == nil {
			_, err = c.Exec(s.deleting()+` WHERE `+orPKs(len(readers)), pkArgs(readers)...)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// readCommitted is how the plugin's own transactions begin.
var readCommitted = &sql.TxOptions{Isolation: sql.LevelReadCommitted}

// beginOwn begins a READ COMMITTED transaction and remembers it until
// done: in it a plain read of reader rows is the latest committed one.
func (s *mysqlStore) BeginOwn(db *gorm.DB) (*gorm.DB, func()) {
	tx := db.Begin(readCommitted)
	if tx.Error != nil {
		return tx, func() {}
	}
	pool := tx.Statement.ConnPool
	s.rc.Store(pool, true)
	return tx, func() { s.rc.Delete(pool) }
}

// mysqlRetries bounds the retries of the store's own deadlock victims.
const mysqlRetries = 20

// inOwnTx runs fn in c's transaction, or in a READ COMMITTED one of its
// own, retried as a deadlock victim; in the caller's transaction a deadlock
// rolled the caller's work back too, so it is reported, not retried.
func (s *mysqlStore) inOwnTx(c Conn, fn func(Conn) error) error {
	if _, ok := c.db.Statement.ConnPool.(gorm.TxCommitter); ok {
		return mysqlError(fn(c))
	}
	var err error
	for i := range mysqlRetries {
		if err = s.txLost(s.ownTx(c, fn)); !TxRolledBack(err) {
			break
		}
		// A short random pause keeps the two from meeting again in step.
		time.Sleep(time.Duration(1+mrand.IntN(1<<min(i, 5))) * time.Millisecond)
	}
	return mysqlError(err)
}

func (s *mysqlStore) ownTx(c Conn, fn func(Conn) error) (err error) {
	tx, done := s.BeginOwn(c.db.Session(&gorm.Session{NewDB: true, Context: c.ctx}))
	if tx.Error != nil {
		return tx.Error
	}
	defer done()
	committed := false
	defer func() {
		if !committed {
			tx.Rollback()
		}
	}()
	if err = fn(Conn{db: tx, ctx: c.ctx, obs: c.obs, plan: c.plan, wallClock: c.wallClock}); err != nil {
		return err
	}
	committed = true
	return tx.Commit().Error
}

// errMySQLWait marks an error mysqlError has explained already.
var errMySQLWait = errors.New("offlinelock: lock-table wait")

// mysqlError reports a deadlock or a lock-wait timeout in words a caller
// can act on.
func mysqlError(err error) error {
	if errors.Is(err, errMySQLWait) {
		return err
	}
	switch mysqlCode(err) {
	case 1213:
		return fmt.Errorf("%w: the lock table deadlocked with another transaction, which rolled this transaction back whole; retry it: %w", errMySQLWait, err)
	case 1205:
		return fmt.Errorf("%w: waited innodb_lock_wait_timeout for a lock-table row another transaction holds; retry, and keep transactions that hold locks short: %w", errMySQLWait, err)
	}
	return err
}

// Grant takes Write locks in a bounded number of statements on MariaDB
// (grantBulk, grantOne); everything else, and what those refuse, takes the
// serialised path, which decides each key with its key row held.
func (s *mysqlStore) Grant(c Conn, keys []Key, o Owner, access Access, ttl time.Duration) (map[Key]Granted, error) {
	c.obs, c.wallClock = s.obs, s.wallClock.Load() // s.observed(c), without a call on the short path
	_, inTx := c.db.Statement.ConnPool.(gorm.TxCommitter)
	if len(keys) > 1 { // one key is in order, and alone, already
		keys = sortKeys(keys)
	}
	if access == Write && s.bulk.Load() && (len(keys) > 1 || !inTx) {
		grant := s.grantBulk
		if len(keys) == 1 {
			grant = s.grantOne
		}
		got, err := grant(c, keys, o, ttl)
		if err != nil { // allOrNothing(got, grantWaited(err))
			return nil, grantWaited(err)
		}
		return got, nil
	}
	c.grant = true
	got, err := s.decide(c, keys, o, access, ttl)
	err = s.txLost(err)
	if err == nil && !inTx {
		err = s.Confirm(c, keys, o, access) // Galera reads its grants back
	}
	return allOrNothing(got, grantWaited(err))
}

// grantWaited is mysqlError, told as ErrBeingWritten where the grant timed
// out on, or deadlocked with, an open write (guard_probe_mysql.go).
func grantWaited(err error) error {
	if err == nil {
		return nil
	}
	if code := mysqlCode(err); code == 1205 || code == 1213 {
		return fmt.Errorf("%w: %w", ErrBeingWritten, mysqlError(err))
	}
	return mysqlError(err)
}

func (s *mysqlStore) Check(c Conn, keys []Key, o Owner, fence bool) (mine, free []Key, err error) {
	c = s.observed(c)
	mine, free, err = s.sqlStore.Check(c, keys, o, fence)
	return mine, free, mysqlError(err)
}

// keysLimit reads the distinct records that rows matching cond (with args)
// touch, in key order, with a LIMIT clause after the ORDER BY: a plain
// read, for the locking read that follows.
func (s *mysqlStore) keysLimit(c Conn, cond, limit string, args ...any) ([]Key, error) {
	return queryKeys(c, `SELECT DISTINCT resource, lock_id FROM `+s.table+` WHERE `+cond+` ORDER BY resource, lock_id`+limit, args)
}

// queryKeys runs q, which selects resource and lock_id.
func queryKeys(c Conn, q string, args []any) ([]Key, error) {
	var keys []Key
	_, err := c.Query(q, args, func(r *sql.Rows) error {
		var k Key
		err := r.Scan(&k.Resource, &k.ID)
		keys = append(keys, k)
		return err
	})
	return keys, err
}

// lockKeysOf takes the existing key rows of keys exclusively, in key
// order, as every statement that changes several records' locks does;
// with skip, those another transaction holds are skipped (and not
// returned).
func (s *mysqlStore) lockKeysOf(c Conn, keys []Key, skip bool) ([]Key, error) {
	var out []Key
	for _, batch := range chunks(sortKeys(keys)) {
		list, args := keyList(batch)
		q := `SELECT resource, lock_id FROM ` + s.table + mysqlPK + ` WHERE holder = '' AND ` + s.inKeys(list) + ` ORDER BY resource, lock_id FOR UPDATE`
		if skip {
			q += ` SKIP LOCKED`
		}
		got, err := queryKeys(c, q, args)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

// ReleaseAll takes the key rows of the session's records, then deletes its
// rows by whole primary key: a condition on session would walk the session
// index's stale entries to other sessions' rows, out of key order.
func (s *mysqlStore) ReleaseAll(c Conn, session string) (int64, error) {
	c = s.observed(c)
	if s.bulk.Load() {
		return s.releaseAllBulk(c, session)
	}
	var n int64
	err := s.inOwnTx(c, func(c Conn) error {
		rows, err := s.sessionRows(c, session, time.Time{})
		for _, batch := range rowChunks(rows) {
			var keyRows, readers []row
			for _, r := range batch {
				if r.holder == "" {
					keyRows = append(keyRows, r) // its Write key rows: freed, kept
				} else {
					readers = append(readers, r)
				}
			}
			for _, part := range []struct {
				rows []row
				head string
			}{
				{keyRows, `UPDATE ` + s.table + mysqlPK + ` SET ` + mysqlFree},
				{readers, s.deleting()},
			} {
				if err != nil || len(part.rows) == 0 {
					continue
				}
				var m int64
				m, err = c.Exec(part.head+` WHERE `+orPKs(len(part.rows)), pkArgs(part.rows)...)
				n += m
			}
		}
		return err
	})
	return n, err
}

// sessionRows takes, in key order, the key rows of the records session
// has rows on (live at after, if after is set), and returns its rows: its
// Write key rows and its reader rows, read by primary key.
func (s *mysqlStore) sessionRows(c Conn, session string, after time.Time) ([]row, error) {
	cond, args := `session = ?`, []any{session}
	if !after.IsZero() {
		cond, args = cond+` AND expires_at > ?`, append(args, s.timeArg(after))
	}
	keys, err := s.keysLimit(c, cond, s.readersRead(c), args...)
	if err != nil {
		return nil, err
	}
	var out []row
	for _, batch := range chunks(keys) {
		list, args := keyList(batch)
		krs, _, err := queryKeyRows(c, `SELECT `+lockColumns+`, `+mysqlClock+` FROM `+s.table+mysqlPK+` WHERE holder = '' AND `+s.inKeys(list)+
			` ORDER BY resource, lock_id FOR UPDATE`, args)
		if err != nil {
			return nil, err
		}
		for _, k := range batch {
			if kr, ok := krs[k]; ok && kr.Access == Write && kr.Owner.Session == session {
				out = append(out, kr)
			}
		}
		readers, err := s.readerRows(c, batch, session)
		if err != nil {
			return nil, err
		}
		out = append(out, readers...)
	}
	if !after.IsZero() {
		out = slices.DeleteFunc(out, func(r row) bool { return !r.live(after) })
	}
	return out, nil
}

// readerRows reads session's reader rows on keys by primary key.
func (s *mysqlStore) readerRows(c Conn, keys []Key, session string) ([]row, error) {
	pks := pkRows(keys, session)
	var out []row
	_, err := c.Query(`SELECT `+lockColumns+` FROM `+s.table+mysqlPK+` WHERE `+orPKs(len(pks))+` ORDER BY resource, lock_id`+s.readersRead(c),
		pkArgs(pks), func(r *sql.Rows) error {
			rw, err := scanRow(r)
			out = append(out, rw)
			return err
		})
	return out, err
}

func rowChunks(rows []row) [][]row {
	var out [][]row
	for len(rows) > batchSize {
		out, rows = append(out, rows[:batchSize]), rows[batchSize:]
	}
	if len(rows) > 0 {
		out = append(out, rows)
	}
	return out
}

// pkRows are the primary keys of holder's rows on keys.
func pkRows(keys []Key, holder string) []row {
	rows := make([]row, len(keys))
	for i, k := range keys {
		rows[i] = row{Lock: Lock{Resource: k.Resource, ID: k.ID}, holder: holder}
	}
	return rows
}

// pkArgs are the arguments of orPKs for rows.
func pkArgs(rows []row) []any {
	args := make([]any, 0, 3*len(rows))
	for _, r := range rows {
		args = append(args, r.Resource, r.ID, r.holder)
	}
	return args
}

// Renew takes the key rows of the session's live records, then pushes its
// rows and the read-mode key rows of the records it reads, by primary key.
func (s *mysqlStore) Renew(c Conn, session string, ttl time.Duration) (int64, error) {
	c = s.observed(c)
	if s.bulk.Load() {
		return s.renewBulk(c, session, ttl)
	}
	var n int64
	err := s.inOwnTx(c, func(c Conn) error {
		now, err := s.clockAt(c)
		if err != nil {
			return err
		}
		rows, err := s.sessionRows(c, session, now)
		until := s.timeArg(now.Add(ttl))
		for _, batch := range rowChunks(rows) {
			if err != nil {
				break
			}
			// The read-mode key rows of the records the session reads.
			pks := slices.Clone(batch)
			for _, r := range batch {
				if r.holder != "" {
					pks = append(pks, row{Lock: Lock{Resource: r.Resource, ID: r.ID}})
				}
			}
			_, err = c.Exec(`UPDATE `+s.table+mysqlPK+` SET expires_at = GREATEST(expires_at, ?) WHERE `+orPKs(len(pks)),
				append([]any{until}, pkArgs(pks)...)...)
		}
		n = int64(len(rows))
		return err
	})
	return n, err
}

// Sweep deletes expired rows of records whose key rows no other
// transaction holds (SKIP LOCKED), and the bulk grants' counter rows.
func (s *mysqlStore) Sweep(c Conn, _ *SweepCursor) (int64, bool, error) {
	c = s.observed(c)
	var n int64
	more := false
	err := s.inOwnTx(c, func(c Conn) error {
		keys, err := s.keysLimit(c, `expires_at <= `+mysqlClock, fmt.Sprintf(` LIMIT %d`, sweepBatch))
		more = len(keys) >= sweepBatch
		if err == nil {
			keys, err = s.lockKeysOf(c, keys, true)
		}
		for _, batch := range chunks(keys) {
			if err != nil {
				break
			}
			list, args := keyList(batch)
			var m int64
			m, err = c.Exec(s.deleting()+` WHERE expires_at <= `+mysqlClock+` AND `+s.inKeys(list), args...)
			n += m
		}
		if err == nil && s.bulk.Load() {
			err = s.purgeGenerations(c)
		}
		return err
	})
	if err == nil && !more {
		err = s.quietLive(c)
	}
	return n, more, err
}

// SavepointIn names the plugin's savepoints by depth (offlinelock_1, …):
// MySQL replaces a savepoint with a nested one of the same name.
func (s *mysqlStore) SavepointIn(pool gorm.ConnPool) (string, func()) {
	v, _ := s.depth.LoadOrStore(pool, new(atomic.Int32))
	d := v.(*atomic.Int32)
	n := d.Add(1)
	return SavepointName + "_" + strconv.Itoa(int(n)), func() {
		if d.Add(-1) == 0 {
			s.depth.CompareAndDelete(pool, d)
		}
	}
}

// CheckKeyColumns refuses a text key column whose collation folds
// spellings into one row (docs/mysql.md); binary, non-padding collations
// pass, padding ones for char(n). A table not created yet passes.
func (s *mysqlStore) CheckKeyColumns(c Conn, m KeyColumns) error {
	c = s.observed(c)
	if _, ok := s.keysOK.Load(m.Table); ok || !slices.ContainsFunc(m.Kinds, KeyKind.textual) {
		return nil
	}
	coll, err := s.collations(c, m.Table)
	if err != nil || len(coll) == 0 {
		return err
	}
	for i, col := range m.Columns {
		cn, ok := coll[strings.ToLower(col)]
		if !ok || cn == nil || !m.Kinds[i].textual() {
			continue
		}
		name := strings.ToLower(*cn)
		binary := strings.HasSuffix(name, "_bin") || name == "binary"
		noPad := strings.Contains(name, "nopad") || strings.Contains(name, "_0900_")
		if binary && (noPad || m.Kinds[i] == KindChar) {
			continue
		}
		return fmt.Errorf("%w: key column %s.%s has collation %s, which takes spellings the lock table keeps apart (letter case, accents, trailing spaces) as one row; "+
			"declare it with a binary collation that does not pad, e.g. gorm:\"type:varchar(64) COLLATE utf8mb4_nopad_bin\" (MariaDB) or utf8mb4_0900_bin (MySQL 8.0), or as VARBINARY",
			ErrInvalid, m.Table, col, *cn)
	}
	s.keysOK.Store(m.Table, true)
	return nil
}

// collations are the collations of table's columns by lower-cased name,
// nil for a column without one (binary and numeric types).
func (s *mysqlStore) collations(c Conn, table string) (map[string]*string, error) {
	coll := map[string]*string{}
	_, err := c.Query(`SELECT COLUMN_NAME, COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?`,
		[]any{table}, func(r *sql.Rows) error {
			var name string
			var cn sql.NullString
			err := r.Scan(&name, &cn)
			coll[strings.ToLower(name)] = nil
			if cn.Valid {
				coll[strings.ToLower(name)] = &cn.String
			}
			return err
		})
	return coll, err
}
