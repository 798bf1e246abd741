package offlinelock

import (
	"database/sql"
	"fmt"

	"gorm.io/gorm"
)

// MySQLPlanStep is one line of MariaDB's EXPLAIN: the table it reads, how
// (type) and through which index (key).
type MySQLPlanStep struct{ Table, Type, Key string }

// MySQLSessionPlans is the EXPLAIN, on MariaDB, of each statement Renew
// and ReleaseAll send for session, by name: "find" reads the session's
// rows; "renew", "free", "drop" and "lock" change or lock them by primary
// key (here, the rows the session holds now).
func MySQLSessionPlans(p *Plugin, db *gorm.DB, session string) (map[string][]MySQLPlanStep, error) {
	t, err := p.storeFor(db)
	if err != nil {
		return nil, err
	}
	s, ok := t.(*mysqlStore)
	if !ok || !s.bulk.Load() {
		return nil, fmt.Errorf("not a MariaDB 10.6+ lock store: %T", t)
	}
	c := direct(db)
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
func explain(c conn, q string, args []any) ([]MySQLPlanStep, error) {
	var steps []MySQLPlanStep
	_, err := c.query("EXPLAIN "+q, args, func(r *sql.Rows) error {
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
