package lockstore

import (
	"database/sql"
	"fmt"
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
	return pg.grants.Load().one, []any{resource, id, session, "martin", tokenHash("0123456789abcdef0123456789abcdef"), ttl.Microseconds()}
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

// SetSQLiteGrantAll sends a SQLite store's grants of several Write locks
// through grantAll (true, the default) or through the serialised path. It
// does nothing to another store.
func SetSQLiteGrantAll(s Store, on bool) {
	if st, ok := s.(*sqliteStore); ok {
		st.serialised.Store(!on)
	}
}

// MySQLPlanStep is one line of MariaDB's EXPLAIN: the table it reads, how
// (type) and through which index (key).
type MySQLPlanStep struct{ Table, Type, Key string }

// MySQLSessionPlans is the EXPLAIN, on MariaDB, of each statement Renew
// and ReleaseAll send for session, by name: "find" reads the session's
// rows; "renew", "free", "drop" and "lock" change or lock them by primary
// key (here, the rows the session holds now).
func MySQLSessionPlans(st Store, c Conn, session string) (map[string][]MySQLPlanStep, error) {
	s, ok := st.(*mysqlStore)
	if !ok || !s.bulk.Load() {
		return nil, fmt.Errorf("not a MariaDB 10.6+ lock store: %T", st)
	}
	rows, now, err := s.sessionPKs(c, session, false)
	if err != nil || len(rows) == 0 {
		return nil, fmt.Errorf("session %q holds no rows: %v", session, err)
	}
	list := pkJSON(rows)[0]
	plans := map[string][]MySQLPlanStep{}
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
func explain(c Conn, q string, args []any) ([]MySQLPlanStep, error) {
	var steps []MySQLPlanStep
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
		var st MySQLPlanStep
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

// SQLiteCachedStatements is the texts a SQLite store keeps prepared (its
// statement cache), nil for any other store.
func SQLiteCachedStatements(s Store) []string {
	st, ok := s.(*sqliteStore)
	if !ok {
		return nil
	}
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
func SetGuardRevision(s Store, r int) {
	switch st := s.(type) {
	case *postgresStore:
		st.revision.Store(int32(r))
	case *mysqlStore:
		st.revision.Store(int32(r))
	}
}
