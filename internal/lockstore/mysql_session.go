package lockstore

import (
	"database/sql"
	"slices"
	"strings"
	"time"
)

// Renew and ReleaseAll on MariaDB: a bounded number of statements, none
// locking another session's row. The session's rows are found by a plain
// read of the session index (sessionPKs); every locking statement then
// names whole primary keys (joinPKs), so REPEATABLE READ locks no gaps and
// stale index entries lead nowhere. Key rows sort before reader rows.

// sessionPKs reads session's rows (live ones if live) in primary key order,
// with the clock, by a plain read (a caller's transaction: its snapshot).
func (s *mysqlStore) sessionPKs(c Conn, session string, live bool) ([]row, time.Time, error) {
	var rows []row
	var now time.Time
	_, err := c.Query(s.sessionSQL(live), []any{session}, func(r *sql.Rows) error {
		var rw row
		var clock any
		if err := r.Scan(&rw.Resource, &rw.ID, &rw.holder, &rw.Access, &clock); err != nil {
			return err
		}
		rows = append(rows, rw)
		var err error
		now, err = scanTime(clock)
		return err
	})
	return rows, now, err
}

// sessionSQL is sessionPKs' statement; its ? is the session.
func (s *mysqlStore) sessionSQL(live bool) string {
	q := `SELECT resource, lock_id, holder, access, ` + mysqlClock + ` FROM ` + s.table + ` FORCE INDEX (` + s.index("session") + `) WHERE session = ?`
	if live {
		q += ` AND expires_at > ` + mysqlClock
	}
	return q + ` ORDER BY resource, lock_id, holder`
}

// The statements by whole primary keys; the first ? of each is the JSON
// array of the keys (joinPKs).

// freeSQL frees the session's (?) Write key rows.
func (s *mysqlStore) freeSQL() string {
	return `UPDATE ` + s.joinPKs() + ` SET ` + mysqlFree + ` WHERE l.session = ? AND l.access = 'write'`
}

// dropSQL deletes the session's (?) reader rows.
func (s *mysqlStore) dropSQL() string {
	return `DELETE l FROM ` + s.joinPKs() + ` WHERE l.session = ?`
}

// renewSQL extends to ? read-mode key rows and session's rows live at ?.
func (s *mysqlStore) renewSQL() string {
	return `UPDATE ` + s.joinPKs() + ` SET l.expires_at = GREATEST(l.expires_at, ?)
WHERE (l.holder = '' AND l.access = 'read') OR (l.session = ? AND l.expires_at > ?)`
}

// lockSQL takes rows with a locking read.
func (s *mysqlStore) lockSQL() string {
	return `SELECT 1 FROM ` + s.joinPKs() + ` FOR UPDATE`
}

// releaseAllBulk frees the session's Write key rows and deletes its reader
// rows by whole primary keys: two statements, four when it reads.
func (s *mysqlStore) releaseAllBulk(c Conn, session string) (int64, error) {
	var n int64
	err := s.inOwnTx(c, func(c Conn) error {
		n = 0
		rows, _, err := s.sessionPKs(c, session, false)
		if err != nil || len(rows) == 0 {
			return err
		}
		writes, readers := splitHolders(rows)
		if len(readers) > 0 {
			if err := s.lockPKs(c, keyRowsOf(rows)); err != nil {
				return err
			}
		}
		freed, err := s.execPKs(c, s.freeSQL(), writes, session)
		if err != nil {
			return err
		}
		deleted, err := s.execPKs(c, s.dropSQL(), readers, session)
		n = freed + deleted
		return err
	})
	return n, err
}

// renewBulk extends the session's live rows and its read records' key rows
// in one UPDATE after the read that finds them.
func (s *mysqlStore) renewBulk(c Conn, session string, ttl time.Duration) (int64, error) {
	var n int64
	err := s.inOwnTx(c, func(c Conn) error {
		rows, now, err := s.sessionPKs(c, session, true)
		n = int64(len(rows))
		if err != nil || len(rows) == 0 {
			return err
		}
		_, readers := splitHolders(rows)
		pks := sortRows(append(slices.Clone(rows), keyRowsOf(readers)...))
		_, err = s.execPKs(c, s.renewSQL(), pks, s.timeArg(now.Add(ttl)), session, s.timeArg(now))
		return err
	})
	return n, err
}

// lockPKs takes the rows of pks (sorted) with a locking read, in order.
func (s *mysqlStore) lockPKs(c Conn, pks []row) error {
	for _, list := range pkJSON(pks) {
		_, err := c.Query(s.lockSQL(), []any{list}, func(*sql.Rows) error { return nil })
		if err != nil {
			return err
		}
	}
	return nil
}

// execPKs runs q (? = pks' JSON array, then args) and counts changed rows.
func (s *mysqlStore) execPKs(c Conn, q string, pks []row, args ...any) (int64, error) {
	var n int64
	for _, list := range pkJSON(pks) {
		m, err := c.Exec(q, append([]any{list}, args...)...)
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// splitHolders splits rows into key rows and reader rows, in order.
func splitHolders(rows []row) (keyRows, readers []row) {
	for _, r := range rows {
		if r.holder == "" {
			keyRows = append(keyRows, r)
		} else {
			readers = append(readers, r)
		}
	}
	return keyRows, readers
}

// sortRows orders rows by primary key, bytewise, dropping duplicates.
func sortRows(rows []row) []row {
	pk := func(r row) [3]string { return [3]string{r.Resource, r.ID, r.holder} }
	slices.SortFunc(rows, func(a, b row) int {
		pa, pb := pk(a), pk(b)
		for i := range pa {
			if c := strings.Compare(pa[i], pb[i]); c != 0 {
				return c
			}
		}
		return 0
	})
	return slices.CompactFunc(rows, func(a, b row) bool { return pk(a) == pk(b) })
}
