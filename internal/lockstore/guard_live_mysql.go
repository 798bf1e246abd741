package lockstore

import (
	"database/sql"
	"hash/crc32"
	"strconv"
	"strings"

	"gorm.io/gorm"
)

// Live buckets (not Galera; docs/guard.md, Live buckets): each order-table
// bucket row carries live, a time no lock of its records outlives, so an
// ordinary client's write of a quiet bucket stops after one read. The lock
// table's triggers raise it, under the bucket's exclusive lock, which
// orders a grant after every write that read it.

// liveUnknown is a bucket's live until settleLive has counted its locks.
const liveUnknown = "'9999-12-31 23:59:59.999999'"

// liveNone is the live of a bucket none of whose records was locked
// since it was last quieted (quietLive): the writer needs no clock.
const liveNone = "'1000-01-01'"

// liveSlack is how far past a lock's expiry its bucket is raised.
const liveSlack = "INTERVAL 10 MINUTE"

// liveColumn is the order table's live column.
const liveColumn = "live DATETIME(6) NOT NULL DEFAULT " + liveUnknown

// liveClock is the trigger's clock for live: the server's wall clock in
// UTC (mysqlGuardClockDecl), an hour early, NULL where the session's zone
// does not convert (the write then takes the whole path).
const liveClock = "CONVERT_TZ(SYSDATE(6), @@session.time_zone, '+00:00') - INTERVAL 1 HOUR"

// selectLimitDefault is sql_select_limit as no client changed it: neither
// the plugin's keyed blank nor a proof (fence_mysql.go).
const selectLimitDefault = "18446744073709551615"

// A live bucket is the resource's 22 bits above 10 bits of the key alone:
// an integer column's own low bits (no conditional, which cost a seventh
// of a row's read), else the text's last 10 digits, else its CRC32.
const liveInteger = "'^-?(0|[1-9][0-9]{0,19})$'"

// liveBucket is the live bucket of record (res, key), both SQL; where res
// is a literal of ASCII text its half is a number (the same CRC32 as
// MariaDB's on its bytes).
func liveBucket(res, key string) string {
	low := "IF(" + key + " REGEXP " + liveInteger + ", IF(LEFT(" + key + ", 1) = '-', (1024 - CAST(RIGHT(SUBSTRING(" + key + ", 2), 10) AS UNSIGNED) % 1024) % 1024, " +
		"CAST(RIGHT(" + key + ", 10) AS UNSIGNED) % 1024), CRC32(" + key + ") & 1023)"
	if col, ok := integerKey(key); ok {
		low = col + " & 1023"
	}
	return bucketOf(res, low)
}

// bucketOf is the bucket of resource res (SQL) whose low 10 bits are low.
func bucketOf(res, low string) string {
	hi := "((CRC32(" + res + ") & 4194303) << 10)"
	if lit, ok := asciiLiteral(res); ok {
		hi = strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(lit))&4194303)<<10, 10)
	}
	return "(" + hi + " | (" + low + "))"
}

// liveBucketV2 is liveBucket as guard revision 2 computed it (unsigned
// integers of at most 19 digits): grants raise both during an upgrade.
func liveBucketV2(res, key string) string {
	return bucketOf(res, "IF("+key+" REGEXP '^(0|[1-9][0-9]{0,18})$', CAST("+key+" AS UNSIGNED), CRC32("+key+")) & "+strconv.Itoa(mysqlOrderBuckets-1))
}

// integerKey is the column an integer key spells (Spell's KindInt: CAST(col
// AS CHAR)); other types are parenthesised and do not match.
func integerKey(key string) (string, bool) {
	col, cast := strings.CutPrefix(key, "CAST(")
	col, char := strings.CutSuffix(col, " AS CHAR)")
	if !cast || !char || strings.ContainsAny(col, " ()") {
		return "", false
	}
	return col, strings.HasPrefix(col, "NEW.`") || strings.HasPrefix(col, "OLD.`")
}

// integerType: colType (information_schema's COLUMN_TYPE) is an integer's.
func integerType(colType string) bool {
	t := strings.ToLower(colType)
	return strings.Contains(t, "int") && !strings.Contains(t, "point")
}

// asciiLiteral is the text of res when it is a SQL literal of ASCII text.
func asciiLiteral(res string) (string, bool) {
	if len(res) < 2 || res[0] != '\'' || res[len(res)-1] != '\'' {
		return "", false
	}
	text := strings.ReplaceAll(res[1:len(res)-1], "''", "'")
	for i := 0; i < len(text); i++ {
		if text[i] >= 0x80 || text[i] == '\\' {
			return "", false
		}
	}
	return text, true
}

// liveRead reads what of the live bucket of record (res, key) LOCK IN
// SHARE MODE through the seal, as orderedProbe reads its bucket: a
// missing row, or a NULL key, reads as NULL.
func (s *mysqlStore) liveRead(what, res, key string) string {
	return "(SELECT " + what + " FROM " + s.orderTable() + " IGNORE INDEX (" + sealPlaceholder + ") WHERE b = " + liveBucket(res, key) + mysqlShare + ")"
}

// quietBucket: the record's bucket had no lock since it was quieted.
func (s *mysqlStore) quietBucket(res, key string) string {
	return s.liveRead("live = "+liveNone, res, key)
}

// pastLive: the record has no key, or its bucket's locks have all expired.
func (s *mysqlStore) pastLive(res, key string) string {
	return "(" + key + " IS NULL OR " + s.liveRead("live <= "+liveClock, res, key) + ")"
}

// raiseLive is the lock table's triggers' statements that raise NEW's
// buckets (both revisions') where its expiry passes live or live is
// unknown. Whether to raise is a consistent read: nothing lowers a value
// it finds at or past the expiry. The raise waits 2 s at most. Needs liveDecl.
func (s *mysqlStore) raiseLive() string {
	b, v2 := liveBucket("NEW.resource", "NEW.lock_id"), liveBucketV2("NEW.resource", "NEW.lock_id")
	return "IF NEW.access <> '' OR NEW.holder <> '' THEN SET offlinelock_live = NULL, offlinelock_top = NULL; " +
		"SELECT MIN(live), MAX(live) INTO offlinelock_live, offlinelock_top FROM " + s.orderTable() + " IGNORE INDEX (" + sealPlaceholder + ") WHERE b IN (" + b + ", " + v2 + "); " +
		"IF offlinelock_live IS NULL OR offlinelock_live < NEW.expires_at OR offlinelock_top = " + liveUnknown + " THEN " +
		mysqlGrantWaitPrefix + "UPDATE " + s.orderTable() + " SET live = GREATEST(live, NEW.expires_at + " + liveSlack + ") WHERE b IN (" + b + ", " + v2 + "); " +
		"END IF; END IF; "
}

// liveDecl declares raiseLive's variables.
const liveDecl = "DECLARE offlinelock_live, offlinelock_top DATETIME(6); "

// settleLive sets the unknown buckets' live from the locks, under their
// rows' FOR UPDATE (writes and grants under way end first); after a
// revision-2 guard it raises this revision's buckets first (upgradeLive).
func (s *mysqlStore) settleLive(c Conn) error {
	if err := s.upgradeLive(c); err != nil {
		return err
	}
	settle := "UPDATE " + s.orderTable() + " o LEFT JOIN (" + s.liveLocks(true) + ") l ON l.b = o.b" +
		" SET o.live = COALESCE(l.m + " + liveSlack + ", " + liveNone + ") WHERE o.live = " + liveUnknown
	if c.plan != nil {
		_, err := c.Exec(settle)
		return err
	}
	var unknown int64
	if _, err := c.Query("SELECT COUNT(*) FROM "+s.orderTable()+" WHERE live = "+liveUnknown, nil, func(r *sql.Rows) error { return r.Scan(&unknown) }); err != nil || unknown == 0 {
		return err
	}
	return c.db.Transaction(func(tx *gorm.DB) error {
		cc := NewConn(tx, c.ctx).on(c.obs)
		locked := func(*sql.Rows) error { return nil }
		if _, err := cc.Query("SELECT b FROM "+s.orderTable()+" WHERE live = "+liveUnknown+" FOR UPDATE", nil, locked); err != nil {
			return err
		}
		_, err := cc.Exec(settle)
		return err
	}, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
}

// liveLocks is a query of the latest expiry (m) of the locks of each
// bucket (b) unexpired or expired within liveSlack (expiredWrite needs
// their writes to run the procedure): in both revisions' buckets (both),
// or, where a lock's two differ, in this revision's alone.
func (s *mysqlStore) liveLocks(both bool) string {
	b, v2 := liveBucket("resource", "lock_id"), liveBucketV2("resource", "lock_id")
	locks := " FROM " + s.table + " WHERE expires_at + " + liveSlack + " > " + mysqlClock + " AND (access <> '' OR holder <> '')"
	if !both {
		return "SELECT " + b + " AS b, MAX(expires_at) AS m" + locks + " AND " + b + " <> " + v2 + " GROUP BY 1"
	}
	return "SELECT b, MAX(m) AS m FROM (SELECT " + b + " AS b, expires_at AS m" + locks +
		" UNION ALL SELECT " + v2 + ", expires_at" + locks + ") offlinelock_l GROUP BY b"
}

// upgradeLive raises this revision's bucket of each lock whose two buckets
// differ, once, over an older guard (whose grants raised revision 2's only).
func (s *mysqlStore) upgradeLive(c Conn) error {
	if c.plan == nil {
		if n, err := s.installedRevision(c); err != nil || n >= liveMappingRevision {
			return err
		}
	}
	_, err := c.Exec("UPDATE " + s.orderTable() + " o JOIN (" + s.liveLocks(false) + ") l ON l.b = o.b SET o.live = GREATEST(o.live, l.m + " + liveSlack + ")")
	return err
}

// liveMappingRevision is the guard revision whose live buckets are
// liveBucket's.
const liveMappingRevision = 3

// quietLive sets the buckets whose locks have all expired back to liveNone
// at READ COMMITTED (locking only the rows it changes); without privilege
// (1142) or guard (1146) it does nothing.
func (s *mysqlStore) quietLive(c Conn) error {
	if _, inTx := c.db.Statement.ConnPool.(gorm.TxCommitter); inTx || s.galera.Load() {
		return nil // a caller's transaction: its own isolation; the next sweep
	}
	err := c.db.Session(&gorm.Session{NewDB: true, Context: c.ctx}).Transaction(func(tx *gorm.DB) error {
		_, err := NewConn(tx, c.ctx).on(c.obs).Exec("UPDATE " + s.orderTable() + " SET live = " + liveNone +
			" WHERE live > " + liveNone + " AND live <= " + mysqlClock)
		return err
	}, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if code := mysqlCode(err); code == 1142 || code == 1146 {
		return nil
	}
	return err
}

// liveGate is a trigger's two tests that let it skip the checks: quiet (one
// read, no clock) and past (a second read, and the clock). Only for ordinary
// clients: fenced writes must not lock the bucket.
type liveGate struct{ quiet, past []string }

// add gates record (res, key) of the row; also, where not "", must hold
// (the key unchanged).
func (g *liveGate) add(s *mysqlStore, res, key, also string) {
	and := ""
	if also != "" {
		and = " AND " + also
	}
	g.quiet = append(g.quiet, s.quietBucket(res, key)+and)
	g.past = append(g.past, s.pastLive(res, key)+and)
}

// wrap runs checks unless the gate lets the row through.
func (g liveGate) wrap(checks string) string {
	test := func(conds []string) string {
		return "IF (@@session.sql_select_limit = " + selectLimitDefault + " AND " + strings.Join(conds, " AND ") + ") IS NOT TRUE THEN "
	}
	return "BEGIN DECLARE EXIT HANDLER FOR 1176 SIGNAL SQLSTATE '" + guardSQLState + "' SET MESSAGE_TEXT = '" + hiddenByTemporary + "'; " +
		test(g.quiet) + test(g.past) + checks + " END IF; END IF; END;"
}

// sameKey says the record's key (of NEW and OLD) is unchanged: by its
// column where it is an integer's, which reads no text.
func sameKey(newKey, oldKey string) string {
	n, ok1 := integerKey(newKey)
	o, ok2 := integerKey(oldKey)
	if ok1 && ok2 {
		return n + " <=> " + o
	}
	return newKey + " <=> " + oldKey
}

// hiddenByTemporary is the refusal of a write under a session's TEMPORARY
// table of the lock table's (or the order table's) name.
const hiddenByTemporary = "offlinelock: the lock table is hidden by a temporary table"
