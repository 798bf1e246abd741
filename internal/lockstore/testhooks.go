package lockstore

import (
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// For the plugin's tests and benchmarks only, as methods in no interface
// of this package: the root's export_test.go reaches them through its own.

// GrantStatement is the one statement a PostgreSQL store takes a Write
// lock with, and its arguments for resource, id and session, with a fixed
// token and ttl: what BenchmarkAcquireStatement sends raw.
func (pg *postgresStore) GrantStatement(resource, id, session string, ttl time.Duration) (string, []any) {
	return pg.grants.Load().one, []any{resource, id, session, "martin", tokenHash("0123456789abcdef0123456789abcdef"), ttl.Microseconds()}
}

// ReleaseStatement is the one statement a store frees session's Write
// lock with (resource, id, session), as Release sends it.
func (t *sqlStore) ReleaseStatement() string { return t.releaseStatement() }

// SweepPlan is the EXPLAIN of one batch of a PostgreSQL store's sweep,
// planned under the settings the sweep runs with, in c's transaction.
func (pg *postgresStore) SweepPlan(c Conn) (string, error) {
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

// SetGrantAll sends a SQLite store's grants of several Write locks
// through grantAll (true, the default) or through the serialised path.
func (st *sqliteStore) SetGrantAll(on bool) {
	st.serialised.Store(!on)
}

// planStep is one line of MariaDB's EXPLAIN: the table it reads, how
// (type) and through which index (key). An unnamed struct, so that a
// test outside this package can name it.
type planStep = struct{ Table, Type, Key string }

// SessionPlans is MariaDB's EXPLAIN of each statement Renew and ReleaseAll
// send for session, by name ("find", "renew", "free", "drop", "lock").
func (s *mysqlStore) SessionPlans(c Conn, session string) (map[string][]planStep, error) {
	if !s.bulk.Load() {
		return nil, fmt.Errorf("not a MariaDB 10.6+ lock store: %T", s)
	}
	rows, now, err := s.sessionPKs(c, session, false)
	if err != nil || len(rows) == 0 {
		return nil, fmt.Errorf("session %q holds no rows: %v", session, err)
	}
	list := pkJSON(rows)[0]
	plans := map[string][]planStep{}
	for name, st := range map[string]struct {
		q    string
		args []any
	}{
		"find":  {s.sessionSQL(false), []any{session}},
		"renew": {s.renewSQL(), []any{list, s.timeArg(now), session, s.timeArg(now)}},
		"free":  {s.freeSQL(), []any{list, session}},
		"drop":  {s.dropSQL(), []any{list, session}},
		"lock":  {s.lockSQL(), []any{list}},
	} {
		if plans[name], err = explain(c, st.q, st.args); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return plans, nil
}

// explain runs EXPLAIN q and keeps its table, type and key columns.
func explain(c Conn, q string, args []any) ([]planStep, error) {
	var steps []planStep
	_, err := c.Query("EXPLAIN "+q, args, func(r *sql.Rows) error {
		cols, err := r.Columns()
		if err != nil {
			return err
		}
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := r.Scan(ptrs...); err != nil {
			return err
		}
		var st planStep
		for i, col := range cols {
			switch col {
			case "table":
				st.Table = vals[i].String
			case "type":
				st.Type = vals[i].String
			case "key":
				st.Key = vals[i].String
			}
		}
		steps = append(steps, st)
		return nil
	})
	return steps, err
}

// CachedStatements is the texts a SQLite store keeps prepared (its
// statement cache).
func (st *sqliteStore) CachedStatements() []string {
	st.stmts.mu.RLock()
	defer st.stmts.mu.RUnlock()
	var texts []string
	for k := range st.stmts.stmts {
		texts = append(texts, k.query)
	}
	return texts
}

// SetGuardRevision makes s install and judge the guard as revision r
// would (GuardRevision is the default): what a test of a rolling upgrade
// runs its second build as.
func (s *postgresStore) SetGuardRevision(r int) { s.revision.Store(int32(r)) }

// SetGuardRevision is postgresStore's, for MySQL/MariaDB.
func (s *mysqlStore) SetGuardRevision(r int) { s.revision.Store(int32(r)) }

// SessionMark is the number a MySQL statement of session carries, keyed
// with key (sessionMark): what a test that forges a write computes.
func (s *mysqlStore) SessionMark(key, session string, fenced bool) uint64 {
	return sessionMark(key, session, fenced)
}

// IdentityPrefix is the SET STATEMENT prefix of a MariaDB write of
// session (mariadbIdentityPrefix): what a test that replays a write
// sends.
func (s *mysqlStore) IdentityPrefix(key, session string, fenced bool) string {
	return mariadbIdentityPrefix(key, session, fenced)
}
