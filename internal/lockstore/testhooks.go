package lockstore

import (
	"database/sql"
	"strings"
	"time"
)

// For the plugin's tests and benchmarks only: the statements they send raw
// or EXPLAIN, and a switch between two grant paths.

// GrantStatement is the one statement a PostgreSQL store takes a Write
// lock with, and its arguments for resource, id and session, with a fixed
// token and ttl: what BenchmarkAcquireStatement sends raw. "" when s is
// not PostgreSQL's.
func GrantStatement(s Store, resource, id, session string, ttl time.Duration) (string, []any) {
	pg, ok := s.(*postgresStore)
	if !ok {
		return "", nil
	}
	return pg.grantOne, []any{resource, id, session, "martin", tokenHash("0123456789abcdef0123456789abcdef"), ttl.Microseconds()}
}

// SweepPlan is the EXPLAIN of one batch of a PostgreSQL store's sweep,
// planned under the settings the sweep runs with, in c's transaction.
func SweepPlan(s Store, c Conn) (string, error) {
	pg, ok := s.(*postgresStore)
	if !ok {
		return "", nil
	}
	var plan strings.Builder
	err := withSweepPlan(c, func(c Conn) error {
		_, err := c.Query(`EXPLAIN `+pg.sweepSQL, []any{time.Time{}}, func(r *sql.Rows) error {
			var line string
			err := r.Scan(&line)
			plan.WriteString(line + "\n")
			return err
		})
		return err
	})
	return plan.String(), err
}

// SetSQLiteGrantAll sends SQLite grants of several Write locks through
// grantAll (true, the default) or through the serialised path, and
// returns a function that puts the default back. Not safe while a store
// is in use.
func SetSQLiteGrantAll(on bool) (restore func()) {
	old := sqliteGrantAll
	sqliteGrantAll = on
	return func() { sqliteGrantAll = old }
}
