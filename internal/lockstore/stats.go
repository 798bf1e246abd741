package lockstore

import (
	"database/sql"
	"fmt"
)

// Stats reads Stats in six statements.
func (t *sqlStore) Stats(c Conn, groups int) (Stats, error) {
	c = t.observed(c)
	var s Stats
	live := ` FROM ` + t.table + ` WHERE ` + isLockRow + ` AND expires_at > ` + t.clock
	err := t.count(c, `SELECT COUNT(*)`+live, &s.Live)
	if err == nil {
		s.ByResource, err = t.countBy(c, "resource", live, groups)
	}
	if err == nil {
		s.ByUser, err = t.countBy(c, "user_name", live, groups)
	}
	if err == nil {
		s.Oldest, err = t.oldest(c, live)
	}
	if err == nil {
		err = t.count(c, `SELECT COUNT(*) FROM `+t.table+` WHERE expires_at <= `+t.clock, &s.ExpiredRows)
	}
	if err == nil {
		err = t.count(c, `SELECT COUNT(*) FROM `+t.table+` WHERE `+isLockRow+` AND expires_at <= `+t.clock, &s.ExpiredLocks)
	}
	if err != nil {
		return Stats{}, fmt.Errorf("offlinelock: reading lock-table stats: %w", err)
	}
	return s, nil
}

func (t *sqlStore) count(c Conn, q string, n *int64) error {
	_, err := c.Query(t.bind(q), nil, func(r *sql.Rows) error { return r.Scan(n) })
	return err
}

// countBy counts the live locks (from: FROM … WHERE) per col, most first, at
// most limit groups.
func (t *sqlStore) countBy(c Conn, col, from string, limit int) ([]Count, error) {
	q := fmt.Sprintf(`SELECT %[1]s, COUNT(*) AS n%[2]s GROUP BY %[1]s ORDER BY n DESC, %[1]s LIMIT %[3]d`, col, from, limit)
	out := []Count{}
	_, err := c.Query(t.bind(q), nil, func(r *sql.Rows) error {
		var g Count
		err := r.Scan(&g.Name, &g.Locks)
		out = append(out, g)
		return err
	})
	return out, err
}

// oldest is the live lock (from, a FROM … WHERE) acquired first, or nil.
func (t *sqlStore) oldest(c Conn, from string) (*Lock, error) {
	var l *Lock
	q := `SELECT ` + lockColumns + from + ` ORDER BY acquired_at, resource, lock_id, holder LIMIT 1`
	_, err := c.Query(t.bind(q), nil, func(r *sql.Rows) error {
		rw, err := scanRow(r)
		rw.Token = ""
		l = &rw.Lock
		return err
	})
	return l, err
}
